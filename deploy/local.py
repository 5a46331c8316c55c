"""`make up`: run the whole of Weir on this machine from embedded defaults and say how to use it.

In order: migrate the control-plane database; start two controllers (`manage.py
run_controller`: the first takes the controller lock and serves, the second waits as its
standby); start WEIR_BROKERS brokers (security on, sharing the control plane's internal
token, `--controller` naming both controllers) and wait until each has registered with the
active controller, which records it as online; start the web process (gunicorn), a Celery
worker and Celery beat (the reconciler); run `manage.py demo` (its topic replicated on up to
three brokers) and print its output, then how to watch a failover. Then supervise: a child
that dies is restarted with backoff while the others keep running. A killed broker stays
down until the controller has fenced it and a while longer, so that the dashboard shows it
offline and its partitions' new leaders before it comes back and registers again. Every
child's process id is in <WEIR_DATA_DIR>/run/<name>.pid. Ctrl-C or SIGTERM stops everything
cleanly (a second one stops faster, never hangs), and so does the death of its parent (make, even
by ``kill -9``); no child outlives `make up`, not even a ``kill -9`` of this process
(server_runtime.lifeline).

Configuration (environment, twelve-factor):

==========================  ===========================  ==================================
variable                    default                      meaning
==========================  ===========================  ==================================
WEIR_DATA_DIR               ./.weir-data                 all state: database, brokers, logs
WEIR_HOST                   127.0.0.1                    interface every process listens on
WEIR_BROKERS                3                            number of brokers
WEIR_BROKER_BASE_PORT       9092                         broker N listens on base + N - 1
WEIR_KAFKA_BASE_PORT        29092                        broker N serves Kafka's protocol (stock
                                                         Kafka clients) on base + N - 1
WEIR_CONTROLLER_BASE_PORT   9190                         controller N (1: first active,
                                                         2: standby) listens on base + N - 1
WEIR_BROKER_SESSION_TIMEOUT_MS  9000                     the controllers fence a broker
                                                         silent this long
WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS  300          ... and a broker whose connection
                                                         closed this long ago, if its address
                                                         refuses connections; a dead broker is
                                                         restarted 10 s after this
WEIR_HTTP_PORT              8000                         the web process (dashboard, REST API,
                                                         its /metrics, /healthz and /readyz)
WEIR_METRICS_BASE_PORT      9300                         Prometheus /metrics: controller N on
                                                         base + N, the Celery worker on base + 9,
                                                         broker N on base + 10 + N (0: none but
                                                         the web process's own /metrics)
WEIR_DEMO_TENANT            demo                         tenant `manage.py demo` sets up
REDIS_URL                   redis://127.0.0.1:6379/0     Celery's broker (filesystem if absent)
WEIR_BROKER_<SETTING>       see broker_nodes/config.py   any broker setting; `make up` turns
                                                         auto.create.topics.enable on (Kafka's
                                                         default) unless
                                                         WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE
                                                         says otherwise
WEIR_LOG_FORMAT             text                         json: every process (and make up
                                                         itself) logs one JSON object per line
WEIR_TLS                    0                            1: make (once) a local CA and a
                                                         certificate under <WEIR_DATA_DIR>/tls
                                                         and serve TLS on every broker, both
                                                         controllers and the web process
WEIR_TLS_CERT               unset                        PEM certificate chain the web process
                                                         serves HTTPS with (instead of the
                                                         local CA's certificate)
WEIR_TLS_KEY                unset                        its private key (with WEIR_TLS_CERT)
==========================  ===========================  ==================================

Without WEIR_TLS the stack is plaintext, which is meant for loopback only. With it, clients
connect with ``security.protocol=SASL_SSL`` and ``ssl.ca.location=<WEIR_DATA_DIR>/tls/ca.pem``,
and the control plane's own clients of the brokers trust that CA (``WEIR_BROKER_TLS_CA``).

Two stacks run side by side when they differ in WEIR_DATA_DIR and the ports. WEIR_BROKER_SESSION_TIMEOUT_MS
shares the WEIR_BROKER_ prefix but is the controllers' setting (broker.session.timeout.ms): brokers do not get it.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from deploy.processes import (
    HURRIED_STOP_TIMEOUT_SECONDS,
    ChildFailedError,
    SupervisedProcess,
    any_ready,
    broker_registered,
    grpc_health_serving,
    http_ok,
    stop_all,
)
from deploy.tls import TlsFiles, TlsSetupError, ensure_local_certificates
from server_runtime.lifeline import set_parent_death_signal, signal_group, spawn
from server_runtime.logging_setup import LogFormatError, configure_logging
from server_runtime.private_files import make_new_files_private, restrict_directory
from server_runtime.stop_signals import StopSignals

# How long `demo` may wait for its provisioning jobs.
DEMO_WAIT_SECONDS = 90
# One active controller and one standby that takes over when the active one dies.
CONTROLLER_COUNT = 2
# broker.session.timeout.ms of the controllers unless WEIR_BROKER_SESSION_TIMEOUT_MS says otherwise
# (the same default as webapp.controller.service, which `make up` cannot import without Django).
DEFAULT_SESSION_TIMEOUT_MS = 9000
# How long the controllers wait after a broker's lease connection closed before they fence it (if
# nothing accepts connections at its address) unless WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS
# says otherwise (the same default as webapp.controller.service).
DEFAULT_DISCONNECT_GRACE_MS = 300
# A broker that died is restarted this long after the controller fenced it, so that the
# failover (the broker offline, its partitions led by other replicas) can be watched.
FAILOVER_VIEWING_SECONDS = 10.0
# Control-plane settings whose names brokers would otherwise read as broker settings
# (WEIR_BROKER_<SETTING>) and refuse as unknown.
CONTROL_PLANE_VARIABLES = ("WEIR_BROKER_TLS_CA", "WEIR_BROKER_SESSION_TIMEOUT_MS")
# Broker settings a local developer stack gives its brokers unless the environment sets them:
# Kafka's own defaults where Weir's production default differs. auto.create.topics.enable is on
# in Kafka, so an application that produces to (or a consumer that subscribes to) a new topic
# behaves here as against a local Kafka; the production deploy files (Kubernetes, systemd,
# compose) keep the broker's default, off, where topics are created through the control plane.
LOCAL_BROKER_DEFAULTS = {"WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE": "true"}
# What the active controller's gRPC health service reports SERVING for (a standby: NOT_SERVING).
CONTROLLER_SERVICE_NAME = "weir.v1.Controller"
# Offsets from WEIR_METRICS_BASE_PORT: controller N at +N, the worker at +9, broker N at +10+N.
METRICS_WORKER_OFFSET = 9
METRICS_BROKER_OFFSET = 10
# The broker a person is told to kill to watch a failover (broker 1 when it is the only one).
FAILOVER_EXAMPLE_NODE_ID = 2
# A broker's SIGTERM may take its controlled shutdown (controlled.shutdown.timeout.ms, 30 s
# unless WEIR_BROKER_CONTROLLED_SHUTDOWN_TIMEOUT_MS says otherwise), the requests' grace and
# the final fsync of every partition: it gets that long plus this margin before SIGKILL, so
# that stopping never skips the fsync (the next start would then recover every log).
DEFAULT_CONTROLLED_SHUTDOWN_TIMEOUT_MS = 30000
BROKER_STOP_MARGIN_SECONDS = 15.0
# How often a `manage.py` command run while starting looks whether a stop was requested.
MANAGE_POLL_SECONDS = 0.2


def _port(environment: dict[str, str], name: str, default: int) -> int:
    raw = environment.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a port number, not {raw!r}") from None
    if not 1 <= value <= 65535:
        raise SystemExit(f"{name} must be between 1 and 65535, not {value}")
    return value


def _session_timeout_ms(environment: dict[str, str]) -> int:
    raw = environment.get("WEIR_BROKER_SESSION_TIMEOUT_MS", str(DEFAULT_SESSION_TIMEOUT_MS))
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"WEIR_BROKER_SESSION_TIMEOUT_MS must be a number of milliseconds above 0, not {raw!r}")
    return int(raw)


def _disconnect_grace_ms(environment: dict[str, str]) -> int:
    raw = environment.get("WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS") or str(DEFAULT_DISCONNECT_GRACE_MS)
    if not raw.isdigit():
        raise SystemExit(f"WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS must be a number of milliseconds, not {raw!r}")
    return int(raw)


def file_stem(name: str) -> str:
    """The log and pid file name of a child: ``broker 2`` -> ``broker-2``."""
    return name.replace(" ", "-")


@dataclass(frozen=True)
class StackSettings:
    data_dir: Path
    host: str
    broker_count: int
    broker_base_port: int
    http_port: int
    demo_tenant: str
    controller_base_port: int = 9190
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    disconnect_grace_ms: int = DEFAULT_DISCONNECT_GRACE_MS
    # WEIR_TLS=1: brokers, controllers and the web process serve TLS with a local CA's certificate.
    local_tls: bool = False
    # WEIR_TLS_CERT / WEIR_TLS_KEY: what the web process serves HTTPS with, when given.
    web_certificate: Path | None = None
    web_private_key: Path | None = None
    # WEIR_METRICS_BASE_PORT: the ports of every process's /metrics but the web's (see the table); 0: none.
    metrics_base_port: int = 9300
    # WEIR_KAFKA_BASE_PORT: broker N's Kafka-protocol listener is on base + N - 1.
    kafka_base_port: int = 29092

    @classmethod
    def from_environment(cls, environment: dict[str, str]) -> StackSettings:
        raw_count = environment.get("WEIR_BROKERS", "3")
        if not raw_count.isdigit() or not 1 <= int(raw_count) <= 32:
            raise SystemExit(f"WEIR_BROKERS must be a number from 1 to 32, not {raw_count!r}")
        raw_tls = environment.get("WEIR_TLS", "0").strip().lower()
        if raw_tls not in ("0", "1", "false", "true", ""):
            raise SystemExit(f"WEIR_TLS must be 1 or 0, not {raw_tls!r}")
        web_certificate, web_private_key = environment.get("WEIR_TLS_CERT"), environment.get("WEIR_TLS_KEY")
        if bool(web_certificate) != bool(web_private_key):
            raise SystemExit("WEIR_TLS_CERT and WEIR_TLS_KEY go together: give the certificate and its private key, or neither")
        base_port = _port(environment, "WEIR_BROKER_BASE_PORT", 9092)
        if base_port + int(raw_count) - 1 > 65535:
            raise SystemExit(f"WEIR_BROKER_BASE_PORT {base_port} leaves no room for {raw_count} brokers")
        kafka_base_port = _port(environment, "WEIR_KAFKA_BASE_PORT", 29092)
        if kafka_base_port + int(raw_count) - 1 > 65535:
            raise SystemExit(f"WEIR_KAFKA_BASE_PORT {kafka_base_port} leaves no room for {raw_count} brokers")
        controller_base_port = _port(environment, "WEIR_CONTROLLER_BASE_PORT", 9190)
        if controller_base_port + CONTROLLER_COUNT - 1 > 65535:
            raise SystemExit(f"WEIR_CONTROLLER_BASE_PORT {controller_base_port} leaves no room for {CONTROLLER_COUNT} controllers")
        http_port = _port(environment, "WEIR_HTTP_PORT", 8000)
        metrics_base_port = 0 if environment.get("WEIR_METRICS_BASE_PORT", "").strip() == "0" else _port(environment, "WEIR_METRICS_BASE_PORT", 9300)
        metrics_ports = range(metrics_base_port, metrics_base_port + METRICS_BROKER_OFFSET + int(raw_count) + 1) if metrics_base_port else range(0)
        if metrics_base_port and metrics_ports[-1] > 65535:
            raise SystemExit(f"WEIR_METRICS_BASE_PORT {metrics_base_port} leaves no room for the metrics ports of {raw_count} brokers")
        _refuse_shared_ports(
            {
                "WEIR_BROKER_BASE_PORT": range(base_port, base_port + int(raw_count)),
                "WEIR_KAFKA_BASE_PORT": range(kafka_base_port, kafka_base_port + int(raw_count)),
                "WEIR_CONTROLLER_BASE_PORT": range(controller_base_port, controller_base_port + CONTROLLER_COUNT),
                "WEIR_HTTP_PORT": range(http_port, http_port + 1),
                "WEIR_METRICS_BASE_PORT": metrics_ports,
            }
        )
        return cls(
            data_dir=Path(environment.get("WEIR_DATA_DIR", ".weir-data")).resolve(),
            host=environment.get("WEIR_HOST", "127.0.0.1"),
            broker_count=int(raw_count),
            broker_base_port=base_port,
            http_port=http_port,
            demo_tenant=environment.get("WEIR_DEMO_TENANT", "demo"),
            controller_base_port=controller_base_port,
            session_timeout_ms=_session_timeout_ms(environment),
            disconnect_grace_ms=_disconnect_grace_ms(environment),
            local_tls=raw_tls in ("1", "true"),
            web_certificate=Path(web_certificate).resolve() if web_certificate else None,
            web_private_key=Path(web_private_key).resolve() if web_private_key else None,
            metrics_base_port=metrics_base_port,
            kafka_base_port=kafka_base_port,
        )

    def broker_port(self, node_id: int) -> int:
        return self.broker_base_port + node_id - 1

    def broker_address(self, node_id: int) -> str:
        return f"{self.host}:{self.broker_port(node_id)}"

    def kafka_address(self, node_id: int) -> str:
        """Where broker ``node_id`` serves Kafka's wire protocol (``--kafka-listen``)."""
        return f"{self.host}:{self.kafka_base_port + node_id - 1}"

    @property
    def kafka_bootstrap_servers(self) -> str:
        return ",".join(self.kafka_address(node_id) for node_id in self.node_ids)

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.broker_count + 1))

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.broker_address(node_id) for node_id in self.node_ids)

    def controller_address(self, controller_id: int) -> str:
        return f"{self.host}:{self.controller_base_port + controller_id - 1}"

    @property
    def controller_ids(self) -> list[int]:
        return list(range(1, CONTROLLER_COUNT + 1))

    @property
    def controller_quorum(self) -> str:
        """What brokers get as ``--controller``: every controller, the active one found by trying."""
        return ",".join(self.controller_address(controller_id) for controller_id in self.controller_ids)

    def controller_metrics_port(self, controller_id: int) -> int:
        return self.metrics_base_port + controller_id

    def broker_metrics_port(self, node_id: int) -> int:
        return self.metrics_base_port + METRICS_BROKER_OFFSET + node_id

    @property
    def worker_metrics_port(self) -> int:
        return self.metrics_base_port + METRICS_WORKER_OFFSET

    @property
    def broker_restart_delay(self) -> float:
        """Seconds a dead broker stays down: past the controller's fencing, plus time to look.

        A dead broker's lease connection closed with it, so the controller fences it once the
        disconnect grace has passed (a live but silent broker is not restarted: it has not died).
        """
        return self.disconnect_grace_ms / 1000 + FAILOVER_VIEWING_SECONDS

    @property
    def run_directory(self) -> Path:
        """Where every child's pid file is (``broker-2.pid``)."""
        return self.data_dir / "run"

    @property
    def web_url_file(self) -> Path:
        """Where the web URL is recorded for tools run beside the stack (webapp.runtime.WEB_URL_FILE)."""
        return self.run_directory / "web-url"

    def pid_file(self, name: str) -> Path:
        return self.run_directory / f"{file_stem(name)}.pid"

    def log_file(self, name: str) -> Path:
        return self.data_dir / f"{file_stem(name)}.log"

    @property
    def web_tls(self) -> bool:
        return self.local_tls or self.web_certificate is not None

    @property
    def web_url(self) -> str:
        scheme = "https" if self.web_tls else "http"
        return f"{scheme}://{self.host}:{self.http_port}"

    @property
    def tls_directory(self) -> Path:
        return self.data_dir / "tls"

    @property
    def certificate_hosts(self) -> list[str]:
        """Names the local server certificate is valid for: the stack's host, then loopback."""
        hosts = [self.host] if self.host not in ("0.0.0.0", "::") else []
        return hosts + [host for host in ("127.0.0.1", "localhost", "::1") if host not in hosts]

    @property
    def internal_token_file(self) -> Path:
        # The same file webapp.settings reads (webapp.runtime.persistent_secret).
        return self.data_dir / "secrets" / "internal-token"


