"""Confluent's compatibility rules for JSON Schema strings, numbers, enums and consts: limits that accept less are incompatible.

A limit (``maxLength``, ``minimum``, ``maxItems``...) is compared as Confluent does: ``<PREFIX>_ADDED``,
``_REMOVED``, ``_INCREASED`` or ``_DECREASED``; which of those are compatible is decided by the caller's
list (:data:`.json_schema_compat.COMPATIBLE`). Draft-04's boolean ``exclusiveMaximum`` / ``exclusiveMinimum``
turn ``maximum`` / ``minimum`` into exclusive limits, read the same way as draft-06's numeric ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from webapp.schemas.formats.json_schema_model import Shape

if TYPE_CHECKING:
    from webapp.schemas.formats.json_schema_compat import _Context


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def limit(ctx: _Context, pointer: str, keyword: str, original: Any, update: Any, prefix: str) -> None:
    """A numeric limit added, removed, increased or decreased: ``prefix`` + _ADDED / _REMOVED / _INCREASED / _DECREASED."""
    before, after = _number(original), _number(update)
    if before == after:
        return
    where = f"{pointer}/{keyword}"
    if before is None:
        ctx.add(f"{prefix}_ADDED", where, f"{keyword} {update} added")
    elif after is None:
        ctx.add(f"{prefix}_REMOVED", where, f"{keyword} {original} removed")
    elif before < after:
        ctx.add(f"{prefix}_INCREASED", where, f"{keyword} {original} -> {update}")
    else:
        ctx.add(f"{prefix}_DECREASED", where, f"{keyword} {original} -> {update}")


def compare_string(ctx: _Context, original: Shape, update: Shape) -> None:
    before, after, pointer = original.keywords, update.keywords, update.node.pointer
    limit(ctx, pointer, "maxLength", before.get("maxLength"), after.get("maxLength"), "MAX_LENGTH")
    limit(ctx, pointer, "minLength", before.get("minLength"), after.get("minLength"), "MIN_LENGTH")
    old_pattern, new_pattern = before.get("pattern"), after.get("pattern")
    if old_pattern is None and new_pattern is not None:
        ctx.add("PATTERN_ADDED", f"{pointer}/pattern", f"pattern {new_pattern!r} added")
    elif old_pattern is not None and new_pattern is None:
        ctx.add("PATTERN_REMOVED", f"{pointer}/pattern")
    elif old_pattern != new_pattern:
        ctx.add("PATTERN_CHANGED", f"{pointer}/pattern", f"pattern {old_pattern!r} -> {new_pattern!r}")


def _exclusive(keywords: Mapping[str, Any], keyword: str, bound: str) -> Any:
    """The exclusive limit: draft-04's boolean ``exclusiveMaximum`` makes ``maximum`` exclusive."""
    value = keywords.get(keyword)
    if isinstance(value, bool):
        return keywords.get(bound) if value else None
    return value


def _inclusive(keywords: Mapping[str, Any], keyword: str, exclusive: str) -> Any:
    return None if keywords.get(exclusive) is True else keywords.get(keyword)


def compare_number(ctx: _Context, original: Shape, update: Shape) -> None:
    before, after, pointer = original.keywords, update.keywords, update.node.pointer
    limit(ctx, pointer, "maximum", _inclusive(before, "maximum", "exclusiveMaximum"), _inclusive(after, "maximum", "exclusiveMaximum"), "MAXIMUM")
    limit(ctx, pointer, "minimum", _inclusive(before, "minimum", "exclusiveMinimum"), _inclusive(after, "minimum", "exclusiveMinimum"), "MINIMUM")
    limit(
        ctx,
        pointer,
        "exclusiveMaximum",
        _exclusive(before, "exclusiveMaximum", "maximum"),
        _exclusive(after, "exclusiveMaximum", "maximum"),
        "EXCLUSIVE_MAXIMUM",
    )
    limit(
        ctx,
        pointer,
        "exclusiveMinimum",
        _exclusive(before, "exclusiveMinimum", "minimum"),
        _exclusive(after, "exclusiveMinimum", "minimum"),
        "EXCLUSIVE_MINIMUM",
    )
    _compare_multiple_of(ctx, f"{pointer}/multipleOf", _number(before.get("multipleOf")), _number(after.get("multipleOf")))
    if original.requires_integer != update.requires_integer:
        if original.requires_integer:
            ctx.add("TYPE_EXTENDED", pointer, "integer -> number")
        else:
            ctx.add("TYPE_NARROWED", pointer, "number -> integer")


def _compare_multiple_of(ctx: _Context, where: str, before: Decimal | None, after: Decimal | None) -> None:
    if before == after:
        return
    if before is None:
        ctx.add("MULTIPLE_OF_ADDED", where, f"multipleOf {after} added")
    elif after is None:
        ctx.add("MULTIPLE_OF_REMOVED", where)
    elif before and after % before == 0:
        ctx.add("MULTIPLE_OF_EXPANDED", where, f"multipleOf {before} -> {after}: fewer numbers accepted")
    elif after and before % after == 0:
        ctx.add("MULTIPLE_OF_REDUCED", where, f"multipleOf {before} -> {after}")
    else:
        ctx.add("MULTIPLE_OF_CHANGED", where, f"multipleOf {before} -> {after}")


def _values(values: Any) -> set[str]:
    return {json.dumps(value, sort_keys=True) for value in values} if isinstance(values, list) else set()


def compare_enum(ctx: _Context, original: Shape, update: Shape) -> None:
    before, after = _values(original.keywords.get("enum")), _values(update.keywords.get("enum"))
    where = f"{update.node.pointer}/enum"
    if before == after:
        return
    if after >= before:
        ctx.add("ENUM_ARRAY_EXTENDED", where, f"values added: {', '.join(sorted(after - before))}")
    elif before >= after:
        ctx.add("ENUM_ARRAY_NARROWED", where, f"values removed: {', '.join(sorted(before - after))}")
    else:
        ctx.add("ENUM_ARRAY_CHANGED", where, f"values removed: {', '.join(sorted(before - after))}")


def compare_const(ctx: _Context, original: Shape, update: Shape) -> None:
    if original.keywords.get("const") != update.keywords.get("const"):
        ctx.add("ENUM_ARRAY_CHANGED", f"{update.node.pointer}/const", f"const {original.keywords.get('const')!r} -> {update.keywords.get('const')!r}")
