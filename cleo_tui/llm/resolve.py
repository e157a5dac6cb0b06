"""Which provider, model, endpoint and credential a call uses.

Resolution order, first answer wins (as in the issue):
  1. the caller's explicit choice (CLI `--provider/--model/--base-url`, TUI fields);
  2. `CLEO_OBSERVER_MODEL` for the model;
  3. CLEO's project config: `llm.roles.consolidation`, then `llm.default`;
  4. cleo-tui's own config file (`llm` section);
  5. the first provider whose key is in the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY);
  6. Anthropic, CLEO's implicit fallback.
A model is only taken from a source that names no provider or the chosen one,
so `--provider openai` never inherits a Claude model from a config file.

Keys come from the environment only (never from a config file): the key's
variable name may be configured (`llm.api_key_env`), not its value. The key is
kept out of `repr`, `describe()` and every message.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.project_config import ProjectSettings, load_project_settings
from cleo_tui.brain.store import Brain
from cleo_tui.config import load_config
from cleo_tui.safe_text import one_line

ANTHROPIC = "anthropic"
OPENAI = "openai"
COMPATIBLE = "openai-compatible"
PROVIDERS = (ANTHROPIC, OPENAI, COMPATIBLE)
_ALIASES = {"claude": ANTHROPIC, "openai_compatible": COMPATIBLE, "compatible": COMPATIBLE,
            "local": COMPATIBLE, "ollama": COMPATIBLE, "lmstudio": COMPATIBLE, "vllm": COMPATIBLE}

DEFAULT_MODELS = {ANTHROPIC: "claude-haiku-4-5", OPENAI: "gpt-4.1-mini", COMPATIBLE: "default"}
KEY_ENV = {ANTHROPIC: "ANTHROPIC_API_KEY", OPENAI: "OPENAI_API_KEY", COMPATIBLE: "OPENAI_API_KEY"}
BASE_URL_ENV = {ANTHROPIC: "ANTHROPIC_BASE_URL", OPENAI: "OPENAI_BASE_URL", COMPATIBLE: "OPENAI_BASE_URL"}
MODEL_ENV = "CLEO_OBSERVER_MODEL"
ALLOW_HOSTS_ENV = "CLEO_TUI_ALLOW_HOSTS"  # comma-separated hosts a project's base URL may name
PROJECT_SOURCE = ".cleo/config.json"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_DEADLINE = 75.0  # one model call (SDK loading, connecting, the answer, every retry) never takes longer
MAX_TIMEOUT = 600.0
MAX_RETRIES = 10
# Local servers rarely check keys, but the OpenAI SDK insists on one.
NO_KEY_PLACEHOLDER = "no-key"


class LlmConfigError(BrainError):
    """An explicit provider choice that cannot work (unknown name, bad number)."""


@dataclass(frozen=True)
class Source:
    """One place a provider/model/base URL may come from."""

    name: str
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None


@dataclass(frozen=True)
class Resolved:
    """The provider a call will use. `api_key` never leaves this object."""

    provider: str
    model: str
    base_url: str | None
    api_key: str | None = field(repr=False)
    key_env: str
    provider_source: str
    model_source: str
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    deadline: float = DEFAULT_DEADLINE
    warnings: tuple[str, ...] = ()
    refused_host: str | None = None  # a project file's base URL the user never allowed

    @property
    def has_credential(self) -> bool:
        """Anthropic and OpenAI need a key; an OpenAI-compatible server needs a base URL."""
        if self.refused_host:
            return False
        if self.provider == COMPATIBLE:
            return bool(self.base_url)
        return bool(self.api_key)

    def missing_credential(self) -> str:
        """One paragraph on what to set (names of variables, never values)."""
        if self.refused_host:
            host = one_line(self.refused_host, 120)
            return (f"The project's .cleo/config.json sends model calls to {host}, a host you have not allowed; "
                    f"nothing was sent (your key and the brain's text stay here). If you trust it, allow it with "
                    f"{ALLOW_HOSTS_ENV}={host}, llm.allow_hosts in cleo-tui's config file, or --base-url.")
        if self.provider == COMPATIBLE:
            return ("The OpenAI-compatible provider needs a base URL: set OPENAI_BASE_URL, pass "
                    "--base-url, or put llm.base_url in cleo-tui's config file.")
        return (f"No API key for {self.provider}: set {self.key_env} in the environment "
                f"(or choose another provider with --provider). Nothing was sent.")

    def describe(self) -> dict[str, Any]:
        """Everything about the choice that may be shown: no key, only whether one is set."""
        return {
            "provider": self.provider, "model": self.model, "base_url": display_url(self.base_url),
            "key_env": self.key_env, "key_set": bool(self.api_key) and self.api_key != NO_KEY_PLACEHOLDER,
            "provider_source": self.provider_source, "model_source": self.model_source,
            "timeout": self.timeout, "max_retries": self.max_retries, "deadline": self.deadline,
            "warnings": list(self.warnings),
        }

    def label(self) -> str:
        """Short display form, e.g. `anthropic · claude-haiku-4-5`."""
        where = f" @ {display_url(self.base_url)}" if self.base_url else ""
        return f"{self.provider} · {self.model}{where}"


def url_host(url: str | None) -> str | None:
    """The host (lower case) a URL names, or None."""
    if not url:
        return None
    try:
        return (urlsplit(url).hostname or "").lower() or None
    except ValueError:
        return None


def display_url(url: str | None) -> str | None:
    """`url` without its user info (a key may hide in `user:pass@`), printable."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        if "@" in parts.netloc:
            parts = parts._replace(netloc=parts.netloc.rsplit("@", 1)[1])
        return one_line(urlunsplit(parts), 300)
    except ValueError:
        return "(a malformed URL)"


