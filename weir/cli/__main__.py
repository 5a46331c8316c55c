"""``python -m weir.cli``: the same as the ``weir`` command."""

import sys

from weir.cli.app import main

sys.exit(main())
