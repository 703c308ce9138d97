"""``python -m daemon`` is ``wsd``."""

import sys

from wsd.daemon.ops.cli import main

sys.exit(main())
