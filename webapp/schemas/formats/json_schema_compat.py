"""Compatibility of two JSON Schemas, by Confluent Schema Registry's rules (its ``json.diff`` package).

The writer's schema (the "original") is compared with the reader's (the "update"), as Confluent's
``JsonSchema.isBackwardCompatible(previous)`` compares ``previous`` with itself: BACKWARD checks
(reader=new, writer=old), FORWARD the other way round, FULL both. Every change found is a
:class:`Difference` named as Confluent names it, at the JSON pointer where it is; the changes Confluent
accepts (:data:`COMPATIBLE`) are dropped and the rest are the incompatibilities. In short, the reader
must accept every document the writer accepts:

- a changed type is TYPE_CHANGED, ``integer`` -> ``number`` is TYPE_EXTENDED (compatible) and
  ``number`` -> ``integer`` TYPE_NARROWED; a type that becomes a oneOf/anyOf holding it is SUM_TYPE_EXTENDED;
- a constraint that accepts less is incompatible (MAX_LENGTH_DECREASED, MINIMUM_INCREASED, PATTERN_ADDED,
  ENUM_ARRAY_NARROWED, UNIQUE_ITEMS_ADDED, MULTIPLE_OF_EXPANDED...), one that accepts more is not;
- objects: making a property required is REQUIRED_ATTRIBUTE_ADDED (unless it has a default); what
  adding or removing a property means depends on the content model (``additionalProperties``): adding a
  property to an open model is PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL (old data may hold anything under that
  name), removing one from a closed model PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL; a partially open
  model (``patternProperties`` or an ``additionalProperties`` schema) covers the property if its schema is
  compatible;
- arrays: ``items`` are compared like properties, tuples item by item with the same content-model rules;
- allOf/anyOf/oneOf: subschemas are matched one to one (a maximum matching of compatible pairs); a
  changed criterion is COMBINED_TYPE_CHANGED unless it accepts more (-> anyOf, a singleton -> oneOf);
  more anyOf/oneOf subschemas is SUM_TYPE_EXTENDED, fewer SUM_TYPE_NARROWED; more allOf subschemas is
  PRODUCT_TYPE_EXTENDED (incompatible), fewer PRODUCT_TYPE_NARROWED.

Recursive schemas are compared once per pair of subschemas on a path; the whole comparison is bounded by
:data:`MAX_COMPARISONS` subschema pairs, past which it reports COMPARISON_LIMIT_EXCEEDED.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from webapp.schemas.formats.json_schema_containers import compare_array, compare_object
from webapp.schemas.formats.json_schema_model import Shape, part_identity, shape, shape_of
from webapp.schemas.formats.json_schema_parse import JsonSchema, Node, child
from webapp.schemas.formats.json_schema_scalars import compare_const, compare_enum, compare_number, compare_string

# Confluent's json SchemaDiff.COMPATIBLE_CHANGES_STRICT, its default (the ones this comparison can find).
COMPATIBLE = frozenset(
    {
        "ID_CHANGED",
        "DESCRIPTION_CHANGED",
        "TITLE_CHANGED",
        "DEFAULT_CHANGED",
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "MAX_LENGTH_INCREASED",
        "MAX_LENGTH_REMOVED",
        "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED",
        "PATTERN_REMOVED",
        "MAXIMUM_INCREASED",
        "MAXIMUM_REMOVED",
        "MINIMUM_DECREASED",
        "MINIMUM_REMOVED",
        "EXCLUSIVE_MAXIMUM_INCREASED",
        "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED",
        "EXCLUSIVE_MINIMUM_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "DEPENDENCY_ARRAY_NARROWED",
        "DEPENDENCY_ARRAY_REMOVED",
        "DEPENDENCY_SCHEMA_REMOVED",
        "MAX_PROPERTIES_INCREASED",
        "MAX_PROPERTIES_REMOVED",
        "MIN_PROPERTIES_DECREASED",
        "MIN_PROPERTIES_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "UNEVALUATED_PROPERTIES_ADDED",
        "UNEVALUATED_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "MAX_ITEMS_INCREASED",
        "MAX_ITEMS_REMOVED",
        "MIN_ITEMS_DECREASED",
        "MIN_ITEMS_REMOVED",
        "MAX_CONTAINS_INCREASED",
        "MAX_CONTAINS_REMOVED",
        "MIN_CONTAINS_DECREASED",
        "MIN_CONTAINS_REMOVED",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "UNEVALUATED_ITEMS_ADDED",
        "UNEVALUATED_ITEMS_EXTENDED",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ENUM_ARRAY_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    }
)
# Subschema pairs one comparison may visit: a bound on the work a pathological schema can cause (1.5 s of CPU
# here for 160 x 160 anyOf objects); a schema of 1,000 two-property objects compared with itself takes 3,001 (0.35 s).
MAX_COMPARISONS = 5_000


@dataclass(frozen=True)
class Difference:
    """One change between two schemas: Confluent's name for it and the JSON pointer (in the reader's schema) where it is."""

    code: str
    path: str
    detail: str = ""

    @property
    def compatible(self) -> bool:
        return self.code in COMPATIBLE

    def __str__(self) -> str:
        return f"{self.code} at {self.path}" + (f": {self.detail}" if self.detail else "")


@dataclass
class _Budget:
    used: int = 0
    # Where the comparison stopped, once it has done MAX_COMPARISONS: reported once, whatever sub-comparison hit it.
    exceeded: str = ""


_PairKey = tuple[tuple[int, str, bool], tuple[int, str, bool]]


@dataclass
class _Context:
    # An ordered set: a memoized pair's reasons, met again, are not repeated.
    found: dict[Difference, None] = field(default_factory=dict)
    # Pairs being compared up the stack (a recursive schema), pairs compared already, and the work done.
    active: set[_PairKey] = field(default_factory=set)
    memo: dict[_PairKey, list[Difference]] = field(default_factory=dict)
    budget: _Budget = field(default_factory=_Budget)

    def add(self, code: str, path: str, detail: str = "") -> None:
        self.found[Difference(code, path, detail)] = None

    def extend(self, differences: Iterable[Difference]) -> None:
        self.found.update(dict.fromkeys(differences))

    def sub(self) -> _Context:
        return _Context({}, self.active, self.memo, self.budget)

    @property
    def compatible(self) -> bool:
        return all(difference.compatible for difference in self.found)


def differences(reader: JsonSchema, writer: JsonSchema) -> list[Difference]:
    """The incompatible changes from ``writer`` (the original) to ``reader`` (the update), each once, in order found."""
    return [difference for difference in all_differences(writer, reader) if not difference.compatible]


def all_differences(original: JsonSchema, update: JsonSchema) -> list[Difference]:
    """Every change, compatible or not, from ``original`` to ``update``."""
    ctx = _Context()
    compare(ctx, original.root, update.root)
    if ctx.budget.exceeded:
        ctx.add("COMPARISON_LIMIT_EXCEEDED", ctx.budget.exceeded, f"stopped after {MAX_COMPARISONS} subschema comparisons: too complex to prove compatible")
    return list(ctx.found)


def compare(ctx: _Context, original: Node | Shape | None, update: Node | Shape | None) -> None:
    """Confluent's ``SchemaDiff.compare``: the change from one subschema to another, added to ``ctx``."""
    if original is None and update is None:
        return
    if original is None:
        assert update is not None
        ctx.add("SCHEMA_ADDED", _path(update), "a schema was added where there was none")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED", _path(original))
        return
    if ctx.budget.exceeded:
        return
    before, after = shape_of(original), shape_of(update)
    key = (_key(before), _key(after))
    if key in ctx.memo:
        # Compared already (Confluent memoizes pairs too): the same reasons, where they were first found.
        ctx.extend(ctx.memo[key])
        return
    if key in ctx.active or not _spend(ctx, after.node.pointer):
        return  # a pair being compared up the stack is taken as compatible, as in Confluent
    ctx.active.add(key)
    sub = ctx.sub()
    try:
        _compare_shapes(sub, before, after)
    finally:
        ctx.active.discard(key)
    ctx.memo[key] = list(sub.found)
    ctx.extend(sub.found)


