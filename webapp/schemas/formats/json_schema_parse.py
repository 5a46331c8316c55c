"""Parsing of JSON Schemas: JSON text checked against its draft's metaschema, ``$ref`` resolved by ``referencing``.

The draft is the one ``$schema`` names (draft-04, -06, -07, 2019-09, 2020-12); without ``$schema`` it is
draft-07, as in Confluent's registry. The metaschema check is the ``jsonschema`` library's. References
are the registry's referenced schemas by the name they are referenced under (Confluent's ``name`` of a
``SchemaReference``): each is a resource of a ``referencing.Registry`` under that name, under its own
``$id``, and under the name resolved against the root's ``$id``, so ``{"$ref": "address.json"}`` and
``{"$ref": "address.json#/definitions/street"}`` resolve either way; ``#/definitions`` / ``#/$defs``
and anchors resolve within a document. Nothing is ever fetched: a ``$ref`` to anything else (but the
drafts' own metaschemas) is an unresolved reference.

Every ``$ref`` reachable in the schema and its references is resolved once at parse time, so a schema
that parses never fails to resolve later; a chain of ``$ref`` that comes back to itself without any
schema between (``A -> B -> A``) is a reference cycle. A recursive schema (a tree whose children
``$ref`` the tree) is not a cycle: it describes finite documents.

``canonical`` is the JSON text with keys sorted and no insignificant whitespace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import jsonschema.exceptions  # type: ignore[import-untyped]
import jsonschema.validators  # type: ignore[import-untyped]
import referencing.exceptions
import referencing.jsonschema
from jsonschema_specifications import REGISTRY as METASCHEMAS  # type: ignore[import-untyped]
from referencing import Registry, Resource, Specification

if TYPE_CHECKING:
    from referencing._core import Resolver

from webapp.schemas.formats.errors import InvalidSchema

# Bounds on what one parse reads, so that no request can make the control plane work without end.
MAX_SCHEMA_CHARS = 1_000_000
MAX_REFERENCES = 1_000
MAX_DEPTH = 100
# A $ref chain longer than this is refused like a cycle.
MAX_REF_CHAIN = 100
# Where the root document lives when it has no $id of its own.
ROOT_URI = "urn:weir:schema"
DEFAULT_DRAFT = "http://json-schema.org/draft-07/schema"
# Keywords whose values are data, not schemas: never walked for $ref.
DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})

_DRAFTS: dict[str, tuple[type[Any], Specification[Any]]] = {
    "http://json-schema.org/draft-04/schema": (jsonschema.validators.Draft4Validator, referencing.jsonschema.DRAFT4),
    "http://json-schema.org/draft-06/schema": (jsonschema.validators.Draft6Validator, referencing.jsonschema.DRAFT6),
    "http://json-schema.org/draft-07/schema": (jsonschema.validators.Draft7Validator, referencing.jsonschema.DRAFT7),
    "https://json-schema.org/draft/2019-09/schema": (jsonschema.validators.Draft201909Validator, referencing.jsonschema.DRAFT201909),
    "https://json-schema.org/draft/2020-12/schema": (jsonschema.validators.Draft202012Validator, referencing.jsonschema.DRAFT202012),
}


@dataclass(frozen=True)
class Node:
    """A subschema with the resolver its ``$ref`` resolve against, and its JSON pointer for reasons."""

    contents: Any
    resolver: Resolver[Any] = field(repr=False, compare=False)
    pointer: str = "#"
    draft: str = DEFAULT_DRAFT


@dataclass(frozen=True)
class JsonSchema:
    """A parsed JSON Schema: its canonical text, its document, and the root :class:`Node` for comparisons."""

    canonical: str
    document: Any
    draft: str
    root: Node = field(repr=False, compare=False)
    schema_type: str = "JSON"


def parse(schema: str, references: Mapping[str, str]) -> JsonSchema:
    """Parse ``schema`` with the texts of the schemas it references by name; raises :class:`InvalidSchema`."""
    _check_sizes(schema, references)
    document = _load(schema, "the schema")
    draft = _checked_draft(document, "the schema")
    referenced = {name: _load(text, f"reference {name!r}") for name, text in references.items()}
    drafts = {name: _checked_draft(contents, f"reference {name!r}") for name, contents in referenced.items()}
    root_uri = _root_uri(document, draft)
    registry = _registry(document, draft, root_uri, referenced, drafts)
    root = Node(document, registry.resolver(root_uri), "#", draft)
    for name, contents in referenced.items():
        _check_refs(Node(contents, registry.resolver(name), "#", drafts[name]), f"reference {name!r}")
    _check_refs(root, "the schema")
    return JsonSchema(canonical=canonical(document), document=document, draft=draft, root=root)


def canonical(document: Any) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def resolve(node: Node, ref: str) -> Node:
    """The node ``ref`` names from ``node`` (resolved once at parse time, so it resolves here too)."""
    resolved = node.resolver.lookup(ref)
    return Node(resolved.contents, resolved.resolver, ref if "#" in ref else f"{ref}#", node.draft)


def child(node: Node, contents: Any, *steps: str | int) -> Node:
    """A subschema of ``node``: its pointer extended, its resolver moved into any ``$id`` it declares."""
    pointer = node.pointer + "".join(f"/{_escape(step)}" for step in steps)
    resolver = node.resolver
    if isinstance(contents, dict) and isinstance(contents.get(_id_keyword(node.draft)), str):
        resolver = resolver.in_subresource(_DRAFTS[node.draft][1].create_resource(contents))
    return Node(contents, resolver, pointer, node.draft)


def _escape(step: str | int) -> str:
    return str(step).replace("~", "~0").replace("/", "~1")


def _id_keyword(draft: str) -> str:
    return "id" if draft.endswith("draft-04/schema") else "$id"


def _check_sizes(schema: str, references: Mapping[str, str]) -> None:
    if not isinstance(schema, str):
        raise InvalidSchema("a JSON Schema must be a string of JSON text")
    if len(references) > MAX_REFERENCES:
        raise InvalidSchema(f"a JSON Schema may reference at most {MAX_REFERENCES} schemas, not {len(references)}")
    total = len(schema) + sum(len(text) for text in references.values())
    if total > MAX_SCHEMA_CHARS:
        raise InvalidSchema(f"the schema and its references hold {total} characters, more than the {MAX_SCHEMA_CHARS} allowed")


def _load(text: str, where: str) -> Any:
    try:
        document = json.loads(text)
    except RecursionError:
        raise InvalidSchema(f"{where} nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise InvalidSchema(f"{where} is not JSON: {error}") from None
    if not isinstance(document, dict | bool):
        raise InvalidSchema(f"{where} must be a JSON object or a boolean, not {type(document).__name__}")
    _check_depth(document, where)
    return document


def _check_depth(document: Any, where: str) -> None:
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidSchema(f"{where} nests deeper than {MAX_DEPTH} levels")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((item, depth + 1) for item in children if isinstance(item, dict | list))


def _checked_draft(document: Any, where: str) -> str:
    """The draft ``document`` declares (draft-07 by default), once its draft's metaschema accepts it."""
    if not isinstance(document, dict) or "$schema" not in document:
        draft = DEFAULT_DRAFT
    else:
        declared = document["$schema"]
        draft = declared.rstrip("#") if isinstance(declared, str) else ""
        if draft not in _DRAFTS:
            known = ", ".join(sorted(_DRAFTS))
            raise InvalidSchema(f"{where} declares $schema {declared!r}, not a draft this registry knows ({known})")
    validator = _DRAFTS[draft][0]
    try:
        validator.check_schema(document)
    except jsonschema.exceptions.SchemaError as error:
        at = "#" + "".join(f"/{_escape(step)}" for step in error.absolute_path)
        raise InvalidSchema(f"{where} is not a valid {draft.rsplit('/', 2)[-2]} schema at {at}: {error.message}".splitlines()[0]) from None
    return draft


