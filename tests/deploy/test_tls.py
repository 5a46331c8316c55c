"""TLS for `make up`: the local CA, the web process over HTTPS, and the control plane's clients of TLS brokers."""

from __future__ import annotations

import http.client
import os
import shutil
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_nodes.config import load_broker_config
from broker_nodes.server.app import start_broker_server
from deploy.local import StackSettings, broker_processes, child_environment, control_plane_processes, controller_processes, tls_instructions, web_command
from deploy.tls import TlsFiles, TlsSetupError, ensure_local_certificates
from grpc_protos.weir.v1 import admin_pb2
from tests.support.processes import free_port
from weir import tenant_tokens
from weir.admin import AdminClient

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the local CA is made with the openssl command")

INTERNAL_TOKEN = "tls-test-internal-token-0123456789"
HOSTS = ["127.0.0.1", "localhost"]


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return ensure_local_certificates(tmp_path_factory.mktemp("stack") / "tls", HOSTS)


def _tls_stack_settings(data_dir: Path, **environment: str) -> StackSettings:
    return StackSettings.from_environment({"WEIR_DATA_DIR": str(data_dir), "WEIR_TLS": "1", "WEIR_HTTP_PORT": str(free_port()), **environment})


# ---------------------------------------------------------------------- the local CA


def test_local_ca_files_are_made_once_with_private_keys_readable_only_by_the_owner(tmp_path: Path) -> None:
    files = ensure_local_certificates(tmp_path / "tls", HOSTS)
    modes = {path.name: path.stat().st_mode & 0o777 for path in (tmp_path / "tls").iterdir()}
    assert modes == {"ca.pem": 0o644, "ca-key.pem": 0o600, "server.pem": 0o644, "server-key.pem": 0o600}
    first = files.certificate.read_bytes()

    again = ensure_local_certificates(tmp_path / "tls", HOSTS)

    assert again == files
    assert again.certificate.read_bytes() == first


def test_incomplete_tls_directory_is_refused_rather_than_half_reused(tmp_path: Path) -> None:
    files = ensure_local_certificates(tmp_path / "tls", HOSTS)
    files.private_key.unlink()
    with pytest.raises(TlsSetupError, match="server-key.pem missing"):
        ensure_local_certificates(tmp_path / "tls", HOSTS)


def test_missing_openssl_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(TlsSetupError, match="openssl"):
        ensure_local_certificates(tmp_path / "tls", HOSTS)
    assert not (tmp_path / "tls").exists()


# ---------------------------------------------------------------------- make up settings


def test_tls_stack_serves_https_and_gives_brokers_the_certificate(tmp_path: Path, certificates: TlsFiles) -> None:
    settings = _tls_stack_settings(tmp_path)
    environment = child_environment(settings, {"PATH": "/usr/bin"}, certificates)

    assert settings.web_url.startswith("https://127.0.0.1:")
    assert environment["WEIR_PUBLIC_API_URL"] == settings.web_url
    assert environment["WEIR_BROKER_TLS_CA"] == str(certificates.ca_certificate)
    for broker in broker_processes(settings, environment, certificates):
        assert broker.command[broker.command.index("--tls-cert") + 1] == str(certificates.certificate)
        assert broker.command[broker.command.index("--tls-key") + 1] == str(certificates.private_key)
        # Brokers verify the controllers and each other against the local CA.
        assert broker.command[broker.command.index("--tls-ca") + 1] == str(certificates.ca_certificate)
        # Brokers read WEIR_BROKER_* as their own settings and would refuse this one.
        assert "WEIR_BROKER_TLS_CA" not in broker.environment
    for controller in controller_processes(settings, environment, certificates):
        assert controller.command[controller.command.index("--tls-cert") + 1] == str(certificates.certificate)
        assert controller.command[controller.command.index("--tls-key") + 1] == str(certificates.private_key)
    command = web_command(settings, certificates)
    assert command[command.index("--certfile") + 1] == str(certificates.certificate)
    instructions = tls_instructions(settings, certificates)
    assert "security.protocol=SASL_SSL" in instructions
    assert f"ssl.ca.location={certificates.ca_certificate}" in instructions


def test_plaintext_stack_passes_no_tls_options(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path)})
    environment = child_environment(settings, {"PATH": "/usr/bin"})
    assert "WEIR_BROKER_TLS_CA" not in environment
    assert all("--tls-cert" not in broker.command and "--tls-ca" not in broker.command for broker in broker_processes(settings, environment))
    assert all("--tls-cert" not in controller.command for controller in controller_processes(settings, environment))
    assert "--certfile" not in web_command(settings)
    assert tls_instructions(settings, None) == ""


