"""Regenerate screenshots/*.svg and *.png from a fresh demo brain.

    python screenshots/generate.py [NAME ...]

Each scene drives the real app with Pilot at 120×36 and saves an SVG; the PNG is
rendered from it with local monospace fonts (no web font is fetched).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from cleo_tui.brain import open_brain  # noqa: E402
from cleo_tui.demo import generate_demo  # noqa: E402
from cleo_tui.ui.app import CleoApp  # noqa: E402
from screenshots.svg_to_png import svg_to_png  # noqa: E402

SIZE = (120, 36)


async def settle(app, pilot) -> None:
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def observations(app, pilot) -> None:
    table = app.screen.query_one("#obs-table")
    table.focus()
    await pilot.press("down", "down", "down")


async def prune(app, pilot) -> None:
    """The Prune pane at a budget whose target is met: some rows drop, in drop order."""
    await pilot.press("2")
    await settle(app, pilot)
    screen = app.screen
    pool = screen.pool
    protected = pool.tokens_after_dropping(len(pool.droppable))
    budget = round((protected + (pool.tokens_before - protected) * 0.6) / 0.8, -3)
    await pilot.press("b")
    screen.query_one("#prune-budget").value = f"{int(budget) // 1000}k"
    await pilot.press("enter")


def _reflector_answer(request):
    """A scripted Anthropic answer naming three observations of the prompt (no network is used)."""
    import json
    import re

    import httpx2
    prompt = json.loads(request.read())["messages"][0]["content"]
    ids = re.findall(r"^\[([^\]]+)\]", prompt, flags=re.MULTILINE)
    answer = {
        "patterns": [{"pattern": "Profile a slow page before caching anything", "context": "invoice totals"},
                     {"pattern": "Keep fixtures per test module", "context": "shared fixtures slow suites"}],
        "learnings": [{"insight": "Totals were computed twice: once per view, once for the PDF", "confidence": 0.9}],
        "superseded": [{"id": ids[0], "reason": "restated by the later profiling note"},
                       {"id": ids[1], "reason": "a routine step the pattern now covers"}, ids[2]],
    }
    return httpx2.Response(200, json={
        "id": "msg_demo", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": json.dumps(answer)}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 2873, "output_tokens": 236}})


async def review(app, pilot) -> None:
    """A pending reflector proposal (made by the real reflector over a scripted answer) under review."""
    import httpx2

    from cleo_tui.llm.reflector import propose_reflection
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-screenshot-not-a-key")
    propose_reflection(app.session.brain, http_client=httpx2.Client(transport=httpx2.MockTransport(_reflector_answer)))
    await pilot.press("3")
    await settle(app, pilot)
    app.screen.item_table.focus()
    await pilot.press("end", "up", "up", "space")


async def traces(app, pilot) -> None:
    """The Traces pane with a trace recalled with explain and credited by an outcome opened."""
    await pilot.press("4")
    await settle(app, pilot)
    table = app.screen.query_one("#trace-table")
    rows = [table.listing.cached_row(i)["trace"] for i in range(table.total)]
    table.cursor = next((i for i, t in enumerate(rows) if t.explain_mode and t.positive), 0)
    await settle(app, pilot)
    await pilot.press("enter")


async def duplicates(app, pilot) -> None:
    """The Duplicates pane on the planted group with a protected "User:" member, a rewording beside it."""
    await pilot.press("5")
    await settle(app, pilot)
    screen = app.screen
    table = screen.table("clusters")
    table.cursor = next((i for i, c in enumerate(screen.clusters)
                         if c.member(c.keep).content.startswith("User:")), 0)
    await settle(app, pilot)
    members = screen.table("members")
    members.focus()
    members.cursor = min(1, members.total - 1)


async def history(app, pilot) -> None:
    """The History pane: live tokens and evictions by cause per day above the newest days."""
    await pilot.press("6")
    await settle(app, pilot)


SCENES = {"observations": observations, "prune": prune, "review": review, "traces": traces,
          "duplicates": duplicates, "history": history}


async def shoot(name: str, brain_path: Path) -> None:
    brain = open_brain(brain_path)
    app = CleoApp(brain=brain)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await SCENES[name](app, pilot)
        await settle(app, pilot)
        svg = HERE / f"{name}.svg"
        app.save_screenshot(str(svg))
    brain.close()
    svg_to_png(svg, HERE / f"{name}.png")
    print(f"wrote screenshots/{name}.svg and .png")


def main(names: list[str]) -> None:
    os.environ.setdefault("CLEO_TUI_NOW", "2026-06-01T09:00:00+00:00")  # the demo's "now": liveness reads the same
    with tempfile.TemporaryDirectory() as tmp:
        generate_demo(tmp, seed=1)
        cwd = os.getcwd()
        os.chdir(tmp)  # a relative brain path in the header, the same on every machine
        try:
            for name in names or list(SCENES):
                asyncio.run(shoot(name, Path(".cleo/cleo.db")))
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    main(sys.argv[1:])
