"""Confluent's compatibility rules for JSON Schema objects and arrays: properties, content models, items.

A content model says what an object may hold besides its declared ``properties`` (an array, besides its
tuple ``items``): *open* (``additionalProperties`` absent or ``true``, no ``patternProperties``) holds
anything, *closed* (``additionalProperties: false``) nothing, *partially open* what a
``patternProperties`` or ``additionalProperties`` schema allows. Adding a property is safe when the
writer's model was closed (old data never had it) or covered it with a compatible schema; removing one
is safe when the reader's model is open or covers it. ``compare`` is :func:`.json_schema_compat.compare`,
passed in so that this module needs nothing else from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from webapp.schemas.formats.json_schema_model import Shape
from webapp.schemas.formats.json_schema_parse import Node, child
from webapp.schemas.formats.json_schema_scalars import limit

if TYPE_CHECKING:
    from webapp.schemas.formats.json_schema_compat import _Context

Compare = Callable[["_Context", Node | Shape | None, Node | Shape | None], None]
_LIMIT_CODES = {
    "maxProperties": "MAX_PROPERTIES",
    "minProperties": "MIN_PROPERTIES",
    "maxItems": "MAX_ITEMS",
    "minItems": "MIN_ITEMS",
    "maxContains": "MAX_CONTAINS",
    "minContains": "MIN_CONTAINS",
}
_TUPLE_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def compare_object(ctx: _Context, original: Shape, update: Shape, compare: Compare) -> None:
    _compare_required(ctx, original, update)
    _compare_properties(ctx, original, update, compare)
    _compare_dependencies(ctx, original, update, compare)
    _compare_additional(ctx, original, update, compare, ("additionalProperties", "additionalProperties"), "PROPERTIES")
    _compare_unevaluated(ctx, original, update, compare, "unevaluatedProperties", "PROPERTIES")
    for keyword in ("maxProperties", "minProperties"):
        _limit(ctx, update.node.pointer, keyword, original.keywords.get(keyword), update.keywords.get(keyword))


def compare_array(ctx: _Context, original: Shape, update: Shape, compare: Compare) -> None:
    pointer = update.node.pointer
    compare(ctx, _all_items(original), _all_items(update))
    _compare_tuple(ctx, original, update, compare)
    _compare_additional(ctx, original, update, compare, (_additional_items_keyword(original), _additional_items_keyword(update)), "ITEMS")
    _compare_unevaluated(ctx, original, update, compare, "unevaluatedItems", "ITEMS")
    for keyword in ("maxItems", "minItems", "maxContains", "minContains"):
        _limit(ctx, pointer, keyword, original.keywords.get(keyword), update.keywords.get(keyword))
    before, after = original.keywords.get("uniqueItems") is True, update.keywords.get("uniqueItems") is True
    if before != after:
        ctx.add("UNIQUE_ITEMS_REMOVED" if before else "UNIQUE_ITEMS_ADDED", f"{pointer}/uniqueItems")


def _limit(ctx: _Context, pointer: str, keyword: str, before: Any, after: Any) -> None:
    """A count limit, which only an integer sets (a boolean is not a count)."""
    counts = [value if isinstance(value, int) and not isinstance(value, bool) else None for value in (before, after)]
    limit(ctx, pointer, keyword, counts[0], counts[1], _LIMIT_CODES[keyword])


def _properties(value: Shape) -> Mapping[str, Any]:
    properties = value.keywords.get("properties")
    return properties if isinstance(properties, dict) else {}


def _required(value: Shape) -> set[str]:
    required = value.keywords.get("required")
    return {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()


def _has_default(value: Shape, name: str) -> bool:
    schema = _properties(value).get(name)
    return isinstance(schema, dict) and "default" in schema


def _compare_required(ctx: _Context, original: Shape, update: Shape) -> None:
    before, after = _required(original), _required(update)
    in_both = _properties(original).keys() & _properties(update).keys()
    for name in sorted(in_both):
        where = f"{update.node.pointer}/required/{name}"
        if name in before and name not in after:
            ctx.add("REQUIRED_ATTRIBUTE_REMOVED", where)
        elif name in after and name not in before:
            if _has_default(update, name):
                ctx.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", where)
            else:
                ctx.add("REQUIRED_ATTRIBUTE_ADDED", where, f"property {name!r} is now required and has no default")


def _additional(value: Shape, keyword: str) -> tuple[bool, Any]:
    """(whether more members are permitted, the schema they must match or None) — everit's reading of the keyword."""
    declared = value.keywords.get(keyword, True)
    if isinstance(declared, bool):
        return declared, None
    return True, declared