def test_web_certificate_from_the_environment_wins_over_the_local_one(tmp_path: Path, certificates: TlsFiles) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_TLS_CERT": "/etc/web.pem", "WEIR_TLS_KEY": "/etc/web-key.pem"})
    assert settings.web_url.startswith("https://")
    command = web_command(settings, certificates)
    assert command[command.index("--certfile") + 1] == "/etc/web.pem"
    assert command[command.index("--keyfile") + 1] == "/etc/web-key.pem"


@pytest.mark.parametrize("environment", [{"WEIR_TLS_CERT": "/etc/web.pem"}, {"WEIR_TLS_KEY": "/etc/web-key.pem"}, {"WEIR_TLS": "yes please"}])
def test_half_given_tls_settings_stop_with_a_message(environment: dict[str, str]) -> None:
    with pytest.raises(SystemExit):
        StackSettings.from_environment(environment)


# ---------------------------------------------------------------------- the web process over HTTPS


def test_web_process_answers_https_and_refuses_plain_http(tmp_path: Path, certificates: TlsFiles) -> None:
    settings = _tls_stack_settings(tmp_path)
    environment = child_environment(settings, dict(os.environ), certificates)
    environment["DATABASE_URL"] = f"sqlite:///{tmp_path / 'control-plane.sqlite3'}"
    [web] = [child for child in control_plane_processes(settings, environment, certificates) if child.name == "web"]
    web.start()  # ready once https /healthz answers 200, verified against the local CA
    try:
        context = ssl.create_default_context(cafile=str(certificates.ca_certificate))
        for host in HOSTS:  # the certificate names both loopback spellings
            with urllib.request.urlopen(f"https://{host}:{settings.http_port}/healthz", timeout=5, context=context) as response:
                assert response.status == 200
                assert response.read() == b'{"status": "ok"}'

        with (
            pytest.raises((http.client.HTTPException, OSError)),
            urllib.request.urlopen(f"http://{settings.host}:{settings.http_port}/healthz", timeout=5) as response,
        ):
            response.read()
    finally:
        web.stop()


# ---------------------------------------------------------------------- the control plane's clients of TLS brokers


@pytest.fixture
def tls_broker(tmp_path: Path, certificates: TlsFiles) -> Iterator[int]:
    config = load_broker_config(
        node_id=1,
        listen="127.0.0.1:0",
        data_dir=tmp_path / "broker",
        configs=["security.required=true", "offsets.topic.num.partitions=1"],
        environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
        tls_cert=certificates.certificate,
        tls_key=certificates.private_key,
        tls_ca=certificates.ca_certificate,
    )
    running = start_broker_server(config)
    try:
        yield running.port
    finally:
        running.stop(grace_seconds=1.0)


def test_provisioning_client_pushes_to_a_tls_broker_with_the_ca(tls_broker: int, certificates: TlsFiles, settings) -> None:
    from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient

    settings.WEIR_BROKER_TLS_CA = str(certificates.ca_certificate)
    with BrokerAdminClient(BrokerAddress(1, f"127.0.0.1:{tls_broker}"), token=INTERNAL_TOKEN) as client:
        client.apply_security(admin_pb2.ApplySecurityRequest(version=1))
        state = client.describe_state()
    assert state.security_version == 1


def test_provisioning_client_in_plaintext_cannot_reach_a_tls_broker(tls_broker: int, settings) -> None:
    from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient, BrokerUnreachableError

    settings.WEIR_BROKER_TLS_CA = None
    with (
        BrokerAdminClient(BrokerAddress(1, f"127.0.0.1:{tls_broker}"), token=INTERNAL_TOKEN, timeout_seconds=2) as client,
        pytest.raises(BrokerUnreachableError),
    ):
        client.describe_state()


def test_dashboard_sdk_configuration_reaches_a_tls_broker(tls_broker: int, certificates: TlsFiles, settings) -> None:
    from webapp.dashboard.data_plane import client_config
    from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient

    settings.WEIR_BROKER_TLS_CA = str(certificates.ca_certificate)
    settings.WEIR_INTERNAL_TOKEN = INTERNAL_TOKEN
    # The web process signs tenant tokens with the key brokers derive from their internal token.
    settings.WEIR_TENANT_TOKEN_KEY = tenant_tokens.derive_key(INTERNAL_TOKEN).hex()
    settings.WEIR_BOOTSTRAP_SERVERS = f"127.0.0.1:{tls_broker}"
    with BrokerAdminClient(BrokerAddress(1, settings.WEIR_BOOTSTRAP_SERVERS), token=INTERNAL_TOKEN) as client:
        client.apply_security(admin_pb2.ApplySecurityRequest(version=1))

    config = client_config("tn-tlstest000")
    assert config["security.protocol"] == "SSL"
    metadata = AdminClient(config).list_topics(timeout=5)
    assert metadata.brokers[1].port == tls_broker
