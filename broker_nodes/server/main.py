"""The broker process: ``python -m broker_nodes --node-id N --listen HOST:PORT --data-dir DIR ...``.

Exit codes: 0 after a graceful shutdown (SIGTERM or SIGINT), 2 for bad arguments or
settings, 1 when the broker cannot start (for example a data directory of another node).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence

from broker_nodes.config import BROKER_SETTINGS, BrokerConfig, BrokerConfigError, environment_variable, load_broker_config
from broker_nodes.server.app import start_broker_server
from server_runtime.gc_tuning import freeze_startup_objects
from server_runtime.logging_setup import LogFormatError, configure_logging
from server_runtime.malloc_tuning import tune_this_process
from server_runtime.private_files import make_new_files_private, restrict_directory
from server_runtime.stop_signals import StopSignals

logger = logging.getLogger("broker_nodes")

EXIT_OK = 0
EXIT_START_FAILED = 1
EXIT_USAGE = 2  # what argparse uses for bad arguments; bad settings share it
SHUTDOWN_GRACE_SECONDS = 5.0  # in-flight requests get this long to finish after SIGTERM
LOG_FORMAT = "%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s"


def _settings_help() -> str:
    lines = ["broker settings (--config key=value or environment WEIR_BROKER_<KEY>):"]
    for name, key in BROKER_SETTINGS.items():
        lines.append(f"  {name} = {key.default}  [{key.type}, {environment_variable(name)}]")
    return "\n".join(lines)


def parse_arguments(arguments: Sequence[str], environment: Mapping[str, str]) -> BrokerConfig:
    """Parse the command line; raise BrokerConfigError for bad settings (argparse exits 2 itself)."""
    parser = argparse.ArgumentParser(
        prog="python -m broker_nodes",
        description="Run one Weir broker.",
        epilog=_settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--node-id", type=int, required=True, help="this broker's id in the cluster")
    parser.add_argument("--listen", required=True, help="HOST:PORT to serve gRPC on (port 0: any free port)")
    parser.add_argument("--data-dir", required=True, help="directory of this broker's logs and metadata")
    parser.add_argument("--rack", default="", help="rack (or availability zone) of this broker")
    parser.add_argument("--advertised-host", default="", help="host name clients are told to connect to")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a broker setting (repeatable)")
    parser.add_argument(
        "--controller", default=None, metavar="HOST:PORT[,HOST:PORT]", help="the controllers to register with (sets controller.quorum.bootstrap.servers)"
    )
    parser.add_argument(
        "--kafka-listen", default=None, metavar="HOST:PORT", help="also serve Kafka's wire protocol on HOST:PORT (sets kafka.listen; port 0: any free port)"
    )
    parser.add_argument("--metrics-port", type=int, default=None, help="serve Prometheus /metrics on this port (sets metrics.port; 0: off)")
    parser.add_argument("--internal-token-file", default=None, help="file holding the internal token (default: environment WEIR_INTERNAL_TOKEN)")
    parser.add_argument("--tls-cert", default=None, help="PEM certificate chain: serve TLS only (needs --tls-key)")
    parser.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    parser.add_argument(
        "--tls-ca", default=None, help="PEM CA certificates that verify other brokers and the controller: call them over TLS (needed with --tls-cert)"
    )
    options = parser.parse_args(list(arguments))
    return load_broker_config(
        node_id=options.node_id,
        listen=options.listen,
        data_dir=options.data_dir,
        rack=options.rack,
        advertised_host=options.advertised_host,
        configs=[
            *options.config,
            *([f"controller.quorum.bootstrap.servers={options.controller}"] if options.controller is not None else []),
            *([f"metrics.port={options.metrics_port}"] if options.metrics_port is not None else []),
            *([f"kafka.listen={options.kafka_listen}"] if options.kafka_listen is not None else []),
        ],
        environment=environment,
        internal_token_file=options.internal_token_file,
        tls_cert=options.tls_cert,
        tls_key=options.tls_key,
        tls_ca=options.tls_ca,
    )


def main(arguments: Sequence[str] | None = None) -> int:
    # Partition logs hold every tenant's records: files 0600, directories 0700 (server_runtime.private_files).
    make_new_files_private()
    environment = dict(os.environ)
    try:
        # Text lines of LOG_FORMAT, or JSON lines with WEIR_LOG_FORMAT=json (server_runtime.logging_setup).
        configure_logging(text_format=LOG_FORMAT, environment=environment)
    except LogFormatError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = parse_arguments(sys.argv[1:] if arguments is None else arguments, environment)
    except BrokerConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    restrict_directory(config.data_dir)
    # Large gRPC messages are allocated and freed constantly; keeping that memory in the
    # process instead of returning it to the kernel measured 2-4x faster.
    tune_this_process()
    stop_requested = threading.Event()

    def request_stop(signal_number: int) -> None:
        logger.info("received %s: shutting down", signal.Signals(signal_number).name)
        stop_requested.set()

    # The handler only writes to a pipe; a thread logs and sets the event (server_runtime.stop_signals:
    # a handler that takes a lock can deadlock against the main thread on a second signal).
    StopSignals(on_first=request_stop, on_again=lambda _number: None).install()
    try:
        running = start_broker_server(config)
    except Exception:
        logger.exception("broker %d could not start", config.node_id)
        return EXIT_START_FAILED
    # What start-up built lives as long as the process: out of the collector's full passes (server_runtime.gc_tuning).
    freeze_startup_objects()
    logger.info("broker %d serving on %s:%d (data in %s)", config.node_id, config.listen.host, running.port, config.data_dir)
    if running.kafka is not None and config.kafka_listen is not None:
        logger.info("broker %d serving Kafka clients on %s:%d", config.node_id, config.kafka_listen.host, running.kafka_port)
    # Waiting in short steps keeps the main thread responsive to signals on every platform.
    while not stop_requested.wait(1.0):
        pass
    running.stop(SHUTDOWN_GRACE_SECONDS)
    logger.info("broker %d stopped", config.node_id)
    return EXIT_OK
