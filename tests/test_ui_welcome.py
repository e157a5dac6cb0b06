"""The welcome screen follows `cleo-tui init`'s rule for an empty brain and puts a demo in a
directory of its own (issue 29 item 2): never `<project>/.cleo/cleo.db` written by cleo-tui."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.widgets import Button, Input, Static

from cleo_tui.brain import plan_project_brain
from cleo_tui.demo import demo_directory_problem
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.panes.welcome import WelcomeScreen
from tests.cleo_rule import cleo_treats_as_existing, install_fake_cleo
from tests.ui_helpers import settle


def test_the_plan_is_inits_rule(tmp_path, monkeypatch):
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    plan = plan_project_brain(project)
    assert plan.path == project / ".cleo-tui" / "brain.db" and plan.cleo is None
    assert "no `cleo` on PATH" in plan.describe()
    install_fake_cleo(tmp_path / "bin", sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    plan = plan_project_brain(project)
    assert plan.path == project / ".cleo" / "cleo.db" and plan.cleo and "cleo init" in plan.describe()
    assert plan_project_brain(bare).path == bare / ".cleo-tui" / "brain.db"  # CLEO needs a git repository
    assert plan_project_brain(project, cleo="never").cleo is None


def test_a_demo_goes_only_to_a_new_or_empty_directory(tmp_path):
    assert demo_directory_problem(tmp_path / "new") is None
    (tmp_path / "empty").mkdir()
    assert demo_directory_problem(tmp_path / "empty") is None
    (tmp_path / "project" / ".git").mkdir(parents=True)
    assert "never into a project's .cleo/" in (demo_directory_problem(tmp_path / "project") or "")
    (tmp_path / "f").write_text("x")
    assert "is a file" in (demo_directory_problem(tmp_path / "f") or "")


async def test_with_cleo_on_path_the_empty_brain_is_cleos_own_init(tmp_path, monkeypatch):
    install_fake_cleo(tmp_path / "bin", sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    app = CleoApp(brain=None, project=project, problem="No brain found.")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        plan = str(app.screen.query_one("#empty-plan", Static).render())
        assert "cleo init" in plan
        app.screen.query_one("#empty", Button).press()
        await settle(app, pilot)
        assert app.current_mode == "observations"
        assert app.session.brain.path.resolve() == (project / ".cleo" / "cleo.db").resolve()
        assert cleo_treats_as_existing(project / ".cleo" / "cleo.db")  # CLEO made it: CLEO keeps working
        assert not (project / ".cleo-tui").exists()
        app.session.brain.close()


async def test_the_demo_goes_to_the_named_directory_never_a_projects_cleo(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    app = CleoApp(brain=None, project=project, problem="No brain found.")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        default = Path(app.screen.query_one("#demo-dir", Input).value)
        assert default.is_absolute() and not default.exists()  # a fresh temporary directory, shown whole
        app.screen.query_one("#demo-dir", Input).value = str(project)
        app.screen.query_one("#demo", Button).press()
        await settle(app, pilot)
        assert isinstance(app.screen, WelcomeScreen) and not (project / ".cleo").exists()  # refused
        app.screen.query_one("#demo-dir", Input).value = str(tmp_path / "demo")
        app.screen.query_one("#demo", Button).press()
        await settle(app, pilot)
        assert app.session.brain.path.resolve() == (tmp_path / "demo" / ".cleo" / "cleo.db").resolve()
        assert not (project / ".cleo").exists() and not (project / ".cleo-tui").exists()
        app.session.brain.close()


async def test_a_file_that_is_not_a_brain_says_so_and_gives_the_buttons_back(tmp_path, monkeypatch):
    from cleo_tui.ui.widgets.modals import MessageModal

    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    not_a_brain = tmp_path / "notes.txt"
    not_a_brain.write_text("just text\n")
    app = CleoApp(brain=None, project=project, problem="No brain found.")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        welcome = app.screen
        welcome.query_one("#open-path", Input).value = str(not_a_brain)
        welcome.query_one("#open", Button).press()
        await settle(app, pilot)
        assert isinstance(app.screen, MessageModal) and not app.has_session  # the error, told
        assert not any(b.disabled for b in welcome.query(Button))  # and the buttons back


async def test_a_projects_hippo_store_is_offered_to_open(tmp_path, monkeypatch):
    from cleo_tui.ui.panes.traces import TracesScreen
    from tests.recall_fixtures import make_hippo_store

    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # (no CLEO global store)
    hippo = make_hippo_store(tmp_path / "p" / ".hippo" / "hippo.db")
    (tmp_path / "p" / "src").mkdir()
    app = CleoApp(brain=None, project=tmp_path / "p" / "src", problem="No brain found.")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        welcome = app.screen
        assert welcome.query_one("#open-path", Input).value == str(hippo)
        welcome.query_one("#open", Button).press()
        await settle(app, pilot)
        assert app.has_session and app.session.brain.kind == "hippo"
        assert isinstance(app.screen, TracesScreen)
    app.session.brain.close()
