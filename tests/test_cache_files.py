"""The per-brain cache files are swept: gone brains, older formats, leftovers; never live ones."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from cleo_tui.config import cache_dir
from cleo_tui.memory.cache_files import brain_cache_file, sweep, write_npz


def _brain(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name / ".cleo" / "cleo.db"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    return path


def _write(kind: str, brain: Path, version: str) -> Path:
    path = brain_cache_file(kind, brain, version)
    assert write_npz(path, {"values": np.arange(3)})
    return path


def _age(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_written_file_reads_back(tmp_path: Path) -> None:
    brain = _brain(tmp_path, "a")
    path = _write("dedup", brain, "v1")
    with np.load(path) as data:
        assert data["values"].tolist() == [0, 1, 2]
    assert not list(path.parent.glob("*.tmp.*"))


def test_a_gone_brain_loses_its_files_and_a_live_one_keeps_them(tmp_path: Path) -> None:
    kept, gone = _brain(tmp_path, "kept"), _brain(tmp_path, "gone")
    kept_files = [_write("dedup", kept, "v1"), _write("scan_snapshots", kept, "r-1")]
    gone_files = [_write("dedup", gone, "v1"), _write("row_findings", gone, "r")]
    gone.unlink()
    _write("row_findings", kept, "r")
    assert all(p.exists() for p in kept_files)
    assert not any(p.exists() for p in gone_files)


def test_an_older_version_of_the_same_cache_is_replaced(tmp_path: Path) -> None:
    brain, other = _brain(tmp_path, "a"), _brain(tmp_path, "b")
    old, others = _write("dedup", brain, "v1"), _write("dedup", other, "v1")
    snapshot = _write("scan_snapshots", brain, "v1")
    new = _write("dedup", brain, "v2")
    assert new.exists() and not old.exists()
    assert others.exists() and snapshot.exists()  # other brains and other kinds are left alone


def test_unknown_files_go_only_when_old_and_leftover_temporaries_after_a_day(tmp_path: Path) -> None:
    brain = _brain(tmp_path, "a")
    written = _write("dedup", brain, "v1")
    folder = written.parent
    recent, old = folder / "0123456789abcdef0123-v1.npz", folder / "fedcba9876543210fedc-v1.npz"
    fresh_tmp, stale_tmp = folder / "x-v1.99.tmp.npz", folder / "y-v1.98.tmp.npz"
    for path in (recent, old, fresh_tmp, stale_tmp):
        path.write_bytes(b"x")
    _age(old, 31)
    _age(stale_tmp, 2)
    removed = sweep(written)
    assert sorted(removed) == sorted([old, stale_tmp])
    assert recent.exists() and fresh_tmp.exists()


def test_a_damaged_registry_is_rebuilt(tmp_path: Path) -> None:
    brain = _brain(tmp_path, "a")
    (cache_dir()).mkdir(parents=True)
    (cache_dir() / "brains.json").write_text("[not json")
    path = _write("dedup", brain, "v1")
    brain.unlink()
    other = _brain(tmp_path, "b")
    _write("dedup", other, "v1")
    assert not path.exists()


def test_an_unwritable_cache_only_returns_false(tmp_path: Path) -> None:
    brain = _brain(tmp_path, "a")
    blocker = cache_dir() / "dedup"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the folder should be")
    assert not write_npz(brain_cache_file("dedup", brain, "v1"), {"values": np.arange(3)})


def test_tagging_a_brain_registers_it_and_sweeps_its_older_caches(tmp_path: Path) -> None:
    from cleo_tui.memory.tags import tag_brain
    from tests.pruner_fixtures import add_observation, new_brain

    brain = new_brain(tmp_path)
    add_observation(brain, "O-1", "a fact about the build")
    older = brain_cache_file("scan_snapshots", brain.path, "rules-0-snapshot-0")
    older.parent.mkdir(parents=True, exist_ok=True)
    older.write_bytes(b"a snapshot of an older format")
    tag_brain(brain)
    assert not older.exists()
    kept = list((cache_dir() / "scan_snapshots").glob("*.npz"))
    assert len(kept) == 1 and kept[0].name.startswith(older.name.split("-", 1)[0])
    registry = (cache_dir() / "brains.json").read_text()
    assert os.path.realpath(brain.path) in registry


def test_each_variant_keeps_its_own_file(tmp_path: Path) -> None:
    """A brain's line units for one tokenizer survive counting with another (switching tokenizers
    used to throw the other's away, and the next run with it counted every row's units again)."""
    brain = _brain(tmp_path, "a")
    o200k = brain_cache_file("line_units", brain, "v1", variant="o200k_base")
    legacy = o200k.with_name(o200k.name.split("-", 1)[0] + "-o200k_base-v1.npz")  # (named before variants)
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(b"x")
    assert write_npz(o200k, {"values": np.arange(3)})
    cl100k = brain_cache_file("line_units", brain, "v1", variant="cl100k_base")
    assert write_npz(cl100k, {"values": np.arange(3)})
    assert o200k.exists() and cl100k.exists() and not legacy.exists()
    newer = brain_cache_file("line_units", brain, "v2", variant="o200k_base")
    assert write_npz(newer, {"values": np.arange(3)})
    assert newer.exists() and cl100k.exists() and not o200k.exists()  # an older format of the same variant goes