def _unevaluated(value: Shape, keyword: str) -> Any:
    """``unevaluatedProperties`` / ``unevaluatedItems`` (2019-09 on), which close or narrow a model when ``additional*`` is absent."""
    return value.keywords.get("unevaluatedProperties" if keyword == "additionalProperties" else "unevaluatedItems")


def _is_empty(schema: Any) -> bool:
    return schema is True or schema == {}


def _is_open(value: Shape, keyword: str) -> bool:
    permits, schema = _additional(value, keyword)
    patterns = value.keywords.get("patternProperties") if keyword == "additionalProperties" else None
    unevaluated = _unevaluated(value, keyword)
    return permits and schema is None and not patterns and (unevaluated is None or _is_empty(unevaluated))


def _partial_schema(value: Shape, keyword: str, name: str | None) -> Node | None:
    """The schema a partially open content model gives a member ``name`` (a property name, or None for an item)."""
    patterns = value.keywords.get("patternProperties") if keyword == "additionalProperties" else None
    if isinstance(patterns, dict) and name is not None:
        for pattern, schema in patterns.items():
            if _matches(pattern, name):
                return child(value.node, schema, "patternProperties", pattern)
    permits, schema = _additional(value, keyword)
    if schema is not None:
        return child(value.node, schema, keyword)
    unevaluated = _unevaluated(value, keyword)
    if permits and isinstance(unevaluated, dict) and unevaluated:
        name = "unevaluatedProperties" if keyword == "additionalProperties" else "unevaluatedItems"
        return child(value.node, unevaluated, name)
    return None


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:  # an ECMA-262 pattern Python cannot compile matches nothing here
        return False


def _compare_properties(ctx: _Context, original: Shape, update: Shape, compare: Compare) -> None:
    before, after = _properties(original), _properties(update)
    for name in sorted(before.keys() | after.keys()):
        where = f"{update.node.pointer}/properties/{name}"
        if name not in after:
            _member_removed(ctx, where, update, "additionalProperties", name, child(original.node, before[name], "properties", name), compare, "PROPERTY")
        elif name not in before:
            _property_added(ctx, where, original, update, name, compare)
        else:
            compare(ctx, child(original.node, before[name], "properties", name), child(update.node, after[name], "properties", name))


