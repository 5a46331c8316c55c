"""How the message browser shows a record's bytes: as text, as pretty JSON, or as hex.

Pure functions over bytes; the browser renders their output inside ``<pre>`` with Django's
autoescaping, so nothing here needs to escape HTML. Very large payloads are cut at
``DISPLAY_LIMIT_BYTES`` so that one huge record cannot make the page unusable; the rendering
says when it did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

# Bytes of one key, value or header shown at most; the rest is summarised as a count.
DISPLAY_LIMIT_BYTES = 64 * 1024
# Bytes per line of a hex dump, as in `hexdump -C`.
HEX_BYTES_PER_LINE = 16


class Format(StrEnum):
    TEXT = "text"
    JSON = "json"
    HEX = "hex"


FORMAT_CHOICES = [(Format.TEXT.value, "Text"), (Format.JSON.value, "JSON (pretty)"), (Format.HEX.value, "Hex")]


@dataclass(frozen=True)
class RenderedBytes:
    """What a template shows for one payload.

    ``text`` is None for a null payload (Kafka distinguishes null from empty); ``note`` says
    why the requested format was not used or that the payload was truncated.
    """

    text: str | None
    size: int
    note: str = ""

    @property
    def is_null(self) -> bool:
        return self.text is None


def render_bytes(payload: bytes | None, requested: Format) -> RenderedBytes:
    """Render ``payload`` in the requested format, falling back to text (with a note) for
    JSON that does not parse and to hex for text that is not UTF-8."""
    if payload is None:
        return RenderedBytes(None, 0)
    shown = payload[:DISPLAY_LIMIT_BYTES]
    truncation = f"showing the first {len(shown)} of {len(payload)} bytes" if len(shown) < len(payload) else ""
    if requested is Format.HEX:
        return RenderedBytes(hex_dump(shown), len(payload), truncation)
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError:
        # A cut in the middle of a multi-byte character is not binary data.
        text = None if not truncation else shown.decode("utf-8", errors="ignore")
        if text is None:
            return RenderedBytes(hex_dump(shown), len(payload), _join("not UTF-8 text, shown as hex", truncation))
    if requested is Format.JSON and not truncation:
        try:
            return RenderedBytes(json.dumps(json.loads(text), indent=2, ensure_ascii=False, sort_keys=False), len(payload))
        except ValueError:
            return RenderedBytes(text, len(payload), "not valid JSON, shown as text")
    if requested is Format.JSON:
        return RenderedBytes(text, len(payload), _join("too large to parse as JSON, shown as text", truncation))
    return RenderedBytes(text, len(payload), truncation)


def hex_dump(payload: bytes) -> str:
    """``hexdump -C`` style: offset, 16 bytes in hex, and their printable ASCII."""
    lines = []
    for start in range(0, len(payload), HEX_BYTES_PER_LINE):
        chunk = payload[start : start + HEX_BYTES_PER_LINE]
        hex_part = " ".join(f"{byte:02x}" for byte in chunk)
        ascii_part = "".join(chr(byte) if 0x20 <= byte < 0x7F else "." for byte in chunk)
        lines.append(f"{start:08x}  {hex_part:<{HEX_BYTES_PER_LINE * 3 - 1}}  |{ascii_part}|")
    return "\n".join(lines)


def _join(*notes: str) -> str:
    return "; ".join(note for note in notes if note)
