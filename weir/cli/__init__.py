"""The ``weir`` command line: topics, groups, transactions, ACLs, the cluster, produce and consume.

Commands reach brokers only through the SDK (``weir.Producer``, ``weir.Consumer``,
``weir.admin.AdminClient``), exactly as an application would, so the CLI is also a working
example of the SDK. Reading a broker's segment files is a server-side tool, ``weir-dump-log``
(``log_formats.dump_log_command``), installed with the brokers, not with the SDK.

Conventions, for people and for scripts:

- Data (consumed records, tables, JSON) goes to stdout; everything else (progress bars,
  counts, errors) goes to stderr, so piping stdout is always safe.
- Exit codes: 0 success; 1 failure, told in one line ``weir: error: ...`` on stderr, never a
  traceback; 2 bad usage (argparse's code); 130 interrupted by Ctrl-C (``consume`` treats
  Ctrl-C as its normal way to stop and exits 0).
- Connection options may come before or after the command:
  ``weir --bootstrap-server H:P topics list`` and ``weir topics list --bootstrap-server H:P``.

Modules: ``app`` (entry point, exit codes), ``connection`` (options -> SDK config, shared
broker calls), ``output`` (streams, tables, progress bars), ``arguments`` and ``values``
(parser building blocks), one module per command (``topics``, ``groups``, ``transactions``,
``acls`` (with ``cluster describe``), ``produce``, ``consume``).
"""

from weir.cli.app import build_parser, main
from weir.cli.connection import client_config

__all__ = ["build_parser", "client_config", "main"]