def _key(value: Shape) -> tuple[int, str, bool]:
    """One subschema as Confluent's memo sees it: the JSON it reads (a synthetic shape is its own identity) and its kind."""
    anchor = id(value) if value.node.contents is None else id(value.node.contents)
    return (anchor, value.kind + value.criterion, value.requires_integer)


def _compare_shapes(ctx: _Context, before: Shape, after: Shape) -> None:
    if _within_sum(ctx, before, after):
        return
    if before.kind != after.kind:
        if before.kind != "false" and after.kind != "empty":
            ctx.add("TYPE_CHANGED", after.node.pointer, f"{_describe(before)} -> {_describe(after)}")
        return
    _compare_annotations(ctx, before, after)
    _COMPARE_KIND.get(before.kind, _nothing)(ctx, before, after)


def _spend(ctx: _Context, pointer: str) -> bool:
    ctx.budget.used += 1
    if ctx.budget.used <= MAX_COMPARISONS:
        return True
    if not ctx.budget.exceeded:
        ctx.budget.exceeded = pointer
    return False


def _path(part: Node | Shape) -> str:
    return part.pointer if isinstance(part, Node) else part.node.pointer


def _describe(value: Shape) -> str:
    if value.kind == "combined":
        return value.criterion
    if value.kind == "number" and value.requires_integer:
        return "integer"
    return value.kind


