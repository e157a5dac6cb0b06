"""A very large brain's first scan starts before the app's modules load (issue 33): its first look,
the tags a first open waits for, then comes as much sooner as those imports take; a smaller brain's
starts with the first screen (`ui.first_brain.BEFORE_THE_APP_FROM`)."""

from __future__ import annotations

import json
import sys

import pytest

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.memory.pool_scan import in_subprocess
from tests.pruner_fixtures import small_tagged_brain
from tests.pty_capture import run_in_pty

# In the app's process: each process it starts is logged with whether Textual was loaded by then,
# and at its end how many frames a second Textual drew at most (ui/switching.frames_sooner).
_LOGGING_STARTS = """
import atexit, json, sys
LOG, FROM = sys.argv.pop(1), int(sys.argv.pop(1))
def frames():
    import textual.constants
    with open(LOG, "a") as log:
        log.write(json.dumps({"fps": textual.constants.MAX_FPS}) + "\\n")
atexit.register(frames)
def heard(event, args):
    if event == "subprocess.Popen":
        with open(LOG, "a") as log:
            log.write(json.dumps({"command": [str(a) for a in args[1]], "textual": "textual" in sys.modules}) + "\\n")
sys.addaudithook(heard)
import cleo_tui.ui.first_brain
cleo_tui.ui.first_brain.BEFORE_THE_APP_FROM = FROM
from cleo_tui.cli import run
run()
"""


@pytest.mark.parametrize(("before_the_app_from", "before_the_app"), [(1, True), (10_000, False)])
def test_a_large_brains_first_scan_starts_before_the_app_is_loaded_and_only_once(tmp_path, monkeypatch,
                                                                                 before_the_app_from, before_the_app):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # (no snapshot: opened for the first time)
    monkeypatch.delenv("TEXTUAL_FPS", raising=False)
    brain = small_tagged_brain(tmp_path)
    with brain.write() as conn:  # (a thousand of CLEO's long narratives: enough text for a process)
        conn.executemany(f"INSERT INTO {cs.OBSERVATIONS} (id, type, title, narrative, created_at) "
                         "VALUES (?, 'discovery', ?, ?, '2026-01-02 10:00:00')",
                         [(f"O-long-{k:04}", f"long note {k}", "a long narrative " * 260) for k in range(1000)])
    assert in_subprocess.worth_a_process(brain)
    path = str(brain.path)
    brain.close()
    log = tmp_path / "starts.jsonl"
    run_in_pty([sys.executable, "-c", _LOGGING_STARTS, str(log), str(before_the_app_from), "--db", path],
               [(b"O-long-", b""), (b"uncited", b"q")], cwd=str(tmp_path), timeout=60)
    logged = list(map(json.loads, log.read_text().splitlines()))
    assert logged[-1] == {"fps": 240}  # (a key's frame waits less for Textual's draw timer)
    scans = [start for start in logged if "cleo_tui.memory.pool_scan.in_subprocess" in start.get("command", ())]
    assert len(scans) == 1  # (the app took the process started before it: it started no second one)
    assert scans[0]["textual"] is not before_the_app  # (1,005 rows: "large" only from 1)
