#!/usr/bin/python3
"""pg_predict benchmark: one command, one run, every row side by side.

    /usr/bin/python3 bench/run.py                      # 1M rows (make bench)
    /usr/bin/python3 bench/run.py --quick              # 100k rows smoke run
    /usr/bin/python3 bench/run.py --only '^m500\\.batched\\.auto\\.t2$'   # one row, reproduced
    /usr/bin/python3 bench/run.py --list               # the row keys this server offers

Starts a throwaway PostgreSQL 15 cluster (regress/pgcluster.py), generates the data the chosen
rows need in it, trains their models, loads them with create_model, measures, and writes
bench/results/<timestamp>.{md,json} (and latest.md / latest.png for a whole run). See
bench/README.md for what each row means; the code is the package bench/pgpb/. Never fails
because of a target: the targets are printed as PASS/FAIL lines for information; the exit
status is non-zero only when the bench itself could not run.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgpb.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(doc=__doc__))
