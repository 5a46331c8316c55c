"""TLS for the broker's gRPC port (a PEM certificate chain and its private key, read once at startup)
and for its own calls to other brokers and the controller (the CA certificates that verify them)."""

from __future__ import annotations

from pathlib import Path

import grpc


class TlsConfigurationError(Exception):
    """The certificate or key cannot be read (the broker does not start)."""

    retriable = False

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"TLS: cannot read {path}: {reason}")
        self.path = path
        self.reason = reason


def _read(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TlsConfigurationError(path, error.strerror or str(error)) from None
    if b"-----BEGIN" not in data:
        raise TlsConfigurationError(path, "not a PEM file")
    return data


def server_credentials(certificate_chain: Path, private_key: Path) -> grpc.ServerCredentials:
    """Credentials for ``server.add_secure_port``: the broker then speaks TLS only on that port."""
    return grpc.ssl_server_credentials([(_read(private_key), _read(certificate_chain))])


def channel_credentials(ca_certificates: Path) -> grpc.ChannelCredentials:
    """Credentials for ``grpc.secure_channel`` that trust only the CA certificates in ``ca_certificates`` (PEM)."""
    return grpc.ssl_channel_credentials(root_certificates=_read(ca_certificates))
