"""Each hook into Textual's internals (cleo_tui/ui/textual_compat.py) still takes effect, and no other
module of cleo_tui touches a private Textual name.

Every test here fails when Textual renames what a hook relies on, or stops acting on it: they check
the effect (a frame held back, a screen not restyled, a decoder that replaces), not only a name.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Footer, Static

from cleo_tui.ui import textual_compat as compat

PACKAGE = Path(__file__).resolve().parent.parent / "cleo_tui"
COMPAT = PACKAGE / "ui" / "textual_compat.py"


class Plain(Screen[None]):
    BINDINGS: ClassVar[list[Binding]] = [Binding("x", "hidden_thing", "Hidden", id="compat.hidden"),
                                         Binding("v", "shown", "Shown")]

    def compose(self) -> ComposeResult:
        yield Static("one line", id="text")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "hidden_thing"

    def action_mark(self) -> None:
        self.app.marked.append(self)  # type: ignore[attr-defined]


class Held(compat.FrameHoldingScreen):
    def compose(self) -> ComposeResult:
        yield Static("one line", id="text")


class Tiny(App[None]):
    def __init__(self, screen: type[Screen[None]] = Plain) -> None:
        super().__init__()
        self.first = screen
        self.marked: list[object] = []

    def on_mount(self) -> None:
        self.push_screen(self.first())

    def action_mark(self) -> None:
        self.marked.append(self)


async def test_updates_held_follows_textuals_batch_update():
    app = Tiny()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert not compat.updates_held(app)
        with app.batch_update():
            assert compat.updates_held(app)
            with app.batch_update():
                assert compat.updates_held(app)
            assert compat.updates_held(app)
        assert not compat.updates_held(app)


async def test_a_frame_holding_screen_draws_nothing_while_frames_are_held_then_draws():
    app = Tiny(Held)
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Held) and not screen.frame_held
        with app.batch_update():
            await pilot.resize_terminal(60, 20)  # a new layout, whose frame Textual holds back
            await pilot.pause()
            assert screen.frame_held  # Textual called the hook for the frame, and it was held back
        screen.refresh()
        await pilot.pause()
        assert not screen.frame_held  # the next frame went out


class Sized(Screen[None]):
    """Counts the Resize events it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.resizes: list[Size] = []

    def on_resize(self, event: events.Resize) -> None:
        self.resizes.append(event.size)


class Resizing(App[None]):
    def on_mount(self) -> None:
        self.push_screen(Sized())


class ResizingOnlyOnChange(compat.ResizeOnlyOnChange, Resizing):
    pass


async def _resizes_after_a_same_size_then_a_new_size(app: Resizing) -> tuple[list[Size], list[Size]]:
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Sized)
        screen.resizes.clear()
        app.post_message(events.Resize(Size(40, 12), Size(40, 12)))  # as the driver's at start
        await pilot.pause()
        await pilot.pause()
        same = list(screen.resizes)
        await pilot.resize_terminal(50, 14)
        await pilot.pause()
        return same, list(screen.resizes)


async def test_textual_sends_the_screen_a_resize_of_the_size_it_has():
    same, _ = await _resizes_after_a_same_size_then_a_new_size(Resizing())
    assert same == [Size(40, 12)]  # what ResizeOnlyOnChange is for: if Textual stops, it can go


async def test_resize_only_on_change_lays_out_only_for_a_new_size():
    same, after = await _resizes_after_a_same_size_then_a_new_size(ResizingOnlyOnChange())
    assert same == []
    assert after and set(after) == {Size(50, 14)}  # a new size is laid out as ever


async def test_every_mode_screen_lists_the_screens_of_modes_not_shown():
    class Modes(App[None]):
        MODES: ClassVar[dict[str, type[Screen[None]]]] = {"a": Plain, "b": Held}

    app = Modes()
    async with app.run_test() as pilot:
        await app.switch_mode("a")
        first = app.screen
        await app.switch_mode("b")
        await pilot.pause()
        assert first not in app.screen_stack
        assert first in compat.every_mode_screen(app) and app.screen in compat.every_mode_screen(app)