def _allowed_hosts(own: dict[str, Any], name: str) -> set[str]:
    """Hosts the user allowed a project's base URL to name: env, own config, the provider's env URL."""
    hosts = {h.strip().lower() for h in os.environ.get(ALLOW_HOSTS_ENV, "").split(",") if h.strip()}
    listed = own.get("allow_hosts")
    if isinstance(listed, list):
        hosts |= {h.strip().lower() for h in listed if isinstance(h, str) and h.strip()}
    for url in (os.environ.get(BASE_URL_ENV[name]), _text(own.get("base_url"))):
        host = url_host(url)
        if host:
            hosts.add(host)
    return hosts


def normalise_provider(name: Any) -> str | None:
    """A known provider name (aliases accepted), or None."""
    if not isinstance(name, str) or not name.strip():
        return None
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    return key if key in PROVIDERS else None


def provider_for_model(model: str) -> str | None:
    """Guess the provider from a well-known model name (claude-*, gpt-*, o1/o3/o4 ...)."""
    name = model.strip().lower()
    if name.startswith("claude"):
        return ANTHROPIC
    if name.startswith(("gpt-", "chatgpt")) or re.match(r"^o\d", name):
        return OPENAI
    return None


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _config_source(name: str, entry: dict[str, Any], warnings: list[str]) -> Source:
    provider = normalise_provider(entry.get("provider"))
    if entry.get("provider") is not None and provider is None:
        warnings.append(f"{name}: unknown provider ignored (known: {', '.join(PROVIDERS)}).")
    return Source(name, provider, _text(entry.get("model")),
                  _text(entry.get("base_url")) or _text(entry.get("baseUrl")))


def _sources(explicit: Source, project: ProjectSettings, own: dict[str, Any],
             warnings: list[str]) -> list[Source]:
    env_model = _text(os.environ.get(MODEL_ENV))
    return [
        explicit,
        Source(MODEL_ENV, model=env_model),
        _config_source(".cleo/config.json llm.roles.consolidation", project.llm_entry("roles", "consolidation"),
                       warnings),
        _config_source(".cleo/config.json llm.default", project.llm_entry("default"), warnings),
        _config_source("cleo-tui config llm", own, warnings),
    ]


def _choose_provider(sources: list[Source]) -> tuple[str, str]:
    for source in sources:
        if source.provider:
            return source.provider, source.name
    for source in sources:  # a well-known model name implies its provider
        if source.model and provider_for_model(source.model):
            return provider_for_model(source.model), f"{source.name} (model name)"  # type: ignore[return-value]
    for provider in (ANTHROPIC, OPENAI):
        if os.environ.get(KEY_ENV[provider]):
            return provider, f"{KEY_ENV[provider]} is set"
    return ANTHROPIC, "default (CLEO's fallback)"


