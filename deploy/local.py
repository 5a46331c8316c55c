"""`make up`: run the whole of Weir on this machine from embedded defaults and say how to use it.

In order: migrate the control-plane database; start WEIR_BROKERS brokers (security on,
sharing the control plane's internal token); register them; start the web process
(gunicorn), a Celery worker and Celery beat (the reconciler); run `manage.py demo` and print
its output. Then supervise: a child that dies is restarted with backoff while the others keep
running. Ctrl-C or SIGTERM stops everything cleanly.

Configuration (environment, twelve-factor):

==========================  ===========================  ==================================
variable                    default                      meaning
==========================  ===========================  ==================================
WEIR_DATA_DIR               ./.weir-data                 all state: database, brokers, logs
WEIR_HOST                   127.0.0.1                    interface every process listens on
WEIR_BROKERS                3                            number of brokers
WEIR_BROKER_BASE_PORT       9092                         broker N listens on base + N - 1
WEIR_HTTP_PORT              8000                         the web process (dashboard, REST API)
WEIR_DEMO_TENANT            demo                         tenant `manage.py demo` sets up
REDIS_URL                   redis://127.0.0.1:6379/0     Celery's broker (filesystem if absent)
WEIR_BROKER_<SETTING>       see broker_nodes/config.py   any broker setting
==========================  ===========================  ==================================

Two stacks run side by side when they differ in WEIR_DATA_DIR and the ports.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from deploy.processes import ChildFailedError, SupervisedProcess, grpc_serving, http_ok

LOG = logging.getLogger("weir.up")

# Threads of the single gunicorn worker: enough for the dashboard and API on one machine.
WEB_THREADS = 8
# How long `demo` may wait for its provisioning jobs.
DEMO_WAIT_SECONDS = 90


def _port(environment: dict[str, str], name: str, default: int) -> int:
    raw = environment.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a port number, not {raw!r}") from None
    if not 1 <= value <= 65535:
        raise SystemExit(f"{name} must be between 1 and 65535, not {value}")
    return value


@dataclass(frozen=True)
class StackSettings:
    data_dir: Path
    host: str
    broker_count: int
    broker_base_port: int
    http_port: int
    demo_tenant: str

    @classmethod
    def from_environment(cls, environment: dict[str, str]) -> "StackSettings":
        raw_count = environment.get("WEIR_BROKERS", "3")
        if not raw_count.isdigit() or not 1 <= int(raw_count) <= 32:
            raise SystemExit(f"WEIR_BROKERS must be a number from 1 to 32, not {raw_count!r}")
        base_port = _port(environment, "WEIR_BROKER_BASE_PORT", 9092)
        if base_port + int(raw_count) - 1 > 65535:
            raise SystemExit(f"WEIR_BROKER_BASE_PORT {base_port} leaves no room for {raw_count} brokers")
        return cls(
            data_dir=Path(environment.get("WEIR_DATA_DIR", ".weir-data")).resolve(),
            host=environment.get("WEIR_HOST", "127.0.0.1"),
            broker_count=int(raw_count),
            broker_base_port=base_port,
            http_port=_port(environment, "WEIR_HTTP_PORT", 8000),
            demo_tenant=environment.get("WEIR_DEMO_TENANT", "demo"),
        )

    def broker_port(self, node_id: int) -> int:
        return self.broker_base_port + node_id - 1

    def broker_address(self, node_id: int) -> str:
        return f"{self.host}:{self.broker_port(node_id)}"

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.broker_count + 1))

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.broker_address(node_id) for node_id in self.node_ids)

    @property
    def web_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    @property
    def internal_token_file(self) -> Path:
        # The same file webapp.settings reads (webapp.runtime.persistent_secret).
        return self.data_dir / "secrets" / "internal-token"


def child_environment(settings: StackSettings, base: dict[str, str]) -> dict[str, str]:
    """The environment every child gets: one data dir, the public URL, the brokers to bootstrap."""
    environment = dict(base)
    environment["WEIR_DATA_DIR"] = str(settings.data_dir)
    environment.setdefault("WEIR_PUBLIC_API_URL", settings.web_url)
    environment["WEIR_BOOTSTRAP_SERVERS"] = settings.bootstrap_servers
    environment["DJANGO_ALLOWED_HOSTS"] = environment.get("DJANGO_ALLOWED_HOSTS", f"{settings.host},127.0.0.1,localhost")
    environment.setdefault("PYTHONUNBUFFERED", "1")
    return environment


def announce_celery_transport(environment: dict[str, str]) -> None:
    """Say once which transport Celery uses, and keep the children from repeating it."""
    from webapp.runtime import redis_answers

    redis_url = environment.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    if redis_answers(redis_url):
        print(f"weir: Celery uses Redis at {redis_url}", flush=True)
    else:
        print(f"weir: no Redis at {redis_url}; Celery uses the filesystem transport (embedded mode)", flush=True)
    environment["WEIR_QUIET_TRANSPORT_NOTICE"] = "1"


def manage(environment: dict[str, str], *arguments: str) -> str:
    """Run ``manage.py`` with ``arguments`` and return its standard output; SystemExit on failure."""
    command = [sys.executable, "manage.py", *arguments]
    completed = subprocess.run(command, env=environment, capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"weir: `manage.py {' '.join(arguments)}` failed:\n{completed.stderr.strip() or completed.stdout.strip()}")
    return completed.stdout


def broker_processes(settings: StackSettings, environment: dict[str, str]) -> list[SupervisedProcess]:
    broker_environment = dict(environment)
    arguments: list[str] = []
    if "WEIR_INTERNAL_TOKEN" not in environment:
        # The control plane's settings create this file; brokers read the same secret.
        arguments = ["--internal-token-file", str(settings.internal_token_file)]
    processes = []
    for node_id in settings.node_ids:
        data_dir = settings.data_dir / f"broker-{node_id}"
        data_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "broker_nodes",
            "--node-id", str(node_id),
            "--listen", settings.broker_address(node_id),
            "--data-dir", str(data_dir),
            "--config", "security.required=true",
            *arguments,
        ]
        processes.append(
            SupervisedProcess(
                f"broker {node_id}",
                command,
                log_path=settings.data_dir / f"broker-{node_id}.log",
                environment=broker_environment,
                ready=grpc_serving(settings.broker_address(node_id)),
            )
        )
    return processes


def control_plane_processes(settings: StackSettings, environment: dict[str, str]) -> list[SupervisedProcess]:
    web = SupervisedProcess(
        "web",
        [
            sys.executable, "-m", "gunicorn", "webapp.wsgi",
            "--bind", f"{settings.host}:{settings.http_port}",
            "--workers", "1", "--threads", str(WEB_THREADS),
            "--access-logfile", "-",
        ],
        log_path=settings.data_dir / "web.log",
        environment=environment,
        ready=http_ok(f"{settings.web_url}/healthz"),
    )
    worker = SupervisedProcess(
        "celery worker",
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "--loglevel", "INFO", "--concurrency", "2"],
        log_path=settings.data_dir / "celery-worker.log",
        environment=environment,
    )
    beat = SupervisedProcess(
        "celery beat",
        [sys.executable, "-m", "celery", "-A", "webapp", "beat", "--loglevel", "INFO"],
        log_path=settings.data_dir / "celery-beat.log",
        environment=environment,
    )
    return [web, worker, beat]


def run(settings: StackSettings, stop: threading.Event) -> int:
    """Start the stack, print how to use it, supervise until ``stop`` is set or Ctrl-C."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    environment = child_environment(settings, dict(os.environ))
    announce_celery_transport(environment)
    print("weir: migrating the control-plane database ...", flush=True)
    manage(environment, "migrate", "--noinput")
    manage(environment, "collectstatic", "--noinput")
    children: list[SupervisedProcess] = []
    try:
        brokers = broker_processes(settings, environment)
        for child in brokers:
            children.append(child)
            child.start()
        print(f"weir: {len(brokers)} broker(s) serving at {settings.bootstrap_servers}", flush=True)
        for node_id in settings.node_ids:
            manage(environment, "register_broker", "--node-id", str(node_id), "--host", settings.host, "--port", str(settings.broker_port(node_id)))
        for child in control_plane_processes(settings, environment):
            children.append(child)
            child.start()
        print(f"weir: web at {settings.web_url}, Celery worker and beat running; setting up the demo ...", flush=True)
        print(manage(environment, "demo", "--tenant", settings.demo_tenant, "--wait-seconds", str(DEMO_WAIT_SECONDS)), flush=True)
        print(f"Logs: {settings.data_dir}/*.log      Stop: Ctrl-C", flush=True)
        supervisors = [threading.Thread(target=child.supervise, name=f"supervise {child.name}", daemon=True) for child in children]
        for supervisor in supervisors:
            supervisor.start()
        while not stop.wait(0.5):
            pass
        return 0
    except KeyboardInterrupt:
        return 0
    except ChildFailedError as error:
        print(f"weir: {error}", file=sys.stderr)
        return 1
    finally:
        print("\nStopping Weir ...", flush=True)
        # The control plane first, so that nothing pushes to brokers that are going away.
        for child in reversed(children):
            child.stop()


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = StackSettings.from_environment(dict(os.environ))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return run(settings, stop)


if __name__ == "__main__":
    sys.exit(main())