async def test_action_target_is_the_node_textual_runs_the_action_on():
    app = Tiny()
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        for action, default in (("mark", screen), ("mark", app), ("app.mark", screen), ("screen.mark", app)):
            app.marked.clear()
            await app.run_action(action, default)
            target, name = compat.action_target(app, action, default, None)
            assert (name, app.marked) == ("mark", [target])
        app.marked.clear()
        await app.run_action("here.mark", app, {"here": screen})
        assert app.marked == [screen] and compat.action_target(app, "here.mark", app, {"here": screen}) == (
            screen, "mark")
        assert compat.action_target(app, "nowhere.mark", app, None) == (None, "mark")


async def test_bindings_for_key_are_the_nodes_own_hidden_ones_included():
    app = Tiny()
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        assert "x" not in screen.active_bindings  # check_action said False: not among the active ones
        assert [b.action for b in compat.bindings_for_key(screen, "x")] == ["hidden_thing"]
        assert [b.action for b in compat.bindings_for_key(screen, "v")] == ["shown"]
        assert compat.bindings_for_key(screen, "q") == [] and compat.bindings_for_key(app, "x") == []


async def test_a_resume_marked_to_keep_styles_does_not_restyle_the_screen():
    restyled: list[bool] = []

    class Counting(Plain):
        def update_node_styles(self, animate: bool = True) -> None:
            restyled.append(True)
            super().update_node_styles(animate)

    app = Tiny(Counting)
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        restyled.clear()
        kept = events.ScreenResume()
        compat.keep_styles_on_resume(kept)
        screen.post_message(kept)
        await pilot.pause()
        assert restyled == []
        screen.post_message(events.ScreenResume())
        await pilot.pause()
        assert restyled  # the same event unmarked restyles: the mark is what kept it


async def test_no_second_layout_is_asked_for_each_new_size_and_still_grows():
    seen: list[bool] = []

    class Part(Static, compat.NoSecondLayout):
        def _size_updated(self, size, virtual_size, container_size, layout=True):  # records Textual's call
            seen.append(layout)
            return super()._size_updated(size, virtual_size, container_size, layout)

    class Parts(Screen[None]):
        def compose(self) -> ComposeResult:
            yield Part("one", id="part")

    app = Tiny(Parts)
    async with app.run_test() as pilot:
        await pilot.pause()
        part = app.screen.query_one("#part", Part)
        seen.clear()
        part.update("one\ntwo\nthree")
        await pilot.pause()
        await pilot.pause()
        assert seen and part.size.height == 3  # Textual still goes through the hook, and the height follows


async def test_scroll_bars_a_layout_changes_are_drawn_in_that_layouts_frame():
    from textual.containers import VerticalScroll
    from textual.scrollbar import ScrollBar

    class Pane(VerticalScroll, compat.NoSecondLayout):  # as the detail is (Textual's first: its CSS type)
        pass

    class Part(Static, compat.NoSecondLayout):
        pass

    class Panes(Screen[None]):
        bars_asked = 0  # frames that repaint scroll bars asked for apart from the layout (Textual: a frame more)

        def compose(self) -> ComposeResult:
            with Pane(id="pane"):
                yield Part("one", id="part")

        def _compositor_refresh(self) -> None:
            self.bars_asked += any(isinstance(widget, ScrollBar) for widget in self._dirty_widgets)
            super()._compositor_refresh()

    app = Tiny(Panes)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        screen, part = app.screen, app.screen.query_one("#part", Static)
        pane = screen.query_one("#pane", Pane)
        screen.bars_asked = 0
        for lines in (40, 80, 20):  # the bar appears, its thumb grows, then shrinks
            part.update("\n".join(map(str, range(lines))))
            for _ in range(4):
                await pilot.pause()
            assert pane.show_vertical_scrollbar and pane.vertical_scrollbar.window_virtual_size == lines
        # The layout's frame drew the bars. (Counting every frame was not reproducible: a loaded
        # machine may draw the new text and the new layout in two frames.)
        assert screen.bars_asked == 0