def _root_uri(document: Any, draft: str) -> str:
    declared = document.get(_id_keyword(draft)) if isinstance(document, dict) else None
    return declared.rstrip("#") if isinstance(declared, str) and declared.rstrip("#") else ROOT_URI


def _registry(document: Any, draft: str, root_uri: str, referenced: Mapping[str, Any], drafts: Mapping[str, str]) -> Registry[Any]:
    resources: list[tuple[str, Resource[Any]]] = []
    for name, contents in referenced.items():
        specification = _DRAFTS[drafts[name]][1]
        resource = specification.create_resource(contents)
        uris = {name, urljoin(root_uri, name)}
        if resource.id():
            uris.add(str(resource.id()).rstrip("#"))
        resources.extend((uri, resource) for uri in uris)
    registry: Registry[Any] = METASCHEMAS.with_resources(resources)
    registry = registry.with_resource(root_uri, _DRAFTS[draft][1].create_resource(document))
    return registry.crawl()


def _refs(node: Node) -> Iterator[tuple[Node, str]]:
    """Every ``$ref`` in ``node``'s document, with the node that holds it, in document order."""
    stack = [node]
    while stack:
        current = stack.pop()
        contents = current.contents
        if isinstance(contents, dict):
            if isinstance(contents.get("$ref"), str):
                yield current, contents["$ref"]
            for key in reversed(list(contents)):
                value = contents[key]
                if key not in DATA_KEYWORDS and isinstance(value, dict | list):
                    stack.append(child(current, value, key))
        elif isinstance(contents, list):
            stack.extend(child(current, item, index) for index, item in reversed(list(enumerate(contents))) if isinstance(item, dict | list))


def _check_refs(node: Node, where: str) -> None:
    for holder, ref in _refs(node):
        seen: list[int] = [id(holder.contents)]
        target_holder, target_ref = holder, ref
        while True:
            try:
                target = resolve(target_holder, target_ref)
            except referencing.exceptions.Unresolvable:
                raise InvalidSchema(f"$ref {ref!r} at {holder.pointer} in {where} does not resolve: no such reference or definition") from None
            if not (isinstance(target.contents, dict) and isinstance(target.contents.get("$ref"), str)):
                break
            if id(target.contents) in seen or len(seen) > MAX_REF_CHAIN:
                raise InvalidSchema(f"$ref {ref!r} at {holder.pointer} in {where} is a reference cycle: it resolves only to itself")
            seen.append(id(target.contents))
            target_holder, target_ref = target, target.contents["$ref"]
