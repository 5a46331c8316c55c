"""``manage.py restore FILE [--check] [--clear-existing]``: a backup into an empty database.

The file is checked whole before anything is written (format, version, every value and
reference), then restored in one transaction. ``--check`` stops after the checks.
``--clear-existing`` first deletes what the database holds (every backed-up row and every
session). After a restore into a deployment whose brokers kept running, run
``manage.py resync_brokers`` before starting the controllers (``deploy/README.md``).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.backup.document import check_document, read_backup_file
from webapp.backup.errors import BackupFormatError, RestoreRefusedError
from webapp.backup.load import restore_control_plane


class Command(BaseCommand):
    help = "Restore the control-plane state from a backup file into an empty database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE", help="a file written by `manage.py backup` (plain or .gz)")
        parser.add_argument("--check", action="store_true", help="only check the file; write nothing")
        parser.add_argument("--clear-existing", action="store_true", help="delete everything the database holds first (in the same transaction)")

    def handle(self, *args: object, **options: object) -> None:
        try:
            backup = check_document(read_backup_file(Path(str(options["file"]))))
        except BackupFormatError as error:
            raise CommandError(f"cannot restore {options['file']}: {error}") from None
        counts = ", ".join(f"{count} {name}" for name, count in backup.counts().items())
        if options["check"]:
            self.stdout.write(f"{options['file']} is a valid backup (format version {backup.format_version}, taken {backup.created_at.isoformat()}): {counts}")
            return
        try:
            report = restore_control_plane(backup, clear_existing=bool(options["clear_existing"]))
        except (RestoreRefusedError, BackupFormatError) as error:
            raise CommandError(f"restore refused: {error}") from None
        self.stdout.write(report.summary())
        self.stdout.write("If brokers kept running, run `manage.py resync_brokers` before starting the controllers.")