def _refuse_shared_ports(ranges: dict[str, range]) -> None:
    """SystemExit naming two settings whose ports overlap (every process needs its own port)."""
    names = list(ranges)
    for index, name in enumerate(names):
        for other in names[index + 1 :]:
            shared = sorted(set(ranges[name]) & set(ranges[other]))
            if shared:
                raise SystemExit(f"{name} and {other} both give port {shared[0]}: every broker, controller and the web process needs its own port")


def prepare_tls(settings: StackSettings) -> TlsFiles | None:
    """The local CA and certificate when WEIR_TLS=1 (made on the first run), else None."""
    if not settings.local_tls:
        return None
    try:
        return ensure_local_certificates(settings.tls_directory, settings.certificate_hosts)
    except TlsSetupError as error:
        raise SystemExit(f"weir: {error}") from None


def child_environment(settings: StackSettings, base: dict[str, str], tls: TlsFiles | None = None) -> dict[str, str]:
    """The environment every child gets: one data dir, the public URL, the brokers to bootstrap.

    With ``tls`` the control plane's clients of the brokers trust its CA (WEIR_BROKER_TLS_CA).
    """
    environment = dict(base)
    if tls is not None:
        environment["WEIR_BROKER_TLS_CA"] = str(tls.ca_certificate)
    environment["WEIR_DATA_DIR"] = str(settings.data_dir)
    environment.setdefault("WEIR_PUBLIC_API_URL", settings.web_url)
    environment["WEIR_BOOTSTRAP_SERVERS"] = settings.bootstrap_servers
    environment["DJANGO_ALLOWED_HOSTS"] = environment.get("DJANGO_ALLOWED_HOSTS", f"{settings.host},127.0.0.1,localhost")
    # Debug is off (webapp.settings), so the control plane needs a key: the stack's own, kept in
    # its data directory, unless the caller gave one.
    if not environment.get("DJANGO_SECRET_KEY"):
        from webapp.runtime import persistent_secret

        environment["DJANGO_SECRET_KEY"] = persistent_secret(settings.data_dir, "django-secret-key")
    # The controllers' broker.session.timeout.ms and disconnect grace: the broker restart delay is
    # computed from the grace.
    environment["WEIR_BROKER_SESSION_TIMEOUT_MS"] = str(settings.session_timeout_ms)
    environment["WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS"] = str(settings.disconnect_grace_ms)
    environment.setdefault("PYTHONUNBUFFERED", "1")
    return environment


