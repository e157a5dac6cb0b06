"""CLEO's memory bridge in its project: CLEO's settings for it, the file CLEO last wrote, and
asking CLEO to regenerate it (`cleo refresh-memory`; cleo-tui never writes the file).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleo_tui.brain.project_config import load_project_settings
from cleo_tui.brain.store import Brain
from cleo_tui.safe_text import one_line

DEFAULT_MAX_TOKENS = 2000
DEFAULT_MODE = "cli"
BRIDGE_FILE = "memory-bridge.md"
REFRESH_COMMAND = ("cleo", "refresh-memory")


@dataclass(frozen=True)
class BridgeSettings:
    """CLEO's `brain.memoryBridge` settings from the project's config.json (its defaults when absent)."""

    mode: str = DEFAULT_MODE
    context_aware: bool = True
    max_tokens: int = DEFAULT_MAX_TOKENS
    config_path: str | None = None
    warning: str | None = None

    @property
    def mode_note(self) -> str:
        """What CLEO does with the bridge in this mode."""
        if self.mode == "file":
            return ("mode 'file': CLEO writes .cleo/memory-bridge.md and AGENTS.md @-references it; "
                    "this is what it writes")
        if self.mode == "disabled":
            return ("mode 'disabled': CLEO writes no bridge and injects none; this is what it would write "
                    "in mode 'file'")
        return (f"mode {one_line(self.mode, 20)!r}: CLEO writes no memory-bridge.md (its default since "
                "T999); AGENTS.md tells the agent to run `cleo memory digest --brief` instead. This is what "
                "`cleo refresh-memory` writes in mode 'file'")


@dataclass(frozen=True)
class OnDisk:
    """`.cleo/memory-bridge.md` beside the brain: present, and whether it says what CLEO would write now."""

    path: str | None
    exists: bool
    matches: bool | None = None  # compared as CLEO compares: without the "Auto-generated at" line
    written_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "exists": self.exists, "matches": self.matches, "written_at": self.written_at}


def bridge_settings(brain: Brain) -> BridgeSettings:
    """`brain.memoryBridge` from the project's config.json, CLEO's defaults where absent."""
    settings = load_project_settings(brain)
    node: Any = settings.raw.get("brain") if isinstance(settings.raw, dict) else None
    node = node.get("memoryBridge") if isinstance(node, dict) else None
    node = node if isinstance(node, dict) else {}
    mode = node.get("mode") if isinstance(node.get("mode"), str) else DEFAULT_MODE
    max_tokens = node.get("maxTokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, float)):
        max_tokens = DEFAULT_MAX_TOKENS
    return BridgeSettings(mode=mode, context_aware=node.get("contextAware") is not False,
                          max_tokens=int(max_tokens),
                          config_path=str(settings.path) if settings.path else None, warning=settings.warning)


def project_dir(brain: Brain) -> Path | None:
    """The CLEO project the brain belongs to (the folder holding its `.cleo`), or None."""
    folder = Path(brain.path).resolve().parent
    return folder.parent if folder.name == ".cleo" else None


def _strip_stamp(text: str) -> str:
    return "\n".join("" if line.startswith("> Auto-generated at ") else line for line in text.split("\n"))


def read_on_disk(brain: Brain, text: str) -> OnDisk:
    """The bridge file CLEO last wrote, compared with `text` as CLEO compares (the stamp line left out)."""
    project = project_dir(brain)
    if project is None:
        return OnDisk(None, False)
    path = project / ".cleo" / BRIDGE_FILE
    try:
        stored = path.read_bytes()[:4_000_000].decode("utf-8", "replace")
    except OSError:
        return OnDisk(str(path), False)
    stamp = next((line.removeprefix("> Auto-generated at ") for line in stored.split("\n")
                  if line.startswith("> Auto-generated at ")), None)
    return OnDisk(str(path), True, _strip_stamp(stored) == _strip_stamp(text), stamp)


# -- regenerating through CLEO ------------------------------------------------------------------

REFRESH_TIMEOUT_S = 120


@dataclass(frozen=True)
class RefreshOutcome:
    """What `cleo refresh-memory` answered: its exit status and its output (untrusted text)."""

    command: tuple[str, ...]
    cwd: str
    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None  # it could not be run (or timed out)

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    def to_json(self) -> dict[str, Any]:
        return {"command": list(self.command), "cwd": self.cwd, "returncode": self.returncode,
                "stdout": self.stdout, "stderr": self.stderr, "error": self.error}


def cleo_executable() -> str | None:
    """The `cleo` on PATH, or None."""
    import shutil

    return shutil.which(REFRESH_COMMAND[0])


def refresh_through_cleo(project: Path, executable: str | None = None) -> RefreshOutcome:
    """Run `cleo refresh-memory` in `project`: CLEO regenerates its bridge; cleo-tui never writes the file."""
    import subprocess

    program = executable or cleo_executable() or REFRESH_COMMAND[0]
    command = (program, *REFRESH_COMMAND[1:])
    try:
        done = subprocess.run(command, cwd=project, capture_output=True, timeout=REFRESH_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return RefreshOutcome(command, str(project), None, "", "",
                              error=f"it did not finish within {REFRESH_TIMEOUT_S} s and was stopped")
    except OSError as exc:
        return RefreshOutcome(command, str(project), None, "", "", error=f"it could not be run ({exc.strerror})")
    return RefreshOutcome(command, str(project), done.returncode,
                          done.stdout[:100_000].decode("utf-8", "replace"),
                          done.stderr[:100_000].decode("utf-8", "replace"))
