"""cleo-tui's per-brain cache files: where each lives, writing one, and sweeping away the files
of brains that are gone and of formats no longer read (no Textual here).

A cache file is `<cache dir>/<kind>/<brain name>-<version>.npz` (`<brain name>-<variant>~<version>.npz`
for a cache kept per variant, such as line units per tokenizer), the brain's name being
`config.brain_cache_name` (a hash of its real path). `brains.json` beside them maps each name
back to its path, so a file whose brain no longer exists can be found. Losing any of these
files costs only time: the next scan rebuilds it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import orjson

from cleo_tui.config import brain_cache_name, cache_dir

KINDS = ("row_findings", "scan_snapshots", "dedup", "line_units")
_UNKNOWN_MAX_AGE = 30 * 86400  # files of brains the registry does not know (older versions wrote them)
_TMP_MAX_AGE = 86400           # a half-written file left by a killed process
_VARIANT_END = "~"  # ends the variant in a file's name (a tokenizer's name holds none)


def brain_cache_file(kind: str, brain_path: Path | str, version: str, variant: str | None = None) -> Path:
    """Where one brain's cache of this kind and version lives (the brain is registered, so that
    its files can be swept once it is gone). A brain keeps one file per `variant` (its line units
    per tokenizer): writing one sweeps only the older versions of the same variant."""
    name = brain_cache_name(brain_path)
    registry = _read_registry()
    real = os.path.realpath(str(brain_path))
    if registry.get(name) != real:
        registry[name] = real
        _write_registry(registry)
    stem = f"{name}-{version}" if variant is None else f"{name}-{variant}{_VARIANT_END}{version}"
    return cache_dir() / kind / f"{stem}.npz"


def _variant_of(file: Path) -> str:
    """The variant in a cache file's name ("" for none, as every file named before variants)."""
    rest = file.name.split("-", 1)[-1]
    return rest.split(_VARIANT_END, 1)[0] if _VARIANT_END in rest else ""


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> bool:
    """Replace `path` with these arrays, atomically; then sweep the stale cache files.
    False when the file could not be written (a full or read-only disk only costs speed)."""
    return _replace(path, lambda tmp: np.savez(tmp, allow_pickle=False, **arrays))


def write_arrays(path: Path, arrays: Sequence[np.ndarray]) -> bool:
    """`write_npz` without the zip: the arrays one after another in .npy format, read back in the
    same order by `read_arrays` (the file keeps the .npz name every cache file has, so `sweep`
    finds it). A zip computes the CRC of every byte written and again of every byte read, and
    copies each array once more: for the duplicate finder's 59 MB cache at 100,000 demo rows
    that cost about 0.1 s of CPU each way."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as file:
            for array in arrays:
                np.save(file, array, allow_pickle=False)

    return _replace(path, write)


def _replace(path: Path, write: Callable[[Path], None]) -> bool:
    """`write(tmp)` a file beside `path`, then move it over `path` and sweep the stale cache files;
    False (nothing left behind) when it could not be written."""
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
    except OSError:
        _remove(tmp)
        return False
    try:
        sweep(path)
    except OSError:
        pass  # housekeeping: never a reason to fail a scan
    return True


def read_arrays(path: Path, count: int) -> list[np.ndarray]:
    """The `count` arrays `write_arrays` wrote to `path` (OSError, ValueError or EOFError when the
    file is missing, not such a file, or cut short; ValueError when more follows)."""
    with open(path, "rb") as file:
        arrays = [np.load(file, allow_pickle=False) for _ in range(count)]
        if not all(isinstance(array, np.ndarray) for array in arrays):  # (np.load opens a zip as a whole)
            raise ValueError(f"{path} is not a file of arrays")
        if file.read(1):
            raise ValueError(f"{path} holds more than {count} arrays")
    return arrays


def _registry_path() -> Path:
    return cache_dir() / "brains.json"


def _read_registry() -> dict[str, str]:
    try:
        loaded = orjson.loads(_registry_path().read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, str)}


def _write_registry(registry: dict[str, str]) -> None:
    path = _registry_path()
    tmp = path.with_name(f"brains.{os.getpid()}.tmp.json")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(orjson.dumps(registry, option=orjson.OPT_SORT_KEYS))
        os.replace(tmp, path)
    except OSError:
        _remove(tmp)


def _remove(path: Path) -> None:
    """Delete a file if it is there (its folder may be missing, or a file)."""
    try:
        path.unlink()
    except OSError:
        pass


def _is_stale(file: Path, name: str, registry: dict[str, str], just_written: Path, now: float) -> bool:
    """Whether a cache file may go: a leftover temporary file, a file of a brain that no longer
    exists, an older version of the file just written (of its variant, or without one), or an old
    file of an unknown brain."""
    age = now - file.stat().st_mtime
    if ".tmp." in file.name:
        return age > _TMP_MAX_AGE
    if file.parent == just_written.parent and name == just_written.name.split("-", 1)[0]:
        return file != just_written and _variant_of(file) in ("", _variant_of(just_written))
    owner = registry.get(name)
    if owner is None:
        return age > _UNKNOWN_MAX_AGE
    return not os.path.exists(owner)


def sweep(just_written: Path) -> list[Path]:
    """Delete every stale cache file (`_is_stale`) and forget brains that are gone; the files deleted."""
    registry = _read_registry()
    now, removed = time.time(), []
    for kind in KINDS:
        folder = cache_dir() / kind
        if not folder.is_dir():
            continue
        for file in folder.iterdir():
            name = file.name.split("-", 1)[0]
            try:
                if file.suffix == ".npz" and _is_stale(file, name, registry, just_written, now):
                    file.unlink()
                    removed.append(file)
            except FileNotFoundError:
                continue  # another process swept it first
    gone = {name for name, owner in registry.items() if not os.path.exists(owner)}
    if gone:
        _write_registry({name: owner for name, owner in registry.items() if name not in gone})
    return removed
