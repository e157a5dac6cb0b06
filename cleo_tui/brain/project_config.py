"""CLEO's project settings (`.cleo/config.json`) that the observer, reflector and liveness checks obey.

They live in `<project>/.cleo/config.json`, beside the brain when the brain is
`<project>/.cleo/cleo.db` or `.cleo/brain.db`. A brain opened from anywhere
else has no project config, and CLEO's defaults apply. A malformed file is
reported as a warning and ignored, never fatal.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleo_tui.brain.store import Brain
from cleo_tui.safe_text import safe_path, safe_text

DEFAULT_THRESHOLD = 10
MAX_THRESHOLD = 2**63 - 1  # compared in SQLite, whose integers are 64-bit


@dataclass(frozen=True)
class ProjectSettings:
    """What cleo-tui reads from CLEO's config.json (CLEO's defaults where absent)."""

    path: Path | None
    raw: dict[str, Any]
    warning: str | None = None

    def _get(self, *keys: str) -> Any:
        node: Any = self.raw
        for key in keys:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    @property
    def observer_enabled(self) -> bool:
        return self._get("brain", "observer", "enabled") is not False

    @property
    def observer_threshold(self) -> int:
        value = self._get("brain", "observer", "threshold")
        return int(value) if _usable_threshold(value) else DEFAULT_THRESHOLD

    @property
    def reflector_enabled(self) -> bool:
        return self._get("brain", "reflector", "enabled") is not False

    @property
    def auto_capture(self) -> bool:
        """When false CLEO writes no graph edges (nor nodes)."""
        return self._get("brain", "autoCapture") is not False

    def llm_entry(self, *keys: str) -> dict[str, Any]:
        """`llm.<keys>` as a dict ({} when absent or not an object)."""
        value = self._get("llm", *keys)
        return value if isinstance(value, dict) else {}


def project_config_path(brain: Brain) -> Path | None:
    """`<project>/.cleo/config.json` when the brain sits in a `.cleo` folder, else None."""
    folder = Path(brain.path).parent
    return folder / "config.json" if folder.name == ".cleo" else None


def load_project_settings(brain: Brain) -> ProjectSettings:
    """Read CLEO's project config for this brain; defaults (and a warning) when unreadable."""
    path = project_config_path(brain)
    if path is None or not path.is_file():
        return ProjectSettings(path=None, raw={})
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        return ProjectSettings(path=path, raw={},
                               warning=f"{safe_path(path)} could not be read ({type(exc).__name__}); "
                                       "CLEO's defaults apply.")
    if not isinstance(raw, dict):
        return ProjectSettings(path=path, raw={},
                               warning=f"{safe_path(path)} does not hold a JSON object; CLEO's defaults apply.")
    threshold = ProjectSettings(path, raw)._get("brain", "observer", "threshold")
    if threshold is not None and not _usable_threshold(threshold):
        return ProjectSettings(path=path, raw=raw, warning=(
            f"brain.observer.threshold in {safe_path(path)} is {safe_text(threshold, 40)}, not a whole number "
            f"from 1 to {MAX_THRESHOLD:,}; CLEO's default of {DEFAULT_THRESHOLD} applies."))
    return ProjectSettings(path=path, raw=raw)


def _usable_threshold(value: Any) -> bool:
    """A count of observations: a finite number from 1 up (JSON's 1e309 is infinity, NaN is no number)."""
    return (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
            and 1 <= value <= MAX_THRESHOLD)
