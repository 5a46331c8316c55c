"""Decisions the settings make from the machine they run on: secrets kept in the data
directory, Celery's transport (Redis when it answers, the filesystem otherwise), and the names that
keep two stacks sharing one Redis apart (their Celery queues and cache keys)."""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

# How long the settings wait for Redis before falling back to the filesystem transport.
REDIS_PROBE_TIMEOUT_SECONDS = 0.5
# Seconds between a filesystem-transport worker's looks for new tasks (kombu's default is 1 s, which
# a created topic waited half of on average); one directory listing each, about nothing when idle.
FILESYSTEM_POLLING_SECONDS = 0.05
# Where `make up` records its web process's URL (deploy.local.StackSettings.web_url_file), so that
# a `manage.py demo` run beside the stack prints the stack's URL, whatever WEIR_HTTP_PORT it has.
WEB_URL_FILE = Path("run") / "web-url"
DEFAULT_HTTP_PORT = 8000


def stack_web_url(data_dir: Path, environment: dict[str, str] | os._Environ[str]) -> str:
    """How users reach the web process of the stack in ``data_dir`` (no trailing slash):
    WEIR_PUBLIC_API_URL when set, else what `make up` recorded in ``<data dir>/run/web-url``,
    else ``http://127.0.0.1:<WEIR_HTTP_PORT or 8000>``."""
    explicit = environment.get("WEIR_PUBLIC_API_URL", "").strip()
    if explicit:
        return explicit.rstrip("/")
    try:
        recorded = (data_dir / WEB_URL_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        recorded = ""
    if recorded:
        return recorded.rstrip("/")
    port = environment.get("WEIR_HTTP_PORT", "").strip() or str(DEFAULT_HTTP_PORT)
    return f"http://127.0.0.1:{port}"


def stack_key(data_dir: Path) -> str:
    """``weir-<12 hex digits>`` naming the stack whose data directory is ``data_dir`` (resolved): the
    prefix of its web cache's keys and its Celery queue's default name, so that two stacks sharing
    one Redis database (two clones each running `make up`) never read each other's entries or jobs."""
    return "weir-" + hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:12]


def celery_queue_name(data_dir: Path, environment: Mapping[str, str]) -> str:
    """The stack's Celery queue: WEIR_CELERY_QUEUE when set (processes on several machines share
    one), else :func:`stack_key` of its data directory."""
    return environment.get("WEIR_CELERY_QUEUE") or stack_key(data_dir)


def persistent_secret(data_dir: Path, name: str) -> str:
    """A random secret stored in ``<data_dir>/secrets/<name>`` (mode 0600), created on first use.

    Every process of one stack (web, worker, beat, brokers) reads the same value.
    """
    directory = data_dir / "secrets"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / name
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    value = secrets.token_urlsafe(48)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(value)
    try:
        # Two processes starting at once: the first link wins, both read the winner.
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(temporary)
    return path.read_text().strip()


def stored_secret(data_dir: Path, name: str) -> str | None:
    """The secret :func:`persistent_secret` keeps as ``name`` in ``data_dir``, or None when none is
    kept there yet (nothing is created)."""
    try:
        return (data_dir / "secrets" / name).read_text().strip() or None
    except FileNotFoundError:
        return None


def redis_answers(url: str, timeout: float = REDIS_PROBE_TIMEOUT_SECONDS) -> bool:
    """True when a Redis server answers PING at ``url``."""
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout=timeout) as connection:
            connection.settimeout(timeout)
            if parsed.password:
                connection.sendall(f"AUTH {parsed.password}\r\n".encode())
                connection.recv(64)
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def celery_broker_url(redis_url: str, data_dir: Path, *, filesystem_fallback: bool = True) -> tuple[str, dict[str, object]]:
    """Celery's broker URL and transport options: Redis if it answers, else kombu's filesystem
    transport under ``<data_dir>/celery`` (embedded default; one process tree on one machine).

    Without ``filesystem_fallback`` (WEIR_CELERY_FILESYSTEM_FALLBACK=false, as in deploy/'s
    manifests) it is always Redis, unprobed: processes on different machines must share one
    queue, and one that started while Redis was briefly away must wait for it (Celery retries)
    rather than queue jobs into a directory no worker reads.
    """
    if not filesystem_fallback or redis_answers(redis_url):
        return redis_url, {}
    queue_dir = data_dir / "celery"
    for sub in ("queue", "processed", "control"):
        (queue_dir / sub).mkdir(parents=True, exist_ok=True)
    if os.environ.get("WEIR_QUIET_TRANSPORT_NOTICE") != "1":
        print(f"weir: no Redis at {redis_url}; Celery uses the filesystem transport in {queue_dir}", file=sys.stderr)
        # Say it once per process tree, not once per imported settings module in each child.
        os.environ["WEIR_QUIET_TRANSPORT_NOTICE"] = "1"
    options = {
        "data_folder_in": str(queue_dir / "queue"),
        "data_folder_out": str(queue_dir / "queue"),
        "processed_folder": str(queue_dir / "processed"),
        "store_processed": "false",
        # Exchange bindings; kombu's default is a "control" folder in the working directory.
        "control_folder": str(queue_dir / "control"),
        # kombu's filesystem consumer looks at the queue directory every polling_interval (1 s by
        # default): the wait between a job's queueing and its worker, on every topic created.
        "polling_interval": FILESYSTEM_POLLING_SECONDS,
    }
    return "filesystem://", options