def announce_celery_transport(environment: dict[str, str]) -> None:
    """Say once which transport Celery uses (with Redis, the stack's own queue: two stacks may share
    one database), and keep the children from repeating it."""
    from webapp.runtime import celery_queue_name, redis_answers

    redis_url = environment.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    if redis_answers(redis_url):
        queue = celery_queue_name(Path(environment["WEIR_DATA_DIR"]), environment)
        print(f"weir: Celery uses Redis at {redis_url}, queue {queue} (this data directory's own)", flush=True)
    else:
        print(f"weir: no Redis at {redis_url}; Celery uses the filesystem transport (embedded mode)", flush=True)
    environment["WEIR_QUIET_TRANSPORT_NOTICE"] = "1"


class StopRequested(Exception):
    """A stop signal came while ``make up`` was still starting: stop instead of going on."""

    retriable = False


def manage(environment: dict[str, str], *arguments: str, stop: threading.Event | None = None) -> str:
    """Run ``manage.py`` with ``arguments`` and return its standard output; SystemExit on failure.

    With ``stop``: StopRequested, after ending the command, as soon as ``stop`` is set (a
    ``demo`` waiting for provisioning must not keep a stopping stack for a minute and a half).
    """
    process = spawn([sys.executable, "manage.py", *arguments], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while True:
        try:
            stdout, stderr = process.communicate(timeout=MANAGE_POLL_SECONDS)
            break
        except subprocess.TimeoutExpired:
            if stop is not None and stop.is_set():
                signal_group(process, signal.SIGKILL)
                process.communicate()
                raise StopRequested(f"manage.py {arguments[0]}") from None
    if process.returncode != 0:
        raise SystemExit(f"weir: `manage.py {' '.join(arguments)}` failed:\n{stderr.strip() or stdout.strip()}")
    return stdout


def internal_token_reader(settings: StackSettings, environment: dict[str, str]) -> Callable[[], str]:
    """How `make up` reads the internal token for its own probes: WEIR_INTERNAL_TOKEN when set,
    else the file the control plane's settings create (read on every call: it may not exist yet)."""
    token = environment.get("WEIR_INTERNAL_TOKEN", "").strip()
    if token:
        return lambda: token
    return lambda: settings.internal_token_file.read_text(encoding="utf-8").strip()


def controller_processes(settings: StackSettings, environment: dict[str, str], tls: TlsFiles | None = None) -> list[SupervisedProcess]:
    """``manage.py run_controller`` twice: whichever takes the controller lock first serves,
    the other waits as its standby and takes over when it dies.

    A standby listens but answers NOT_SERVING for "weir.v1.Controller", so a controller counts
    as ready when some controller is active: at the start the first one (it takes the lock),
    after a restart the one that took over.
    """
    ca_certificate = tls.ca_certificate if tls is not None else None
    ready = any_ready(
        *(
            grpc_health_serving(settings.controller_address(controller_id), CONTROLLER_SERVICE_NAME, ca_certificate=ca_certificate)
            for controller_id in settings.controller_ids
        )
    )
    arguments = ["--tls-cert", str(tls.certificate), "--tls-key", str(tls.private_key)] if tls is not None else []
    processes = []
    for controller_id in settings.controller_ids:
        name = f"controller {controller_id}"
        processes.append(
            SupervisedProcess(
                name,
                [
                    sys.executable,
                    "manage.py",
                    "run_controller",
                    "--listen",
                    settings.controller_address(controller_id),
                    "--metrics-port",
                    str(settings.controller_metrics_port(controller_id) if settings.metrics_base_port else 0),
                    *arguments,
                ],
                log_path=settings.log_file(name),
                environment=environment,
                ready=ready,
                pid_file=settings.pid_file(name),
            )
        )
    return processes


def broker_stop_timeout(environment: dict[str, str]) -> float:
    """Seconds a broker gets between SIGTERM and SIGKILL (see BROKER_STOP_MARGIN_SECONDS)."""
    raw = environment.get("WEIR_BROKER_CONTROLLED_SHUTDOWN_TIMEOUT_MS", "").strip()
    # A bad value makes the broker itself refuse to start, naming it; the default is then moot.
    timeout_ms = int(raw) if raw.isdigit() else DEFAULT_CONTROLLED_SHUTDOWN_TIMEOUT_MS
    return timeout_ms / 1000 + BROKER_STOP_MARGIN_SECONDS


def broker_processes(settings: StackSettings, environment: dict[str, str], tls: TlsFiles | None = None) -> list[SupervisedProcess]:
    """The brokers, each ready once it has registered with the active controller."""
    broker_environment = LOCAL_BROKER_DEFAULTS | {name: value for name, value in environment.items() if name not in CONTROL_PLANE_VARIABLES}
    arguments: list[str] = ["--controller", settings.controller_quorum]
    if "WEIR_INTERNAL_TOKEN" not in environment:
        # The control plane's settings create this file; brokers read the same secret.
        arguments += ["--internal-token-file", str(settings.internal_token_file)]
    if tls is not None:
        # --tls-ca: brokers verify the controllers and each other against the local CA.
        arguments += ["--tls-cert", str(tls.certificate), "--tls-key", str(tls.private_key), "--tls-ca", str(tls.ca_certificate)]
    internal_token = internal_token_reader(settings, environment)
    processes = []
    for node_id in settings.node_ids:
        name = f"broker {node_id}"
        data_dir = settings.data_dir / f"broker-{node_id}"
        data_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "broker_nodes",
            "--node-id",
            str(node_id),
            "--listen",
            settings.broker_address(node_id),
            "--kafka-listen",
            settings.kafka_address(node_id),
            "--data-dir",
            str(data_dir),
            "--config",
            "security.required=true",
            "--metrics-port",
            str(settings.broker_metrics_port(node_id) if settings.metrics_base_port else 0),
            *arguments,
        ]
        processes.append(
            SupervisedProcess(
                name,
                command,
                log_path=settings.log_file(name),
                environment=broker_environment,
                ready=broker_registered(
                    settings.broker_address(node_id), internal_token=internal_token, ca_certificate=tls.ca_certificate if tls is not None else None
                ),
                pid_file=settings.pid_file(name),
                restart_delay=settings.broker_restart_delay,
                stop_timeout=broker_stop_timeout(broker_environment),
            )
        )
    return processes


