"""cleo-tui's own settings, in the platform's config directory (no Textual here).

`config.json` there may hold:
  {"theme": "cleo", "tokenizer": "chars4", "keys": {"action_id": "key"},
   "llm": {"provider": "anthropic", "model": "...", "base_url": "...",
           "timeout": 60, "max_retries": 2, "deadline": 75}}  (seconds; see llm/resolve.py)
Missing or malformed files fall back to defaults; a bad file is reported, not fatal.
"""

from __future__ import annotations

import hashlib
import json
import os
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
