"""`python -m api` is the `tenure` command."""

import sys

from api.cli import main

sys.exit(main())