def web_command(settings: StackSettings, tls: TlsFiles | None = None) -> list[str]:
    """gunicorn serving the dashboard and API; HTTPS with WEIR_TLS_CERT/KEY, else the local certificate.
    Its workers and threads are webapp.gunicorn_config's: one worker per CPU unless WEIR_WEB_WORKERS
    and WEIR_WEB_THREADS say otherwise."""
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "webapp.wsgi",
        # Graceful-stop timeout and, with WEIR_LOG_FORMAT=json, gunicorn's logs as JSON lines.
        "--config",
        "python:webapp.gunicorn_config",
        "--bind",
        f"{settings.host}:{settings.http_port}",
        "--access-logfile",
        "-",
    ]
    if settings.web_certificate is not None and settings.web_private_key is not None:
        command += ["--certfile", str(settings.web_certificate), "--keyfile", str(settings.web_private_key)]
    elif tls is not None:
        command += ["--certfile", str(tls.certificate), "--keyfile", str(tls.private_key)]
    return command


def web_ready_context(settings: StackSettings, tls: TlsFiles | None) -> ssl.SSLContext | None:
    """How the readiness probe speaks to the web process: None for plain HTTP.

    A certificate of our local CA is verified. A certificate given through WEIR_TLS_CERT may
    name a public host rather than the loopback address the probe uses, so the probe then
    only asks whether the server answers, without verifying it: it makes no trust decision.
    """
    if not settings.web_tls:
        return None
    if settings.web_certificate is None and tls is not None:
        return ssl.create_default_context(cafile=str(tls.ca_certificate))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def control_plane_processes(settings: StackSettings, environment: dict[str, str], tls: TlsFiles | None = None) -> list[SupervisedProcess]:
    web = SupervisedProcess(
        "web",
        web_command(settings, tls),
        log_path=settings.log_file("web"),
        environment=environment,
        ready=http_ok(f"{settings.web_url}/healthz", context=web_ready_context(settings, tls)),
        pid_file=settings.pid_file("web"),
    )
    worker = SupervisedProcess(
        "celery worker",
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "--loglevel", "INFO", "--concurrency", "2"],
        log_path=settings.log_file("celery worker"),
        # Only the worker serves metrics on its own port (webapp.observability.task_metrics).
        environment={
            **environment,
            "WEIR_WORKER_METRICS_PORT": str(settings.worker_metrics_port if settings.metrics_base_port else 0),
            "WEIR_WORKER_METRICS_HOST": settings.host,
        },
        pid_file=settings.pid_file("celery worker"),
    )
    beat = SupervisedProcess(
        "celery beat",
        [sys.executable, "-m", "celery", "-A", "webapp", "beat", "--loglevel", "INFO"],
        log_path=settings.log_file("celery beat"),
        environment=environment,
        pid_file=settings.pid_file("celery beat"),
    )
    # Consumer lag and Burrow's status within seconds of a commit (spark_pipelines.lag_monitor).
    lag_monitor = SupervisedProcess(
        "lag monitor",
        [sys.executable, "-m", "spark_pipelines.lag_monitor"],
        log_path=settings.log_file("lag monitor"),
        environment=environment,
        pid_file=settings.pid_file("lag monitor"),
    )
    return [web, worker, beat, lag_monitor]


