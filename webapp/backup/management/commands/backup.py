"""``manage.py backup [--output FILE]``: the control-plane state as a versioned JSON document.

Without ``--output`` (or with ``-``) the document goes to standard output; a FILE ending in
``.gz`` is gzip-compressed. The file is written aside and renamed into place, mode 0600 (it
holds password and API key hashes). What it holds: ``webapp.backup.schema``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.backup.document import write_backup_file, write_backup_stream
from webapp.backup.dump import dump_control_plane


class Command(BaseCommand):
    help = "Write the control-plane state (tenants, users, keys as hashes, topics, ACLs, quotas, brokers) to a backup file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", default="-", metavar="FILE", help="where to write it (.gz: compressed; default -, standard output)")

    def handle(self, *args: object, **options: object) -> None:
        document = dump_control_plane()
        output = str(options["output"])
        counts = ", ".join(f"{len(rows)} {name}" for name, rows in document["sections"].items())
        if output == "-":
            size = write_backup_stream(document, sys.stdout.buffer)
            self.stderr.write(f"backup of {counts}: {size} bytes to standard output")
            return
        path = Path(output)
        if not path.parent.is_dir():
            raise CommandError(f"--output {output}: the directory {path.parent} does not exist")
        size = write_backup_file(document, path)
        self.stdout.write(f"backup of {counts}: {size} bytes in {path}")
