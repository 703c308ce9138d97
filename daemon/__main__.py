"""``python -m daemon`` is ``wsd``."""

import sys

from daemon.cli import main

sys.exit(main())