def tls_instructions(settings: StackSettings, tls: TlsFiles | None) -> str:
    """What a client needs besides the demo's credentials when the stack speaks TLS ("" without TLS)."""
    lines = []
    if tls is not None:
        lines += [
            "TLS:         every broker, both controllers and the web process serve TLS with a certificate of the local CA",
            "  security.protocol=SASL_SSL (the SDK and stock Kafka clients alike)",
            f"  ssl.ca.location={tls.ca_certificate}",
            f"  curl --cacert {tls.ca_certificate} -u KEY:SECRET {settings.web_url}/api/v1/topics",
        ]
    elif settings.web_certificate is not None:
        lines += [f"TLS:         the web process serves HTTPS at {settings.web_url} with {settings.web_certificate}; brokers are plaintext"]
    return "\n".join(lines)


def metrics_instructions(settings: StackSettings) -> str:
    """Where every process serves Prometheus metrics, and the scrape config that reads them all."""
    if not settings.metrics_base_port:
        return f"Metrics:     web {settings.web_url}/metrics (health: /healthz, /readyz); WEIR_METRICS_BASE_PORT=0: no other process serves metrics"
    host = settings.host
    controllers = ", ".join(f"http://{host}:{settings.controller_metrics_port(controller_id)}/metrics" for controller_id in settings.controller_ids)
    brokers = ", ".join(f"http://{host}:{settings.broker_metrics_port(node_id)}/metrics" for node_id in settings.node_ids)
    return "\n".join(
        [
            f"Metrics:     web {settings.web_url}/metrics (health: /healthz, /readyz)",
            f"  controllers {controllers}",
            f"  brokers {brokers}",
            f"  celery worker http://{host}:{settings.worker_metrics_port}/metrics",
            "  Prometheus: prometheus --config.file=deploy/prometheus/prometheus.yml (alert rules: deploy/prometheus/alerts.yml)",
        ]
    )