def _nothing(ctx: _Context, original: Shape, update: Shape) -> None:
    """Booleans, nulls, true and false schemas: nothing more to compare."""


def _within_sum(ctx: _Context, original: Shape, update: Shape) -> bool:
    """Confluent's special cases: a schema that became a (singleton) union holding it, or stopped being a singleton union."""
    if original.kind != "combined" and update.kind == "combined":
        if len(update.parts) == 1:
            sub = ctx.sub()
            compare(sub, original, update.parts[0])
            if sub.compatible:
                ctx.extend(sub.found)
                return True
        elif update.criterion in ("anyOf", "oneOf"):
            for part in update.parts:
                sub = ctx.sub()
                compare(sub, original, part)
                if sub.compatible:
                    ctx.extend(sub.found)
                    ctx.add("SUM_TYPE_EXTENDED", update.node.pointer, f"{_describe(original)} -> {update.criterion} holding it")
                    return True
    elif original.kind == "combined" and update.kind != "combined":
        if len(original.parts) == 1:
            sub = ctx.sub()
            compare(sub, original.parts[0], update)
            if sub.compatible:
                ctx.extend(sub.found)
                return True
        elif original.criterion == "allOf":
            for part in original.parts:
                sub = ctx.sub()
                compare(sub, part, update)
                if sub.compatible:
                    ctx.extend(sub.found)
                    ctx.add("PRODUCT_TYPE_NARROWED", update.node.pointer, f"allOf -> {_describe(update)}, one of its subschemas")
                    return True
    return False


def _compare_annotations(ctx: _Context, original: Shape, update: Shape) -> None:
    for keyword, code in (("$id", "ID_CHANGED"), ("title", "TITLE_CHANGED"), ("description", "DESCRIPTION_CHANGED"), ("default", "DEFAULT_CHANGED")):
        if original.keywords.get(keyword) != update.keywords.get(keyword):
            ctx.add(code, f"{update.node.pointer}/{keyword}")


def _compare_not(ctx: _Context, original: Shape, update: Shape) -> None:
    sub = ctx.sub()
    # Reversed: the reader must refuse no more than the writer refused.
    compare(sub, child(update.node, update.keywords.get("not"), "not"), child(original.node, original.keywords.get("not"), "not"))
    where = f"{update.node.pointer}/not"
    ctx.add("NOT_TYPE_NARROWED" if sub.compatible else "NOT_TYPE_EXTENDED", where)


