#!/usr/bin/env python
"""Django's command-line utility for the Weir control plane."""

import os
import sys


def main() -> None:
    # The control plane's files (database, queue, secrets) are its owner's only (weir.private_files).
    from weir.private_files import make_new_files_private

    make_new_files_private()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
