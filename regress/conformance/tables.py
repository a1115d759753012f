"""Test tables for the conformance suites: numeric rows copied into a new table."""

import numpy as np


def load_table(conn, table, columns, rows, column_type="real"):
    """CREATE TABLE table (id int PRIMARY KEY, <columns> column_type) and COPY the rows in
    (ids from 1; None and NaN become NULL), then ANALYZE it."""
    conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, {', '.join(f'{c} {column_type}' for c in columns)})")
    with conn.cursor() as cur:
        with cur.copy(f"COPY {table} (id, {', '.join(columns)}) FROM STDIN") as cp:
            for i, row in enumerate(rows):
                cp.write_row([i + 1] + [None if v is None or np.isnan(float(v)) else float(v) for v in row])
    conn.execute(f"ANALYZE {table}")
