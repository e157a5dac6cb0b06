"""cleo-tui's own settings, in the platform's config directory (no Textual here).

`config.json` there may hold:
  {"theme": "cleo", "tokenizer": "chars4", "keys": {"action_id": "key"},
   "llm": {"provider": "anthropic", "model": "...", "base_url": "...",
           "timeout": 60, "max_retries": 2, "deadline": 75},  (seconds; see llm/resolve.py)
   "protect": {"recalled_within_days": 30, "used_by_task": true}}
(`protect` is opt-in recall-aware protection: see `protect_settings`.)
Missing or malformed files fall back to defaults; a bad file is reported, not fatal.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from cleo_tui.safe_text import safe_path, safe_text

APP_NAME = "cleo-tui"
DEFAULTS: dict[str, Any] = {"theme": "cleo", "tokenizer": "chars4", "keys": {}, "llm": {}}


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))


def cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir(APP_NAME))


def brain_cache_name(brain_path: Path | str) -> str:
    """The name a brain's cache files go by: a hash of its real path (a symlink shares them)."""
    return hashlib.sha256(os.path.realpath(str(brain_path)).encode("utf-8", "surrogatepass")).hexdigest()[:20]


def config_path() -> Path:
    return config_dir() / "config.json"


def load_config() -> tuple[dict[str, Any], str | None]:
    """(settings merged over the defaults, a problem to show the user or None)."""
    settings = json.loads(json.dumps(DEFAULTS))
    path = config_path()
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return settings, None
    except RecursionError:
        return settings, f"{safe_path(path)} could not be read (nested too deeply); using the defaults."
    except (OSError, ValueError) as exc:
        return settings, f"{safe_path(path)} could not be read ({safe_text(exc)}); using the defaults."
    if not isinstance(loaded, dict):
        return settings, f"{safe_path(path)} does not hold a JSON object; using the defaults."
    for key, value in loaded.items():
        if key in DEFAULTS and isinstance(DEFAULTS[key], dict) and not isinstance(value, dict):
            continue
        settings[key] = value
    return settings, None


def save_setting(key: str, value: Any) -> None:
    """Write one top-level setting, keeping the others."""
    path = config_path()
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(current, dict):
            current = {}
    except (OSError, ValueError, RecursionError):
        current = {}
    current[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(current, indent=2), encoding="utf-8")
    tmp.replace(path)


@dataclass(frozen=True)
class ProtectSettings:
    """Recall-aware protection, off by default (`memory.recall_protection`).

    `recalled_within_days`: protect what a recorded retrieval returned in the last N days;
    `used_by_task`: protect what CLEO's usage log says a task used.
    """

    recalled_within_days: int | None = None
    used_by_task: bool = False

    @property
    def enabled(self) -> bool:
        return self.recalled_within_days is not None or self.used_by_task


def protect_settings(settings: Mapping[str, Any]) -> tuple[ProtectSettings, str | None]:
    """The `protect` section of the settings, typed (a value of the wrong kind is ignored and named)."""
    section = settings.get("protect")
    if section is None:
        return ProtectSettings(), None
    if not isinstance(section, Mapping):
        return ProtectSettings(), "`protect` must be an object; recall-aware protection is off."
    problems = []
    days = section.get("recalled_within_days")
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or not 0 < days <= 36_500):
        problems.append("`protect.recalled_within_days` must be a whole number of days from 1 to 36500")
        days = None
    used = section.get("used_by_task", False)
    if not isinstance(used, bool):
        problems.append("`protect.used_by_task` must be true or false")
        used = False
    off = "that rule is" if len(problems) == 1 else "those rules are"
    problem = f"{'; '.join(problems)}; {off} off." if problems else None
    return ProtectSettings(days, used), problem
