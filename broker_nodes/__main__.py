"""``python -m broker_nodes``: run one broker (see broker_nodes.server.main)."""

import sys

from broker_nodes.server.main import main

sys.exit(main())
