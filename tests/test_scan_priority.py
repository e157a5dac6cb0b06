"""A first scan's processes yield the cores to the app (issue 33): they run under SCHED_IDLE, so
the UI thread, waking for a key, never waits on the run queue behind them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cleo_tui import low_priority
from cleo_tui.memory.pool_scan import in_subprocess
from tests.pruner_fixtures import small_tagged_brain


def _policy(pid: int) -> int:
    """The scheduling policy of process `pid` (alive, or ended and not yet reaped): /proc's field 41."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[38])


def test_the_first_scan_process_runs_only_on_cores_nobody_else_wants(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    brain = small_tagged_brain(tmp_path)
    child = subprocess.Popen([sys.executable, "-m", "cleo_tui.memory.pool_scan.in_subprocess", str(brain.path)],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=in_subprocess.child_environment())
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, its /proc entry kept until reaped
        assert _policy(child.pid) == os.SCHED_IDLE
    finally:
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait() == 0


def _niceness(pid: int) -> int:
    """The niceness of process `pid` (alive, or ended and not yet reaped): /proc's field 19."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def test_a_child_started_below_the_app_lowers_itself_before_it_imports_anything():
    done = subprocess.run(low_priority.command("tests.child_reports_its_start", "a b", "--c"), capture_output=True,
                          text=True, check=True, cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout.split(" ", 2) == [str(min(19, os.nice(0) + low_priority.NICENESS)), "False", "['a b', '--c']\n"]


def test_the_scan_process_the_app_starts_runs_below_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    brain = small_tagged_brain(tmp_path)
    scan = in_subprocess.ScanProcess.start(brain, look=False)
    assert scan is not None
    os.waitid(os.P_PID, scan.child.pid, os.WEXITED | os.WNOWAIT)
    assert _niceness(scan.child.pid) == min(19, os.nice(0) + low_priority.NICENESS)
    assert scan.finish()


def test_its_first_look_runs_below_the_app_not_idle_and_only_the_whole_scan_yields(tmp_path, monkeypatch):
    # The user waits for the first look (coverage and relevance on screen): it must not wait for cores
    # another program wants (the app's threads come first); the whole scan after it is background work.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    brain = small_tagged_brain(tmp_path)
    child = subprocess.Popen(low_priority.command("cleo_tui.memory.pool_scan.in_subprocess", str(brain.path),
                                                  "--look"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=in_subprocess.child_environment())
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == b"LOOK\n"  # (it waits for the app to have loaded it)
        assert _policy(child.pid) == os.SCHED_OTHER
        child.stdin.write(b"\n")
        child.stdin.flush()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert _policy(child.pid) == os.SCHED_IDLE
    finally:
        child.stdin.close()
        child.stdout.read()
        child.stdout.close()
        assert child.wait() == 0


def test_a_reopened_brains_check_process_yields_the_cores_too(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    brain = small_tagged_brain(tmp_path)
    child = subprocess.Popen([sys.executable, "-m", "cleo_tui.memory.pool_scan.check_in_subprocess", str(brain.path)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=in_subprocess.child_environment())
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # (no columns on stdin: it ends at once)
    assert _policy(child.pid) == os.SCHED_IDLE
    child.wait()


_STARTS_A_WORKER = """
import os, sys
from cleo_tui.memory.pool_scan.background import yield_the_cores
from cleo_tui.memory.pool_scan.detector_workers import Worker
yield_the_cores()
worker = Worker()
worker.send(["see src/a.py"])
worker.receive()
print(open(f"/proc/{worker.process.pid}/stat").read().rsplit(")", 1)[1].split()[38])
worker.close()
"""


def test_a_detector_worker_yields_the_cores_as_the_scan_that_started_it(tmp_path):
    env = {**in_subprocess.child_environment(), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", _STARTS_A_WORKER], capture_output=True, text=True, env=env,
                          check=True)
    assert int(done.stdout) == os.SCHED_IDLE
