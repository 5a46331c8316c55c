"""``python -m deploy.broker_entrypoint [broker arguments]``: a broker of a Kubernetes StatefulSet.

A StatefulSet names its pods ``<set>-0``, ``<set>-1``, ... and gives each the same persistent
volume whenever it is rescheduled. The broker's node id must follow the volume (a broker
refuses a data directory of another node), so it is derived from the ordinal in the pod name:
node id = WEIR_NODE_ID_BASE (default 1) + ordinal. The advertised host is the pod's stable
DNS name under the StatefulSet's headless Service: ``<pod>.<WEIR_ADVERTISED_DOMAIN>``.

Then this process becomes ``python -m broker_nodes --node-id N --advertised-host H
[broker arguments]`` (exec: same process id, signals go straight to the broker).

==========================  ===============================================================
variable                    meaning
==========================  ===============================================================
WEIR_POD_NAME               the pod's name (downward API ``metadata.name``); default HOSTNAME
WEIR_NODE_ID_BASE           node id of the pod with ordinal 0 (default 1)
WEIR_ADVERTISED_DOMAIN      ``<headless service>.<namespace>.svc.<cluster domain>``; unset: no
                            --advertised-host (clients are told the listen host)
==========================  ===============================================================

None of these start with WEIR_BROKER_: brokers refuse unknown variables of that prefix.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence

DEFAULT_NODE_ID_BASE = 1
_POD_NAME = re.compile(r"^(?P<set>[a-z0-9]([-a-z0-9]*[a-z0-9])?)-(?P<ordinal>[0-9]+)$")
_FLAGS_SET_HERE = ("--node-id", "--advertised-host")


class EntrypointError(ValueError):
    """The pod's environment or arguments do not say which broker this is; the pod exits 2."""

    retriable = False


def ordinal_of(pod_name: str) -> int:
    """The StatefulSet ordinal at the end of ``pod_name`` (``weir-broker-2`` -> 2)."""
    match = _POD_NAME.match(pod_name)
    if match is None:
        raise EntrypointError(f"pod name {pod_name!r} does not end in -<ordinal>: is this pod part of a StatefulSet?")
    return int(match.group("ordinal"))


def broker_command(environment: Mapping[str, str], arguments: Sequence[str], python: str = sys.executable) -> list[str]:
    """The broker's command line for this pod (see the module docstring)."""
    for argument in arguments:
        if argument.split("=", 1)[0] in _FLAGS_SET_HERE:
            raise EntrypointError(f"{argument.split('=', 1)[0]} is derived from the pod name here; remove it from the arguments")
    pod_name = environment.get("WEIR_POD_NAME") or environment.get("HOSTNAME", "")
    if not pod_name:
        raise EntrypointError("neither WEIR_POD_NAME nor HOSTNAME is set: cannot tell which broker this is")
    raw_base = environment.get("WEIR_NODE_ID_BASE", str(DEFAULT_NODE_ID_BASE))
    if not raw_base.isdigit():
        raise EntrypointError(f"WEIR_NODE_ID_BASE must be a whole number, not {raw_base!r}")
    command = [python, "-m", "broker_nodes", "--node-id", str(int(raw_base) + ordinal_of(pod_name))]
    domain = environment.get("WEIR_ADVERTISED_DOMAIN", "").strip().strip(".")
    if domain:
        command += ["--advertised-host", f"{pod_name}.{domain}"]
    return command + list(arguments)


def main(arguments: Sequence[str] | None = None) -> int:
    try:
        command = broker_command(os.environ, sys.argv[1:] if arguments is None else arguments)
    except EntrypointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"broker entrypoint: {' '.join(command[1:])}", file=sys.stderr, flush=True)
    os.execv(command[0], command)
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main())
