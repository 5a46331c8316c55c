"""Topic configs as people read them: ``604800000`` (retention.ms) is "7 days",
``9223372036854775807`` is "unlimited", ``1073741824`` (segment.bytes) is "1 GiB".

Pure functions over a config's name, Kafka type and raw string value (the catalog's); the page
keeps the raw value on hover. Durations are the ``*.ms`` configs, sizes the ``*.bytes`` ones;
-1 and Long.MAX mean "no limit" for both, as in Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass

from weir.topic_config import LONG_MAX, TOPIC_CONFIGS

# Duration units, largest first: (milliseconds, singular name).
_DURATION_UNITS = [(86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute"), (1_000, "second"), (1, "millisecond")]
# Binary size units, largest first.
_SIZE_UNITS = [(1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")]
UNLIMITED = "unlimited"


@dataclass(frozen=True)
class ConfigRow:
    """One row of a topic's configs: the readable value, the raw one, and the default's."""

    name: str
    raw: str
    shown: str
    is_default: bool
    default_raw: str
    default_shown: str
    documentation: str


def readable_duration(milliseconds: int) -> str:
    """``90_000`` -> "1 minute 30 seconds"; 0 -> "0 milliseconds"."""
    if milliseconds == 0:
        return "0 milliseconds"
    parts = []
    rest = milliseconds
    for size, name in _DURATION_UNITS:
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count:,} {name}{'s' if count != 1 else ''}")
    return " ".join(parts)


def readable_size(size: int) -> str:
    """``1073741824`` -> "1 GiB"; a size that is no whole number of a unit keeps its bytes:
    ``1048588`` -> "1,048,588 bytes (1.0 MiB)"."""
    for unit, name in _SIZE_UNITS:
        if size >= unit and size % unit == 0:
            return f"{size // unit:,} {name}"
    for unit, name in _SIZE_UNITS:
        if size >= unit:
            return f"{size:,} bytes ({size / unit:.1f} {name})"
    return f"{size:,} byte{'s' if size != 1 else ''}"


def readable_config(name: str, raw: str) -> str:
    """The value of config ``name`` as people read it; the raw text when it does not parse."""
    spec = TOPIC_CONFIGS.get(name)
    config_type = spec.type if spec is not None else "STRING"
    if config_type in ("INT", "LONG"):
        try:
            number = int(raw.strip())
        except ValueError:
            return raw
        if (number < 0 or number == LONG_MAX) and (name.endswith((".ms", ".bytes", ".messages"))):
            return UNLIMITED
        if name.endswith(".ms"):
            return readable_duration(number)
        if name.endswith(".bytes"):
            return readable_size(number)
        return f"{number:,}"
    if config_type == "BOOLEAN":
        return {"true": "enabled", "false": "disabled"}.get(raw.strip().lower(), raw)
    if config_type == "DOUBLE":
        try:
            ratio = float(raw)
        except ValueError:
            return raw
        return f"{raw} ({ratio:.0%})" if name.endswith(".ratio") else raw
    if config_type == "LIST":
        return ", ".join(part.strip() for part in raw.split(",") if part.strip())
    return raw


def config_rows(overrides: dict[str, str]) -> list[ConfigRow]:
    """Every topic config, the ones set on the topic (differing from the default) first, each group by name."""
    rows = [
        ConfigRow(
            name=name,
            raw=overrides.get(name, spec.default),
            shown=readable_config(name, overrides.get(name, spec.default)),
            is_default=name not in overrides,
            default_raw=spec.default,
            default_shown=readable_config(name, spec.default),
            documentation=spec.documentation,
        )
        for name, spec in TOPIC_CONFIGS.items()
    ]
    return sorted(rows, key=lambda row: (row.is_default, row.name))