def _compare_combined(ctx: _Context, original: Shape, update: Shape) -> None:
    where = update.node.pointer
    criterion_change = _criterion_change(original, update)
    if criterion_change:
        ctx.add(criterion_change, where, f"{original.criterion} -> {update.criterion}")
        if criterion_change == "COMBINED_TYPE_CHANGED":
            return
    before = list({part_identity(part): part for part in original.parts}.values())
    after = list({part_identity(part): part for part in update.parts}.values())
    if len(before) < len(after):
        ctx.add("PRODUCT_TYPE_EXTENDED" if update.criterion == "allOf" else "SUM_TYPE_EXTENDED", where, f"{len(before)} -> {len(after)} subschemas")
    elif len(before) > len(after):
        ctx.add(
            "SUM_TYPE_NARROWED" if original.criterion in ("anyOf", "oneOf") else "PRODUCT_TYPE_NARROWED", where, f"{len(before)} -> {len(after)} subschemas"
        )
    compatible: dict[tuple[int, int], list[Difference]] = {}
    for i, old in enumerate(before):
        for j, new in enumerate(after):
            sub = ctx.sub()
            compare(sub, old, new)
            if sub.compatible:
                compatible[(i, j)] = list(sub.found)
    matching = _maximum_matching(len(before), len(after), compatible)
    for pair in matching:
        ctx.extend(compatible[pair])
    if len(matching) < min(len(before), len(after)):
        _explain_unmatched(ctx, before, after, matching)
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", where, f"no compatible match for every subschema of {original.criterion}")


def _explain_unmatched(ctx: _Context, before: list[Shape | Node], after: list[Shape | Node], matching: list[tuple[int, int]]) -> None:
    """Why unmatched subschemas differ, where an unmatched one of the same kind is there to compare with (enum to enum...)."""
    free = [shape_of(part) for j, part in enumerate(after) if j not in {j for _i, j in matching}]
    for i, part in enumerate(before):
        if i in {i for i, _j in matching}:
            continue
        old = shape_of(part)
        same_kind = next((new for new in free if new.kind == old.kind and new.criterion == old.criterion), None)
        if same_kind is not None:
            free.remove(same_kind)
            sub = ctx.sub()
            compare(sub, old, same_kind)
            ctx.extend(sub.found)


def _criterion_change(original: Shape, update: Shape) -> str:
    if original.criterion == update.criterion:
        return ""
    original_singleton, update_singleton = len(original.parts) == 1, len(update.parts) == 1
    if (
        update.criterion == "anyOf"
        or (original_singleton and update_singleton)
        or (original_singleton and update.criterion == "oneOf")
        or (update_singleton and original.criterion == "allOf")
    ):
        return "COMBINED_TYPE_EXTENDED"
    return "COMBINED_TYPE_CHANGED"


def _maximum_matching(left: int, right: int, edges: Mapping[tuple[int, int], object]) -> list[tuple[int, int]]:
    """A maximum bipartite matching (Kuhn's augmenting paths) of the compatible (old, new) subschema pairs."""
    neighbours: dict[int, list[int]] = {i: [j for j in range(right) if (i, j) in edges] for i in range(left)}
    matched_right: dict[int, int] = {}

    def augment(i: int, visited: set[int]) -> bool:
        for j in neighbours[i]:
            if j in visited:
                continue
            visited.add(j)
            if j not in matched_right or augment(matched_right[j], visited):
                matched_right[j] = i
                return True
        return False

    for i in range(left):
        augment(i, set())
    return sorted((i, j) for j, i in matched_right.items())


def _compare_object(ctx: _Context, original: Shape, update: Shape) -> None:
    compare_object(ctx, original, update, compare)


def _compare_array(ctx: _Context, original: Shape, update: Shape) -> None:
    compare_array(ctx, original, update, compare)


_COMPARE_KIND: dict[str, Callable[[_Context, Shape, Shape], None]] = {
    "string": compare_string,
    "number": compare_number,
    "enum": compare_enum,
    "const": compare_const,
    "not": _compare_not,
    "combined": _compare_combined,
    "object": _compare_object,
    "array": _compare_array,
}

__all__ = ["COMPATIBLE", "Difference", "all_differences", "compare", "differences", "shape"]
