"""`cleo-tui serve` in a real browser: headless Chromium opens the printed address, the app's first rows
come, keys reach it; an address without the token is refused; ctrl+c leaves no process behind.

The browser's screenshot goes to the test's own directory; `CLEO_TUI_BROWSER_SCREENSHOT=screenshots/browser.png`
writes it where the README shows it instead (each run rewrote that file in the tree before)."""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.ui_helpers import copy_demo

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
BUDGET = re.compile(r"Budget ([\d,]+)\s+target")
SCREENSHOT_VARIABLE = "CLEO_TUI_BROWSER_SCREENSHOT"  # where to keep the screenshot (default: the test's tmp_path)


def _start_server(db: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "cleo_tui", "serve", "--db", str(db), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    if not selector.select(timeout=30):
        proc.kill()
        pytest.fail("cleo-tui serve printed no address within 30 s")
    line = proc.stdout.readline()
    assert "http://127.0.0.1:" in line, line
    return proc, line.split(": ", 1)[1].strip()


def _children(pid: int) -> set[int]:
    """Every descendant of `pid` now (from /proc)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            todo.extend(kids - found)
            found |= kids
    return found


def _browser(tmp_path: Path) -> webdriver.Chrome:
    missing = [p for p in (CHROMIUM, DRIVER) if not shutil.which(p)]
    if missing:
        pytest.fail(f"the browser test needs Debian's chromium and chromium-driver ({', '.join(missing)} missing): "
                    "apt-get install -y chromium chromium-driver (.ci/run does it)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,800", "--disable-3d-apis", f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def _screen_text(driver: webdriver.Chrome) -> str:
    return " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, ".xterm-rows > div"))


def _evicted_runs(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT summary FROM cleo_tui_runs WHERE kind = 'evict' ORDER BY id")]


def _two_tabs_evict(driver: webdriver.Chrome, url: str, db: Path) -> None:
    """Two tabs, two app processes on one brain: each evicts a row, and both writes land."""
    first = driver.current_window_handle
    before = len(_evicted_runs(db))
    driver.switch_to.new_window("tab")
    driver.get(url)
    wait = WebDriverWait(driver, 30, poll_frequency=0.2)
    wait.until(lambda d: "O-" in _screen_text(d))
    for handle, keys in ((first, "1e"), (driver.current_window_handle, "je")):
        driver.switch_to.window(handle)
        terminal = driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea")
        wanted = len(_evicted_runs(db)) + 1
        terminal.send_keys(keys)
        wait.until(lambda d: "(y)" in _screen_text(d))
        shown = time.monotonic()
        # The danger dialog ignores answers for its first 0.4 s (ConfirmModal.guard_seconds), by design.
        wait.until(lambda _d, at=shown: time.monotonic() > at + 0.6)
        terminal.send_keys("y")
        wait.until(lambda _d, n=wanted: len(_evicted_runs(db)) >= n)
    assert len(_evicted_runs(db)) == before + 2


def test_serve_opens_the_app_in_a_browser_behind_its_token_and_leaves_nothing_running(tmp_path):
    db = copy_demo(tmp_path / "project")
    screenshot = Path(os.environ.get(SCREENSHOT_VARIABLE) or tmp_path / "browser.png").resolve()
    proc, url = _start_server(db)
    driver = None
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url.split("?")[0], timeout=10)
        assert refused.value.code == 403
        assert _children(proc.pid) == set()  # refused before any app process started
        driver = _browser(tmp_path)
        driver.get(url)
        wait = WebDriverWait(driver, 30, poll_frequency=0.2)
        wait.until(lambda d: "Observations" in _screen_text(d) and "O-" in _screen_text(d))
        assert _children(proc.pid), "the tab runs its own app process"
        terminal = driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea")

        def on_prune(d: webdriver.Chrome) -> re.Match | None:
            found = BUDGET.search(_screen_text(d))
            if found is None:
                terminal.send_keys("2")  # again, if the first went while the app was still starting
            return found

        before = wait.until(on_prune).group(1)
        terminal.send_keys("]")
        after = wait.until(lambda d: (m := BUDGET.search(_screen_text(d))) and m.group(1) != before and m)
        assert int(after.group(1).replace(",", "")) > int(before.replace(",", ""))  # the preview followed the key
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(screenshot))
        _two_tabs_evict(driver, url, db)
    finally:
        if driver is not None:
            driver.quit()
        apps = _children(proc.pid)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in apps) and time.monotonic() < deadline:
        time.sleep(0.1)  # polling the process table, not synchronising with our own code
    left = [pid for pid in apps if Path(f"/proc/{pid}").exists()
            and "cleo_tui" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")]
    assert left == [], f"app processes left running: {left}"
    assert os.path.getsize(screenshot) > 10_000