def _first_matching(sources: list[Source], provider: str, attr: str) -> tuple[str | None, str | None]:
    for source in sources:
        value = getattr(source, attr)
        if value and source.provider in (None, provider):
            return value, source.name
    return None, None


def _number(value: Any, default: float, name: str, warnings: list[str], high: float = MAX_TIMEOUT) -> float:
    """A setting in [0, high]; anything else (a string, NaN, 1e30) is the default, with a warning."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
        warnings.append(f"cleo-tui config llm.{name} is not a number from 0 to {high:g}; using {default:g}.")
        return default
    return float(value)


def _bounded(value: float, low: float, high: float) -> float:
    return min(high, max(low, value)) if value == value else high


def resolve_provider(brain: Brain | None = None, provider: str | None = None, model: str | None = None,
                     base_url: str | None = None, timeout: float | None = None,
                     max_retries: int | None = None) -> Resolved:
    """Resolve provider, model, base URL and key for one call (never touches the network).

    Raises LlmConfigError only for an explicit, unknown `provider` name.
    """
    warnings: list[str] = []
    chosen = normalise_provider(provider) if provider else None
    if provider and chosen is None:
        raise LlmConfigError(f"Unknown provider {provider!r}. Choose one of: {', '.join(PROVIDERS)}.")
    project = load_project_settings(brain) if brain is not None else ProjectSettings(path=None, raw={})
    if project.warning:
        warnings.append(project.warning)
    own_config, problem = load_config()
    if problem:
        warnings.append(problem)
    llm_entry = own_config.get("llm")
    own: dict[str, Any] = llm_entry if isinstance(llm_entry, dict) else {}
    explicit = Source("command line", chosen, _text(model), _text(base_url))
    sources = _sources(explicit, project, own, warnings)
    name, provider_source = _choose_provider(sources)
    chosen_model, model_source = _first_matching(sources, name, "model")
    url, url_source = _first_matching(sources, name, "base_url")
    url = url or _text(os.environ.get(BASE_URL_ENV[name]))
    refused = None
    if url_source and url_source.startswith(PROJECT_SOURCE) and url_host(url) not in _allowed_hosts(own, name):
        refused = url_host(url) or one_line(url, 120)  # a repository's file must not pick where the key goes
    key_env = KEY_ENV[name]
    if normalise_provider(own.get("provider")) in (None, name) and _text(own.get("api_key_env")):
        key_env = _text(own.get("api_key_env"))  # type: ignore[assignment]
    key = os.environ.get(key_env) or None
    if name == COMPATIBLE and not key:
        key = NO_KEY_PLACEHOLDER if url else None
    if refused:
        key = None
    return Resolved(
        provider=name, model=chosen_model or DEFAULT_MODELS[name], base_url=url, api_key=key,
        key_env=key_env, provider_source=provider_source, model_source=model_source or "default",
        timeout=_bounded(timeout if timeout is not None
                         else _number(own.get("timeout"), DEFAULT_TIMEOUT, "timeout", warnings), 0.1, MAX_TIMEOUT),
        max_retries=int(_bounded(max_retries if max_retries is not None
                                 else _number(own.get("max_retries"), DEFAULT_MAX_RETRIES, "max_retries", warnings,
                                              MAX_RETRIES), 0, MAX_RETRIES)),
        deadline=_bounded(_number(own.get("deadline"), DEFAULT_DEADLINE, "deadline", warnings), 0.1, MAX_TIMEOUT),
        warnings=tuple(warnings), refused_host=refused,
    )


def describe_provider(brain: Brain | None = None, provider: str | None = None, model: str | None = None,
                      base_url: str | None = None) -> dict[str, Any]:
    """What a call would use, for display: provider, model, base URL, where each came from,
    whether a key is set (never the key), warnings, and `has_credential`."""
    resolved = resolve_provider(brain, provider, model, base_url)
    return {**resolved.describe(), "has_credential": resolved.has_credential, "label": resolved.label()}
