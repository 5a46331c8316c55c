"""Regenerate the committed protobuf and gRPC modules from ``grpc_protos/weir/v1/*.proto``.

Run ``python -m grpc_protos.generate`` after editing a ``.proto`` file (``make protos``).
The generated ``*_pb2.py`` / ``*_pb2.pyi`` / ``*_pb2_grpc.py`` files are committed and never
edited by hand; ``tests/grpc_protos/test_generated_code.py`` fails when they are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO_PACKAGE_DIR = Path(__file__).resolve().parent / "weir" / "v1"
# Protos are compiled relative to the repository root so that generated modules import each
# other as ``grpc_protos.weir.v1.*`` and never collide with the ``weir`` SDK package.
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent


def proto_files() -> list[Path]:
    """Every .proto file of the contract, in a stable order."""
    return sorted(PROTO_PACKAGE_DIR.glob("*.proto"))


def generate(output_root: Path) -> None:
    """Compile every .proto into ``output_root`` (mirroring ``grpc_protos/weir/v1``).

    Raises RuntimeError when protoc reports an error.
    """
    import grpc_tools
    from grpc_tools import protoc  # a dev dependency: only needed to regenerate

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    relative = [str(path.relative_to(REPOSITORY_ROOT)) for path in proto_files()]
    output_root.mkdir(parents=True, exist_ok=True)
    arguments = [
        "grpc_tools.protoc",
        f"-I{REPOSITORY_ROOT}",
        f"-I{well_known}",
        f"--python_out={output_root}",
        f"--pyi_out={output_root}",
        f"--grpc_python_out={output_root}",
        *relative,
    ]
    exit_code = protoc.main(arguments)
    if exit_code != 0:
        raise RuntimeError(f"protoc failed with exit code {exit_code} for {relative}")


# Confluent's own message types (confluent/meta.proto, confluent/type/decimal.proto), shipped by the
# SDK as confluent-kafka ships them: applications' generated *_pb2 modules import them by that path.
SDK_PROTO_ROOT = REPOSITORY_ROOT / "weir" / "schema_registry" / "protos"


def sdk_proto_files() -> list[Path]:
    """The SDK's .proto files, in a stable order (compiled relative to SDK_PROTO_ROOT)."""
    return sorted((SDK_PROTO_ROOT / "confluent").rglob("*.proto"))


def generate_sdk_protos(output_root: Path) -> None:
    """Compile the SDK's Confluent protos into ``output_root`` (mirroring ``SDK_PROTO_ROOT``): their
    registered names must be ``confluent/...`` as in confluent-kafka, so the root is theirs."""
    import grpc_tools
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    relative = [str(path.relative_to(SDK_PROTO_ROOT)) for path in sdk_proto_files()]
    output_root.mkdir(parents=True, exist_ok=True)
    exit_code = protoc.main(
        ["grpc_tools.protoc", f"-I{SDK_PROTO_ROOT}", f"-I{well_known}", f"--python_out={output_root}", f"--pyi_out={output_root}", *relative]
    )
    if exit_code != 0:
        raise RuntimeError(f"protoc failed with exit code {exit_code} for {relative}")


def main() -> int:
    generate(REPOSITORY_ROOT)
    for path in proto_files():
        print(f"generated code for {path.relative_to(REPOSITORY_ROOT)}")
    generate_sdk_protos(SDK_PROTO_ROOT)
    for path in sdk_proto_files():
        print(f"generated code for {path.relative_to(REPOSITORY_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
