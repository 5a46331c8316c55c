"""A local certificate authority for ``WEIR_TLS=1 make up``, made with the ``openssl`` command.

Layout of the directory (``<WEIR_DATA_DIR>/tls/``), created once and reused by later runs:

=================  =====  ==========================================================
file               mode   content
=================  =====  ==========================================================
ca.pem             0644   the local CA's self-signed certificate: what clients trust
                          (``ssl.ca.location``, ``curl --cacert``)
ca-key.pem         0600   the CA's private key (signs the server certificate)
server.pem         0644   the certificate every process of the stack serves, signed by
                          the CA, with subjectAltName for the stack's host names
server-key.pem     0600   its private key
=================  =====  ==========================================================

Invariant: the four files exist together or not at all. They are made in a temporary
directory beside the final one and renamed into place in one step, so an interrupted run
leaves nothing half-made. Keys are EC P-256 (fast to make, supported by gRPC and OpenSSL).
Certificates carry the extensions strict X.509 verifiers require (CA basicConstraints and
keyUsage, serverAuth, key identifiers), so Python's ``ssl``, gRPC and curl all accept them.

Not thread-safe: one ``make up`` per data directory.
"""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# The CA outlives many stacks; the server certificate stays within the 825 days that
# browsers and Apple platforms accept for a TLS server certificate.
CA_VALIDITY_DAYS = 3650
SERVER_VALIDITY_DAYS = 825
# How long one openssl invocation may take before the setup is declared failed.
OPENSSL_TIMEOUT_SECONDS = 30

CA_CERTIFICATE = "ca.pem"
CA_KEY = "ca-key.pem"
SERVER_CERTIFICATE = "server.pem"
SERVER_KEY = "server-key.pem"


class TlsSetupError(Exception):
    """The local CA or server certificate could not be made (``openssl`` missing or failing)."""

    retriable = False

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"TLS setup: {step}: {reason}")
        self.step = step
        self.reason = reason


@dataclass(frozen=True)
class TlsFiles:
    """Where a stack's TLS material is: the CA clients trust, and the certificate and key servers serve."""

    ca_certificate: Path
    certificate: Path
    private_key: Path


def _subject_alternative_names(hosts: list[str]) -> str:
    """``subjectAltName`` value: ``IP:`` for addresses, ``DNS:`` for names, each once, in order."""
    entries: list[str] = []
    for host in hosts:
        try:
            entry = f"IP:{ipaddress.ip_address(host)}"
        except ValueError:
            entry = f"DNS:{host}"
        if entry not in entries:
            entries.append(entry)
    return ",".join(entries)


def _openssl(step: str, arguments: list[str], directory: Path) -> None:
    executable = shutil.which("openssl")
    if executable is None:
        raise TlsSetupError(step, "the `openssl` command is not installed (Debian/Ubuntu: apt-get install openssl)")
    try:
        subprocess.run([executable, *arguments], cwd=directory, check=True, capture_output=True, text=True, timeout=OPENSSL_TIMEOUT_SECONDS)
    except subprocess.CalledProcessError as error:
        raise TlsSetupError(step, (error.stderr or error.stdout or f"exit code {error.returncode}").strip()) from None
    except subprocess.TimeoutExpired:
        raise TlsSetupError(step, f"openssl did not finish within {OPENSSL_TIMEOUT_SECONDS} s") from None


def _make(directory: Path, hosts: list[str]) -> None:
    """Write the CA and a server certificate for ``hosts`` into the empty ``directory``."""
    key_options = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "creating the local CA",
        [
            "req",
            "-x509",
            *key_options,
            "-keyout",
            CA_KEY,
            "-out",
            CA_CERTIFICATE,
            "-days",
            str(CA_VALIDITY_DAYS),
            "-subj",
            "/O=Weir/CN=Weir local CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
        directory,
    )
    _openssl("creating the server key", ["req", *key_options, "-keyout", SERVER_KEY, "-out", "server.csr", "-subj", f"/O=Weir/CN={hosts[0]}"], directory)
    (directory / "server.ext").write_text(
        "\n".join(
            [
                "basicConstraints=critical,CA:FALSE",
                "keyUsage=critical,digitalSignature,keyEncipherment",
                "extendedKeyUsage=serverAuth",
                "subjectKeyIdentifier=hash",
                "authorityKeyIdentifier=keyid,issuer",
                f"subjectAltName={_subject_alternative_names(hosts)}",
                "",
            ]
        )
    )
    _openssl(
        "signing the server certificate",
        [
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            CA_CERTIFICATE,
            "-CAkey",
            CA_KEY,
            "-CAcreateserial",
            "-out",
            SERVER_CERTIFICATE,
            "-days",
            str(SERVER_VALIDITY_DAYS),
            "-extfile",
            "server.ext",
        ],
        directory,
    )
    for leftover in ("server.csr", "server.ext", "ca.srl"):
        (directory / leftover).unlink(missing_ok=True)
    for name in (CA_KEY, SERVER_KEY):
        (directory / name).chmod(0o600)
    for name in (CA_CERTIFICATE, SERVER_CERTIFICATE):
        (directory / name).chmod(0o644)


def ensure_local_certificates(directory: Path, hosts: list[str]) -> TlsFiles:
    """The local CA and server certificate in ``directory``, made on first use and reused after.

    ``hosts`` are the names and addresses the server certificate is valid for; the first is
    its common name. Existing files are kept as they are (delete the directory to make new
    ones, e.g. after changing WEIR_HOST). Raises TlsSetupError when openssl fails.
    """
    if not hosts:
        raise ValueError("a server certificate needs at least one host name or address")
    files = TlsFiles(directory / CA_CERTIFICATE, directory / SERVER_CERTIFICATE, directory / SERVER_KEY)
    if directory.exists():
        missing = [name for name in (CA_CERTIFICATE, CA_KEY, SERVER_CERTIFICATE, SERVER_KEY) if not (directory / name).is_file()]
        if missing:
            raise TlsSetupError("reusing " + str(directory), f"{', '.join(missing)} missing; delete the directory to make a new CA")
        return files
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tls-", dir=directory.parent))
    try:
        _make(staging, hosts)
        staging.chmod(0o700)
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return files