def test_the_lenient_decoder_replaces_invalid_input_in_the_linux_driver(monkeypatch):
    from textual.drivers import linux_driver

    monkeypatch.setattr(linux_driver, "getincrementaldecoder", linux_driver.getincrementaldecoder)  # restored after
    compat.decode_input_leniently()
    assert linux_driver.getincrementaldecoder("utf-8")().decode(b"a\xe9b") == "a\ufffdb"
    # The driver's input loop looks the factory up in its module when it starts: the patch takes effect.
    assert "getincrementaldecoder" in linux_driver.LinuxDriver.run_input_thread.__code__.co_names


# -- the rule: Textual's private names in textual_compat.py only --------------------------------------

def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def textual_private_names() -> frozenset[str]:
    """Private names of Textual's loaded classes: their methods and attributes, and every attribute
    their methods name (`self._batch_count = 0` in `App.__init__`), read from the compiled code."""
    importlib.import_module("cleo_tui.ui.app")  # every Textual module cleo_tui uses, loaded
    names: set[str] = set()
    for module in [m for name, m in sys.modules.items() if name.split(".")[0] == "textual"]:
        for cls in (c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == module.__name__):
            for name, value in vars(cls).items():
                names.add(name)
                function = getattr(value, "fget", None) or getattr(value, "__func__", None) or value
                code = getattr(function, "__code__", None)
                if code is not None:
                    names.update(code.co_names)
    return frozenset(n for n in names if _private(n)) - NAMEDTUPLE_API


NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})  # public, underscored


def sources() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text("utf-8"))) for p in sorted(PACKAGE.rglob("*.py")) if p != COMPAT]


def own_private_names(trees: list[tuple[Path, ast.Module]]) -> frozenset[str]:
    """Private names cleo_tui itself defines (its own attributes and helpers, whatever Textual calls its own)."""
    names: set[str] = set()
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return frozenset(n for n in names if _private(n))


def private_imports(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                   else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for module in modules:
            parts = module.split(".")
            if parts[0] == "textual" and any(_private(p) for p in parts):
                found.append(f"import {module} (line {node.lineno})")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("textual"):
            found += [f"import {a.name} from {node.module} (line {node.lineno})"
                      for a in node.names if _private(a.name)]
    return found


def private_overrides(trees: list[tuple[Path, ast.Module]]) -> list[str]:
    """Methods or attributes of cleo_tui classes that override a private name of a Textual base class."""
    found = []
    for path, tree in trees:
        if path.name == "__main__.py" or not any(isinstance(n, ast.ClassDef) for n in tree.body):
            continue
        module = importlib.import_module(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
                                         .removesuffix(".__init__"))
        for node in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            cls = getattr(module, node.name, None)
            if not inspect.isclass(cls):
                continue
            bases = [b for b in cls.__mro__[1:] if b.__module__.split(".")[0] == "textual"]
            defined = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            defined |= {t.id for n in node.body if isinstance(n, ast.Assign | ast.AnnAssign)
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
            found += [f"{module.__name__}.{cls.__name__}.{name}" for name in sorted(defined)
                      if _private(name) and any(hasattr(b, name) for b in bases)]
    return found


def test_private_textual_names_appear_in_textual_compat_only():
    trees = sources()
    textual_names = textual_private_names() - own_private_names(trees)
    found = []
    for path, tree in trees:
        where = path.relative_to(PACKAGE.parent)
        found += [f"{where}: {text}" for text in private_imports(tree)]
        found += [f"{where}:{n.lineno}: .{n.attr}" for n in ast.walk(tree)
                  if isinstance(n, ast.Attribute) and n.attr in textual_names]
    found += private_overrides(trees)
    assert found == [], "use cleo_tui/ui/textual_compat.py (and test the hook there):\n" + "\n".join(found)


def test_the_rule_catches_each_way_of_reaching_into_textual():
    """The checks above see a private import, a private attribute and a private override."""
    tree = ast.parse("from textual.widgets._footer import FooterKey\nfrom textual.app import _private\n")
    assert len(private_imports(tree)) == 2
    assert {"_batch_count", "_screen_stacks", "_compositor_refresh", "_bindings"} <= textual_private_names()
    assert compat.__name__ == "cleo_tui.ui.textual_compat" and "FrameHoldingScreen._compositor_refresh" in {
        f"{c.__name__}.{n}" for c in (compat.FrameHoldingScreen,) for n in vars(c) if _private(n)}
