"""Where the pipelines find the brokers, their credential and their output: read once from the environment.

======================  ==========================  ==============================================
variable                default                     meaning
======================  ==========================  ==============================================
WEIR_BOOTSTRAP_SERVERS  127.0.0.1:9092              brokers the jobs read from (the launcher sets it
                                                    to the brokers registered in the control plane
                                                    when it is not set: webapp.metering.launcher)
WEIR_INTERNAL_TOKEN     <data dir>/secrets/         the control plane's internal credential
                        internal-token
WEIR_BROKER_TLS_CA      unset (plaintext)           PEM CA file: reach the brokers over TLS
WEIR_DATA_DIR           ./.weir-data                the stack's state directory
WEIR_PIPELINE_DIR       <data dir>/pipelines        Parquet output of the jobs
WEIR_SPARK_MASTER       local[*]                    spark.master of the jobs' session
======================  ==========================  ==============================================

The internal token is the one the control plane and the brokers share. Without
``WEIR_INTERNAL_TOKEN`` the control plane keeps it in ``<WEIR_DATA_DIR>/secrets/internal-token``
(``webapp.runtime.persistent_secret``); the pipelines read that same file rather than import
Django, and never create it: a token the brokers do not know would only be refused later,
with a less clear error than :class:`MissingInternalTokenError` now.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BOOTSTRAP_SERVERS = "127.0.0.1:9092"
DEFAULT_DATA_DIR = ".weir-data"
DEFAULT_SPARK_MASTER = "local[*]"
INTERNAL_TOKEN_FILE = Path("secrets") / "internal-token"  # under the data dir, as webapp.runtime writes it


class MissingInternalTokenError(RuntimeError):
    """The jobs need the internal token and neither the environment nor the data directory has one."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"no internal token: set WEIR_INTERNAL_TOKEN, or WEIR_DATA_DIR to the control plane's data directory (no token file at {path})")
        self.path = path


@dataclass(frozen=True)
class PipelineSettings:
    """The pipelines' settings (see the module docstring); ``internal_token`` is None when none is configured."""

    bootstrap_servers: str
    internal_token: str | None
    tls_ca: str | None
    data_dir: Path
    output_dir: Path
    spark_master: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PipelineSettings:
        """Settings from ``environ`` (default: ``os.environ``); paths are made absolute."""
        env = os.environ if environ is None else environ
        data_dir = Path(env.get("WEIR_DATA_DIR") or DEFAULT_DATA_DIR).resolve()
        output_dir = Path(env["WEIR_PIPELINE_DIR"]).resolve() if env.get("WEIR_PIPELINE_DIR") else data_dir / "pipelines"
        return cls(
            bootstrap_servers=env.get("WEIR_BOOTSTRAP_SERVERS") or DEFAULT_BOOTSTRAP_SERVERS,
            internal_token=env.get("WEIR_INTERNAL_TOKEN") or _read_token_file(data_dir / INTERNAL_TOKEN_FILE),
            tls_ca=env.get("WEIR_BROKER_TLS_CA") or None,
            data_dir=data_dir,
            output_dir=output_dir,
            spark_master=env.get("WEIR_SPARK_MASTER") or DEFAULT_SPARK_MASTER,
        )

    @property
    def internal_token_path(self) -> Path:
        return self.data_dir / INTERNAL_TOKEN_FILE


def _read_token_file(path: Path) -> str | None:
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        return None
    return token or None


def internal_source_options(settings: PipelineSettings) -> dict[str, str]:
    """Options of ``format("weir")`` for the jobs: bootstrap, the internal token and, with TLS, the CA.

    Raises :class:`MissingInternalTokenError` when no token is configured.
    """
    if not settings.internal_token:
        raise MissingInternalTokenError(settings.internal_token_path)
    options = {"bootstrap.servers": settings.bootstrap_servers, "weir.internal.token": settings.internal_token}
    if settings.tls_ca:
        options["ssl.ca.location"] = settings.tls_ca
    return options
