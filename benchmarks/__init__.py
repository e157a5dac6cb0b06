"""Benchmarks: each prints a floor measured in the same run beside ours and the ratio."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def with_bytecode(env: Mapping[str, str], pycache: Path) -> dict[str, str]:
    """`env` with compiled bytecode kept in `pycache`, as an installed package keeps it: where
    PYTHONDONTWRITEBYTECODE is set (this machine sets it), every start would compile every module
    again (0.15–0.4 s) that no user's second run pays."""
    kept = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    kept["PYTHONPYCACHEPREFIX"] = str(pycache)
    return kept
