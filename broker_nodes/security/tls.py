"""TLS for the broker's gRPC port (a PEM certificate chain and its private key, read once at startup)
and for its own calls to other brokers and the controller (the CA certificates that verify them)."""

from __future__ import annotations

from pathlib import Path

import grpc

from server_runtime.pem import PemFileError, read_pem

# The certificate, key or CA cannot be read (the broker does not start).
TlsConfigurationError = PemFileError


def server_credentials(certificate_chain: Path, private_key: Path) -> grpc.ServerCredentials:
    """Credentials for ``server.add_secure_port``: the broker then speaks TLS only on that port."""
    return grpc.ssl_server_credentials([(read_pem(private_key), read_pem(certificate_chain))])


def channel_credentials(ca_certificates: Path) -> grpc.ChannelCredentials:
    """Credentials for ``grpc.secure_channel`` that trust only the CA certificates in ``ca_certificates`` (PEM)."""
    return grpc.ssl_channel_credentials(root_certificates=read_pem(ca_certificates))
