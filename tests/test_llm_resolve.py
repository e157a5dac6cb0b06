"""Provider/model/credential resolution: the order of the issue, and no key ever shown."""

from __future__ import annotations

import json

import pytest

from cleo_tui.llm.resolve import LlmConfigError, resolve_provider
from tests.llm_fixtures import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    brain_with_observations,
    write_own_config,
    write_project_config,
)


@pytest.fixture
def brain(tmp_path):
    brain, _ = brain_with_observations(tmp_path, 0)
    yield brain
    brain.close()


def test_without_anything_it_is_anthropic_without_credential(brain):
    resolved = resolve_provider(brain)
    assert (resolved.provider, resolved.model, resolved.has_credential) == ("anthropic", "claude-haiku-4-5", False)
    assert "ANTHROPIC_API_KEY" in resolved.missing_credential()


def test_first_key_in_environment_picks_the_provider(brain, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    resolved = resolve_provider(brain)
    assert (resolved.provider, resolved.model, resolved.provider_source) == (
        "openai", "gpt-4.1-mini", "OPENAI_API_KEY is set")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    assert resolve_provider(brain).provider == "anthropic"


def test_order_flag_env_model_project_role_default_own_config(brain, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    write_own_config({"provider": "openai", "model": "own-model"})
    assert (resolve_provider(brain).provider, resolve_provider(brain).model) == ("openai", "own-model")

    write_project_config(brain, {"llm": {"default": {"provider": "anthropic", "model": "claude-default"}}})
    assert resolve_provider(brain).model == "claude-default"

    write_project_config(brain, {"llm": {"default": {"provider": "anthropic", "model": "claude-default"},
                                         "roles": {"consolidation": {"provider": "anthropic",
                                                                     "model": "claude-role"}}}})
    resolved = resolve_provider(brain)
    assert (resolved.model, resolved.model_source) == ("claude-role", ".cleo/config.json llm.roles.consolidation")

    monkeypatch.setenv("CLEO_OBSERVER_MODEL", "claude-env")
    assert resolve_provider(brain).model == "claude-env"

    resolved = resolve_provider(brain, provider="openai", model="gpt-flag")
    assert (resolved.provider, resolved.model, resolved.api_key == OPENAI_KEY) == ("openai", "gpt-flag", True)


def test_model_is_not_borrowed_from_another_provider(brain, monkeypatch):
    write_project_config(brain, {"llm": {"roles": {"consolidation": {"provider": "anthropic",
                                                                      "model": "claude-role"}}}})
    resolved = resolve_provider(brain, provider="openai")
    assert resolved.model == "gpt-4.1-mini"


def test_model_name_implies_provider(brain, monkeypatch):
    monkeypatch.setenv("CLEO_OBSERVER_MODEL", "gpt-4o")
    assert resolve_provider(brain).provider == "openai"


def test_openai_compatible_needs_base_url_not_key(brain, monkeypatch):
    resolved = resolve_provider(brain, provider="ollama")
    assert (resolved.provider, resolved.has_credential) == ("openai-compatible", False)
    assert "base URL" in resolved.missing_credential()
    write_own_config({"provider": "openai-compatible", "base_url": "http://127.0.0.1:11434/v1", "model": "llama3"})
    resolved = resolve_provider(brain)
    assert (resolved.provider, resolved.model, resolved.base_url) == ("openai-compatible", "llama3", "http://127.0.0.1:11434/v1")
    assert resolved.has_credential and resolved.describe()["key_set"] is False


def test_configured_key_variable_name(brain, monkeypatch):
    monkeypatch.setenv("MY_TEAM_KEY", OPENAI_KEY)
    write_own_config({"provider": "openai", "api_key_env": "MY_TEAM_KEY"})
    resolved = resolve_provider(brain)
    assert resolved.has_credential and resolved.key_env == "MY_TEAM_KEY"


def test_bad_configs_become_warnings(brain, monkeypatch):
    (brain.path.parent / "config.json").write_text("{not json", encoding="utf-8")
    write_own_config({"provider": "nonesuch", "timeout": "soon"})
    resolved = resolve_provider(brain)
    text = " ".join(resolved.warnings)
    assert "could not be read" in text and "unknown provider" in text and "timeout" in text
    assert resolved.timeout == 60.0


def test_unknown_explicit_provider_is_a_user_error(brain):
    with pytest.raises(LlmConfigError, match="Unknown provider"):
        resolve_provider(brain, provider="skynet")


def test_key_never_in_repr_or_description(brain, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    resolved = resolve_provider(brain)
    shown = repr(resolved) + json.dumps(resolved.describe()) + resolved.label() + resolved.missing_credential()
    assert ANTHROPIC_KEY not in shown and resolved.describe()["key_set"] is True


def test_describe_provider_for_display(brain, monkeypatch):
    from cleo_tui.llm.resolve import describe_provider
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    shown = describe_provider(brain, model="gpt-x")
    assert (shown["provider"], shown["model"], shown["has_credential"], shown["label"]) == (
        "openai", "gpt-x", True, "openai · gpt-x")
    assert OPENAI_KEY not in json.dumps(shown)