def failover_instructions(settings: StackSettings) -> str:
    """How to kill a broker and watch the controller move its partitions, printed last."""
    node_id = min(FAILOVER_EXAMPLE_NODE_ID, settings.broker_count)
    name = f"broker {node_id}"
    fenced = "its connection to the controller closes with it, so within about a second the controller fences it"
    if settings.broker_count > 1:
        consequence = f"{fenced} and moves its leaderships to in-sync replicas"
    else:
        consequence = f"{fenced}; with one broker its partitions are offline until it is back"
    return "\n".join(
        [
            f"Failover:    kill -9 $(cat {settings.pid_file(name)})",
            f"  {consequence};",
            f"  watch it in the dashboard: {settings.web_url}/brokers/ (states) and {settings.web_url}/topics/demo/ (leaders, ISR).",
            f"  {settings.broker_restart_delay:g} s after it died, make up starts {name} again and it registers with the controller by itself.",
            f"  kill -9 $(cat {settings.pid_file('controller 1')}) makes the standby controller active within seconds.",
        ]
    )


@dataclass(frozen=True)
class Stage:
    """Children started together (in order, each ready before the next), then ``started`` is printed."""

    children: list[SupervisedProcess]
    started: str


def startup_stages(settings: StackSettings, environment: dict[str, str], tls: TlsFiles | None = None) -> list[Stage]:
    """What `make up` starts, in order: controllers, brokers (each ready once the controller
    recorded it online, so that the demo's topic is placed on all of them), the control plane."""
    protocol = " over TLS" if tls is not None else ""
    active, standby = settings.controller_address(1), settings.controller_address(2)
    brokers = broker_processes(settings, environment, tls)
    return [
        Stage(controller_processes(settings, environment, tls), f"controller active at {active}{protocol}, its standby at {standby}"),
        Stage(
            brokers,
            f"{len(brokers)} broker(s) serving{protocol} at {settings.bootstrap_servers} (Kafka clients: {settings.kafka_bootstrap_servers}), "
            "registered with the controller",
        ),
        Stage(control_plane_processes(settings, environment, tls), f"web at {settings.web_url}, Celery worker and beat running; setting up the demo ..."),
    ]


