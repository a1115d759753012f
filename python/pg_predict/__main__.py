"""python3 -m pg_predict ...: the same command as `pg_predict` (cli.py)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
