"""Timestamps in the formats the brain's owners use."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)


def cleo_timestamp(moment: datetime | None = None) -> str:
    """CLEO's column format: UTC `YYYY-MM-DD HH:MM:SS`."""
    return (moment or utc_now()).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def iso_timestamp(moment: datetime | None = None) -> str:
    """hippo's format: ISO-8601 UTC with milliseconds and `Z`."""
    moment = (moment or utc_now()).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


NOW_VARIABLE = "CLEO_TUI_NOW"


def current_time() -> datetime:
    """The "now" date arithmetic counts from: $CLEO_TUI_NOW (ISO-8601; UTC when it names no zone)
    when set and readable, so tests and screenshots on a demo brain read the same every day; else now."""
    import os

    fixed = os.environ.get(NOW_VARIABLE, "").strip()
    if fixed:
        try:
            moment = datetime.fromisoformat(fixed)
        except ValueError:
            return utc_now()
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return utc_now()
