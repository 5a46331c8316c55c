"""Parsing of Protobuf schemas: ``.proto`` text (proto2 or proto3) or a base64 ``FileDescriptorProto``.

Two spellings of one schema reach the registry, as they reach Confluent's:

- ``.proto`` text, from the REST API and the Java clients;
- a base64-encoded serialized ``FileDescriptorProto``, which confluent-kafka-python's ``ProtobufSerializer``
  registers (its ``_schema_to_str``) and asks back for with ``?format=serialized``.

Text is compiled by protoc itself, in process, through grpcio-tools' compiler (``get_protos``, the function
behind ``grpc.protos()``): the schema and its references are written under a private temporary directory
and compiled with the well-known types (``google/protobuf/*.proto``), googleapis' common types
(``google/type/*.proto``) and Confluent's own (``confluent/meta.proto``, ``confluent/type/decimal.proto``,
shipped by the SDK as by confluent-kafka), none of which confluent-kafka's serializer ever registers, on the include path, so imports,
type names, field numbers and import cycles are checked by protoc, not by a hand-written parser. The
compiler answers with generated Python modules, each of which holds its file's serialized
``FileDescriptorProto`` as the one bytes literal given to ``AddSerializedFile``; that literal is read back
with :mod:`ast` (the code is never executed). Every file is then added to a fresh ``DescriptorPool``,
which checks that a schema given as descriptors is complete and consistent too.

``canonical`` is the main file's ``FileDescriptorProto`` in protobuf text format with its name cleared:
comments, whitespace and the order of options do not change it, and the text and base64 spellings of one
schema share it.
"""

from __future__ import annotations

import ast
import base64
import binascii
import importlib.resources
import importlib.util
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from google.protobuf import descriptor_pb2, descriptor_pool, text_format
from google.protobuf.message import DecodeError
from grpc_tools import _protoc_compiler  # type: ignore[import-untyped]

from webapp.schemas.formats.errors import InvalidSchema

# The file name the schema being parsed is compiled under; it never appears in a reason (it is "the schema").
MAIN_FILE = "__weir_registry_schema__.proto"
# Bounds on what one parse reads, so that no request can make the control plane work without end.
MAX_SCHEMA_CHARS = 1_000_000
MAX_REFERENCES = 256
# A .proto text always holds a character outside the base64 alphabet (`;`, `{`, `=` inside a line...);
# a base64 FileDescriptorProto never does.
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
# Imports every schema may use without a reference: protobuf's well-known types, googleapis' common types
# and Confluent's (as Confluent's Schema Registry has them built in).
BUILT_IN_IMPORTS = ("google/protobuf/", "google/type/", "confluent/")
# The generated module's call that carries the file's serialized FileDescriptorProto.
_ADD_SERIALIZED_FILE = "AddSerializedFile"


def _well_known_types_dir() -> str:
    return str(importlib.resources.files("grpc_tools") / "_proto")


def _confluent_types_dir() -> str:
    """The directory holding confluent/meta.proto and confluent/type/decimal.proto (the SDK's copies)."""
    return str(importlib.resources.files("weir.schema_registry.protos"))


def _google_type_dir() -> Path | None:
    """google/type/*.proto (Date, Money, LatLng...) of googleapis-common-protos: confluent-kafka never registers them as references."""
    try:
        spec = importlib.util.find_spec("google.type")
    except ModuleNotFoundError:
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


@dataclass(frozen=True)
class ProtobufSchema:
    """A parsed Protobuf schema: its main file and every file it imports, as ``FileDescriptorProto``."""

    canonical: str
    main: descriptor_pb2.FileDescriptorProto
    # Every file by the name it is imported under, the main file under MAIN_FILE.
    files: Mapping[str, descriptor_pb2.FileDescriptorProto] = field(repr=False)
    schema_type: str = "PROTOBUF"

    def serialized(self) -> str:
        """The main file as confluent-kafka's clients want it back (``?format=serialized``): base64 of its descriptor."""
        return base64.standard_b64encode(self.main.SerializeToString()).decode("ascii")


def parse(schema: str, references: Mapping[str, str]) -> ProtobufSchema:
    """Parse ``schema`` with the texts it imports by name; raises :class:`InvalidSchema` naming what is wrong."""
    _check_sizes(schema, references)
    texts = {MAIN_FILE: schema, **{_checked_import_name(name): text for name, text in references.items()}}
    binary = {name: _decoded(name, text) for name, text in texts.items() if _is_base64(text)}
    proto_texts = {name: text for name, text in texts.items() if name not in binary}
    if MAIN_FILE in binary:
        files = _from_descriptors(binary, proto_texts)
    else:
        files = _compile(MAIN_FILE, proto_texts)
    _check_pool(files)
    main = files[MAIN_FILE]
    return ProtobufSchema(canonical=_canonical(main), main=main, files=files)


def _check_sizes(schema: str, references: Mapping[str, str]) -> None:
    if not isinstance(schema, str):
        raise InvalidSchema("a Protobuf schema must be a string")
    if len(references) > MAX_REFERENCES:
        raise InvalidSchema(f"a Protobuf schema may import at most {MAX_REFERENCES} references, not {len(references)}")
    total = len(schema) + sum(len(text) for text in references.values())
    if total > MAX_SCHEMA_CHARS:
        raise InvalidSchema(f"the schema and its references hold {total} characters, more than the {MAX_SCHEMA_CHARS} allowed")