class Shutdown:
    """What stop signals do to a running ``make up``: the first sets ``requested`` and stops every
    start and restart at once; each later one hurries the stop (every child gets
    HURRIED_STOP_TIMEOUT_SECONDS before SIGKILL). Called from the stop-signal thread, never from
    a handler (see server_runtime.stop_signals)."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.children: list[SupervisedProcess] = []

    def begin(self, _signal_number: int = signal.SIGTERM) -> None:
        self.requested.set()
        for child in list(self.children):
            child.request_stop()

    def hurry(self, _signal_number: int = signal.SIGTERM) -> None:
        print(f"weir: stopping faster: every process left gets {HURRIED_STOP_TIMEOUT_SECONDS:g} s before SIGKILL", flush=True)
        for child in list(self.children):
            child.hurry()


def stop_tiers(children: list[SupervisedProcess]) -> list[list[SupervisedProcess]]:
    """In which order ``make up`` stops what it started: the control plane first (beat, the
    worker and the web process together, so that no pipeline run or push starts while the
    brokers go away), then every broker together, then the controllers one at a time, the
    standby before the active one, so that stopping brokers can still hand leaderships over."""
    control_plane = [child for child in children if not child.name.startswith(("broker ", "controller "))]
    brokers = [child for child in children if child.name.startswith("broker ")]
    controllers = [[child] for child in reversed(children) if child.name.startswith("controller ")]
    return [tier for tier in [control_plane, brokers, *controllers] if tier]


def run(settings: StackSettings, stop: threading.Event, shutdown: Shutdown | None = None) -> int:
    """Start the stack, print how to use it, supervise until ``stop`` is set.

    ``shutdown`` (main's, fed by the stop signals) learns each child before it starts, so that
    a signal during the start-up ends waits for readiness at once; ``stop`` is its ``requested``.
    """
    shutdown = shutdown or Shutdown()
    children = shutdown.children
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    # Everyone else stays out of the stack's state (brokers' logs, database, secrets, TLS keys).
    restrict_directory(settings.data_dir)
    settings.run_directory.mkdir(parents=True, exist_ok=True)
    # `manage.py demo` run beside the stack (another shell, same data directory) prints this URL.
    settings.web_url_file.write_text(settings.web_url + "\n", encoding="utf-8")
    tls = prepare_tls(settings)
    environment = child_environment(settings, dict(os.environ), tls)
    announce_celery_transport(environment)
    try:
        print("weir: migrating the control-plane database ...", flush=True)
        manage(environment, "migrate", "--noinput", stop=stop)
        manage(environment, "collectstatic", "--noinput", stop=stop)
        for stage in startup_stages(settings, environment, tls):
            for child in stage.children:
                # Known to the shutdown before the stop is checked: a signal in between still reaches it.
                children.append(child)
                if stop.is_set():
                    raise StopRequested(f"starting {child.name}")
                child.start()
            print(f"weir: {stage.started}", flush=True)
        print(manage(environment, "demo", "--tenant", settings.demo_tenant, "--wait-seconds", str(DEMO_WAIT_SECONDS), stop=stop), flush=True)
        instructions = tls_instructions(settings, tls)
        if instructions:
            print(instructions + "\n", flush=True)
        print(metrics_instructions(settings) + "\n", flush=True)
        print(failover_instructions(settings) + "\n", flush=True)
        print(f"Processes:   {', '.join(child.name for child in children)} (pid files: {settings.run_directory}/*.pid)", flush=True)
        print(f"Logs:        {settings.data_dir}/*.log      Stop: Ctrl-C", flush=True)
        supervisors = [threading.Thread(target=child.supervise, name=f"supervise {child.name}", daemon=True) for child in children]
        for supervisor in supervisors:
            supervisor.start()
        while not stop.wait(0.5):
            pass
        return 0
    except (KeyboardInterrupt, StopRequested):
        return 0
    except ChildFailedError as error:
        if stop.is_set():
            return 0  # a child stopped by the signal while starting: not a failure
        print(f"weir: {error}", file=sys.stderr)
        return 1
    finally:
        print("\nStopping Weir ...", flush=True)
        for child in children:
            child.request_stop()
        stop_all(stop_tiers(children))


def main() -> int:
    # Every file and directory the stack creates is its owner's only (children inherit the umask).
    make_new_files_private()
    try:
        configure_logging(text_format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    except LogFormatError as error:
        raise SystemExit(f"weir: {error}") from None
    settings = StackSettings.from_environment(dict(os.environ))
    parent = os.getppid()
    shutdown = Shutdown()
    # Ctrl-C and SIGTERM, once or many times: see server_runtime.stop_signals for why no handler sets
    # an Event itself.
    StopSignals(on_first=shutdown.begin, on_again=shutdown.hurry).install()
    # This process is make's child under `make up`: make killed, even with -9, stops the stack as a
    # SIGTERM does, so nothing outlives `make up` (the lifeline covers a kill -9 of this process).
    if set_parent_death_signal(signal.SIGTERM) and os.getppid() != parent:
        shutdown.begin()  # the parent died before the signal was asked for: none will come
    return run(settings, shutdown.requested, shutdown)


if __name__ == "__main__":
    sys.exit(main())
