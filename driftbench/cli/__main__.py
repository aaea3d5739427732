"""``python -m driftbench.cli``: the ``driftbench`` command."""

import sys

from driftbench.cli import main

sys.exit(main())