def _checked_import_name(name: str) -> str:
    """An import path that stays inside the compiler's directory: relative, no `..`, no empty part."""
    path = PurePosixPath(name)
    if not name or "\\" in name or "\x00" in name or path.is_absolute() or any(part in ("", ".", "..") for part in name.split("/")):
        raise InvalidSchema(f"reference name {name!r} is not a relative import path such as 'other/file.proto'")
    if name == MAIN_FILE:
        raise InvalidSchema(f"reference name {name!r} is reserved")
    return name


def _is_base64(text: str) -> bool:
    compact = "".join(text.split())
    return bool(compact) and len(compact) % 4 == 0 and _BASE64.fullmatch(compact) is not None


def _decoded(name: str, text: str) -> descriptor_pb2.FileDescriptorProto:
    where = "the schema" if name == MAIN_FILE else f"reference {name!r}"
    try:
        file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode("".join(text.split()), validate=True))
    except (binascii.Error, DecodeError, ValueError) as error:
        raise InvalidSchema(f"{where} is neither .proto text nor a base64 FileDescriptorProto: {error}") from None
    file.name = name
    return file


def _compile(target: str, texts: Mapping[str, str]) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """Compile ``target`` with protoc over ``texts`` (file name -> .proto text); every file it imports, by name."""
    with tempfile.TemporaryDirectory(prefix="weir-proto-") as directory:
        root = Path(directory)
        for name, text in texts.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        google_types = _google_type_dir()
        if google_types is not None and not (root / "google" / "type").exists():
            (root / "google").mkdir(exist_ok=True)
            (root / "google" / "type").symlink_to(google_types, target_is_directory=True)
        try:
            include = [directory, _well_known_types_dir(), _confluent_types_dir()]
            generated = _protoc_compiler.get_protos(target.encode(), [path.encode() for path in include])
        except _protoc_compiler.ProtocErrors as errors:
            raise InvalidSchema(_protoc_reason(errors)) from None
    files = [_descriptor_of(code) for _module, code in generated]
    return {file.name: file for file in files}


def _protoc_reason(errors: Exception) -> str:
    """protoc's first error, one line, with the schema's private file name replaced by 'schema'."""
    found = getattr(errors, "errors", None)
    listed = found() if callable(found) else list(errors.args[0]) if errors.args and isinstance(errors.args[0], list) else []
    if not listed:
        return f"protoc refused the schema: {errors}".replace(MAIN_FILE, "schema").splitlines()[0]
    first = listed[0]
    filename = _text(first.filename).replace(MAIN_FILE, "schema")
    message = _text(first.message).replace(MAIN_FILE, "schema")
    if message == "File not found.":
        return f"import {filename!r} is not among the schema's references"
    more = f" (and {len(listed) - 1} more)" if len(listed) > 1 else ""
    return f"{filename}:{first.line + 1}:{first.column + 1}: {message}{more}"


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _descriptor_of(code: bytes) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto a generated ``_pb2`` module registers, read from its source without running it."""
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == _ADD_SERIALIZED_FILE
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, bytes)
        ):
            return descriptor_pb2.FileDescriptorProto.FromString(node.args[0].value)
    raise InvalidSchema("protoc produced no file descriptor for the schema")


def _from_descriptors(
    binary: Mapping[str, descriptor_pb2.FileDescriptorProto], proto_texts: Mapping[str, str]
) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """Every file the descriptor schema imports, transitively: descriptors as given, texts compiled, well-known types from protoc."""
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    pending = [MAIN_FILE]
    while pending:
        name = pending.pop()
        if name in files:
            continue
        if name in binary:
            files[name] = binary[name]
        elif name in proto_texts:
            files.update(_compile(name, proto_texts))
        elif name.startswith(BUILT_IN_IMPORTS):
            files.update(_compile(name, {}))
        else:
            raise InvalidSchema(f"import {name!r} is not among the schema's references")
        pending.extend(files[name].dependency)
    return files


def _check_pool(files: Mapping[str, descriptor_pb2.FileDescriptorProto]) -> None:
    """Add every file to a fresh pool, dependencies first: an import cycle, a missing type or a clash is refused."""
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    visiting: list[str] = []

    def add(name: str) -> None:
        if name in added:
            return
        if name in visiting:
            cycle = " -> ".join([*visiting[visiting.index(name) :], name]).replace(MAIN_FILE, "schema")
            raise InvalidSchema(f"import cycle: {cycle}")
        if name not in files:
            raise InvalidSchema(f"import {name!r} is not among the schema's references")
        visiting.append(name)
        for dependency in files[name].dependency:
            add(dependency)
        visiting.pop()
        try:
            pool.Add(files[name])
            pool.FindFileByName(name)
        except (TypeError, KeyError, ValueError) as error:
            where = "the schema" if name == MAIN_FILE else f"reference {name!r}"
            raise InvalidSchema(f"{where} is not a consistent Protobuf file: {error}".splitlines()[0]) from None
        added.add(name)

    add(MAIN_FILE)


def _canonical(main: descriptor_pb2.FileDescriptorProto) -> str:
    normalised = descriptor_pb2.FileDescriptorProto()
    normalised.CopyFrom(main)
    normalised.ClearField("name")
    normalised.ClearField("source_code_info")
    return text_format.MessageToString(normalised, as_one_line=True)
