"""``python -m deploy.healthcheck grpc|http ...``: one probe, exit status 0 (healthy) or 1.

For container healthchecks that have no gRPC probe of their own (docker compose, systemd
watchdogs, a Kubernetes exec probe over TLS):

    python -m deploy.healthcheck grpc 127.0.0.1:9092                    # a broker: recovered and registered
    python -m deploy.healthcheck grpc 127.0.0.1:9190 --service weir.v1.Controller   # the active controller
    python -m deploy.healthcheck grpc broker-1:9092 --ca /etc/weir/ca.pem           # over TLS
    python -m deploy.healthcheck http http://127.0.0.1:8000/readyz

The checks are ``deploy.processes``'s, the ones ``make up`` waits on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from deploy.processes import grpc_health_serving, http_ok

EXIT_HEALTHY = 0
EXIT_UNHEALTHY = 1


def parse_arguments(arguments: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m deploy.healthcheck", description="Probe one Weir process once.")
    kinds = parser.add_subparsers(dest="kind", required=True)
    grpc_probe = kinds.add_parser("grpc", help="SERVING from the gRPC health service (brokers, controllers)")
    grpc_probe.add_argument("address", metavar="HOST:PORT")
    grpc_probe.add_argument("--service", default="", help='the service asked about ("": the process; weir.v1.Controller: the active controller)')
    grpc_probe.add_argument("--ca", type=Path, default=None, help="PEM CA certificates: probe over TLS")
    http_probe = kinds.add_parser("http", help="HTTP 200 from a URL (the web process's /healthz or /readyz)")
    http_probe.add_argument("url")
    return parser.parse_args(list(arguments))


def probe(options: argparse.Namespace) -> bool:
    if options.kind == "grpc":
        return grpc_health_serving(options.address, options.service, ca_certificate=options.ca)()
    return http_ok(options.url)()


def main(arguments: Sequence[str] | None = None) -> int:
    options = parse_arguments(sys.argv[1:] if arguments is None else arguments)
    if probe(options):
        return EXIT_HEALTHY
    if options.kind == "grpc":
        target = f"{options.address} ({options.service or 'process'})"
    else:
        target = options.url
    print(f"unhealthy: {target}", file=sys.stderr)
    return EXIT_UNHEALTHY


if __name__ == "__main__":
    sys.exit(main())
