"""`python -m verify` is the `verify-provenance` command."""

import sys

from verify.cli import main

sys.exit(main())
