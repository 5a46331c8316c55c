"""The committed generated code must be exactly what protoc makes of the .proto files."""

from __future__ import annotations

from pathlib import Path

from grpc_protos.generate import PROTO_PACKAGE_DIR, REPOSITORY_ROOT, generate, proto_files


def test_generated_code_matches_proto_files(tmp_path: Path) -> None:
    generate(tmp_path)
    fresh_dir = tmp_path / PROTO_PACKAGE_DIR.relative_to(REPOSITORY_ROOT)
    fresh = sorted(path.name for path in fresh_dir.iterdir() if path.suffix in (".py", ".pyi"))
    assert fresh, "protoc generated nothing"
    assert len(fresh) == 3 * len(proto_files())
    stale = [name for name in fresh if not (PROTO_PACKAGE_DIR / name).exists() or (PROTO_PACKAGE_DIR / name).read_bytes() != (fresh_dir / name).read_bytes()]
    assert not stale, f"generated code is stale, run `make protos`: {stale}"


def test_every_committed_module_comes_from_a_proto() -> None:
    sources = {path.stem for path in proto_files()}
    for path in PROTO_PACKAGE_DIR.glob("*_pb2*.py"):
        assert path.name.split("_pb2")[0] in sources, f"{path.name} has no .proto any more"