def _member_removed(ctx: _Context, where: str, update: Shape, keyword: str, name: str | None, removed: Node, compare: Compare, noun: str) -> None:
    """A property (or tuple item) the writer declared and the reader does not: only the reader's content model counts."""
    if _is_open(update, keyword):
        ctx.add(f"{noun}_REMOVED_FROM_OPEN_CONTENT_MODEL", where)
        return
    partial = _partial_schema(update, keyword, name)
    if partial is not None:
        sub = ctx.sub()
        compare(sub, removed, partial)
        ctx.extend(sub.found)
        covered = "IS_COVERED" if sub.compatible else "NOT_COVERED"
        ctx.add(f"{noun}_REMOVED_{covered}_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
    elif removed.contents is False:
        ctx.add(f"{noun}_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", where)
    else:
        ctx.add(f"{noun}_REMOVED_FROM_CLOSED_CONTENT_MODEL", where, "the reader's closed content model refuses what old data holds there")


def _property_added(ctx: _Context, where: str, original: Shape, update: Shape, name: str, compare: Compare) -> None:
    added = child(update.node, _properties(update)[name], "properties", name)
    if _is_open(original, "additionalProperties"):
        if _is_empty(added.contents):
            ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", where)
        elif name in _required(update):
            code = (
                "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL" if _has_default(update, name) else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
            )
            ctx.add(code, where, "old data may hold anything under this name")
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where, "old data may hold anything under this name")
        return
    partial = _partial_schema(original, "additionalProperties", name)
    if partial is not None:
        sub = ctx.sub()
        compare(sub, partial, added)
        ctx.extend(sub.found)
        covered = "IS_COVERED" if sub.compatible else "NOT_COVERED"
        ctx.add(f"PROPERTY_ADDED_{covered}_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
    if name in _required(update):
        if _has_default(update, name):
            ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", where)
        else:
            ctx.add("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", where, "old data does not have this required property")
    else:
        ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", where)


def _dependencies(value: Shape) -> tuple[dict[str, set[str]], dict[str, Any]]:
    """Property dependencies (name -> names) and schema dependencies (name -> schema), from any draft's keywords."""
    arrays: dict[str, set[str]] = {}
    schemas: dict[str, Any] = {}
    for keyword in ("dependencies", "dependentRequired", "dependentSchemas"):
        declared = value.keywords.get(keyword)
        if not isinstance(declared, dict):
            continue
        for name, dependency in declared.items():
            if isinstance(dependency, list):
                arrays[name] = {item for item in dependency if isinstance(item, str)}
            else:
                schemas[name] = (keyword, dependency)
    return arrays, schemas


def _compare_dependencies(ctx: _Context, original: Shape, update: Shape, compare: Compare) -> None:
    (before_arrays, before_schemas), (after_arrays, after_schemas) = _dependencies(original), _dependencies(update)
    pointer = f"{update.node.pointer}/dependencies"
    for name in sorted(before_arrays.keys() | after_arrays.keys()):
        old, new = before_arrays.get(name), after_arrays.get(name)
        if new is None:
            ctx.add("DEPENDENCY_ARRAY_REMOVED", f"{pointer}/{name}")
        elif old is None:
            ctx.add("DEPENDENCY_ARRAY_ADDED", f"{pointer}/{name}", f"{name!r} now requires {sorted(new)}")
        elif old != new:
            code = "DEPENDENCY_ARRAY_EXTENDED" if new > old else "DEPENDENCY_ARRAY_NARROWED" if new < old else "DEPENDENCY_ARRAY_CHANGED"
            ctx.add(code, f"{pointer}/{name}", f"{sorted(old)} -> {sorted(new)}")
    for name in sorted(before_schemas.keys() | after_schemas.keys()):
        if name not in after_schemas:
            ctx.add("DEPENDENCY_SCHEMA_REMOVED", f"{pointer}/{name}")
        elif name not in before_schemas:
            ctx.add("DEPENDENCY_SCHEMA_ADDED", f"{pointer}/{name}", f"a schema now applies when {name!r} is present")
        else:
            (old_keyword, old_schema), (new_keyword, new_schema) = before_schemas[name], after_schemas[name]
            compare(ctx, child(original.node, old_schema, old_keyword, name), child(update.node, new_schema, new_keyword, name))


def _compare_additional(ctx: _Context, original: Shape, update: Shape, compare: Compare, keywords: tuple[str, str], noun: str) -> None:
    before_keyword, after_keyword = keywords
    where = f"{update.node.pointer}/{after_keyword}"
    (before_permits, before_schema), (after_permits, after_schema) = _additional(original, before_keyword), _additional(update, after_keyword)
    if before_permits != after_permits:
        if after_permits:
            ctx.add(f"ADDITIONAL_{noun}_ADDED", where)
        else:
            ctx.add(f"ADDITIONAL_{noun}_REMOVED", where, f"{after_keyword} is now false")
    elif before_schema is None and after_schema is not None:
        ctx.add(f"ADDITIONAL_{noun}_NARROWED", where, f"{after_keyword} now has a schema")
    elif after_schema is None and before_schema is not None:
        ctx.add(f"ADDITIONAL_{noun}_EXTENDED", where)
    elif before_schema is not None and after_schema is not None:
        compare(ctx, child(original.node, before_schema, before_keyword), child(update.node, after_schema, after_keyword))


def _compare_unevaluated(ctx: _Context, original: Shape, update: Shape, compare: Compare, keyword: str, noun: str) -> None:
    before, after = original.keywords.get(keyword), update.keywords.get(keyword)
    if before is None and after is None:
        return
    where = f"{update.node.pointer}/{keyword}"
    if before is None:
        ctx.add(f"UNEVALUATED_{noun}_REMOVED" if after is False else f"UNEVALUATED_{noun}_NARROWED", where, f"{keyword} added")
    elif after is None:
        ctx.add(f"UNEVALUATED_{noun}_ADDED" if before is False else f"UNEVALUATED_{noun}_EXTENDED", where)
    elif before is False and after is not False:
        ctx.add(f"UNEVALUATED_{noun}_ADDED", where)
    elif before is not False and after is False:
        ctx.add(f"UNEVALUATED_{noun}_REMOVED", where, f"{keyword} is now false")
    elif _is_empty(before) and not _is_empty(after):
        ctx.add(f"UNEVALUATED_{noun}_NARROWED", where, f"{keyword} now has a schema")
    elif not _is_empty(before) and _is_empty(after):
        ctx.add(f"UNEVALUATED_{noun}_EXTENDED", where)
    else:
        compare(ctx, child(original.node, before, keyword), child(update.node, after, keyword))


def _uses_prefix_items(value: Shape) -> bool:
    return value.node.draft == _TUPLE_DRAFT or "prefixItems" in value.keywords


def _items_are_additional(value: Shape) -> bool:
    """2020-12's ``items`` says what follows ``prefixItems``; a boolean ``items`` is read the same way (as Confluent does)."""
    return _uses_prefix_items(value) and ("prefixItems" in value.keywords or isinstance(value.keywords.get("items"), bool))


def _additional_items_keyword(value: Shape) -> str:
    """Where an array says what follows its tuple: ``additionalItems``, or 2020-12's ``items``."""
    return "items" if _items_are_additional(value) else "additionalItems"


def _all_items(value: Shape) -> Node | None:
    """The one schema every item matches (``items`` as a schema, not a tuple), or None."""
    if _items_are_additional(value):
        return None
    items = value.keywords.get("items")
    return None if items is None or isinstance(items, list) else child(value.node, items, "items")


def _tuple(value: Shape) -> list[Node]:
    keyword = "prefixItems" if _uses_prefix_items(value) and "prefixItems" in value.keywords else "items"
    items = value.keywords.get(keyword)
    return [child(value.node, item, keyword, index) for index, item in enumerate(items)] if isinstance(items, list) else []


def _compare_tuple(ctx: _Context, original: Shape, update: Shape, compare: Compare) -> None:
    before, after = _tuple(original), _tuple(update)
    for old, new in zip(before, after):
        compare(ctx, old, new)
    for index, old in enumerate(before[len(after) :], start=len(after)):
        where = f"{update.node.pointer}/items/{index}"
        _member_removed(ctx, where, update, _additional_items_keyword(update), None, old, compare, "ITEM")
    for index, new in enumerate(after[len(before) :], start=len(before)):
        _item_added(ctx, f"{update.node.pointer}/items/{index}", original, new, compare)


def _item_added(ctx: _Context, where: str, original: Shape, added: Node, compare: Compare) -> None:
    keyword = _additional_items_keyword(original)
    if _is_open(original, keyword):
        if _is_empty(added.contents):
            ctx.add("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", where)
        else:
            ctx.add("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", where, "old data may hold anything at this position")
        return
    partial = _partial_schema(original, keyword, None)
    if partial is None:
        ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", where)
        return
    sub = ctx.sub()
    compare(sub, partial, added)
    ctx.extend(sub.found)
    ctx.add(f"ITEM_ADDED_{'IS' if sub.compatible else 'NOT'}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
