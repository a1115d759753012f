"""What the running server offers: pg_predict's settings and the names of their values.

The strategy and cpu_kernel names come from the server (pg_settings.enumvals), never from a
list kept here: a strategy or kernel added to the extension shows up as bench rows by itself.
No heavy imports: bench/gpu.py uses this through psql on a machine without psycopg."""

# The settings the rows depend on; a missing one makes its rows print "n/a (not built yet)".
GUCS = ("enable_batching", "batch_size", "threads", "strategy", "cpu_kernel")


def enumvals_sql(guc):
    """One row, the values of an enum setting joined by commas; no row when it is absent."""
    return ("SELECT array_to_string(enumvals, ',') FROM pg_settings "
            f"WHERE name = 'pg_predict.{guc}'")


def read_gucs(conn, ignore=()):
    """{guc: current value or None when absent (or listed in ignore)}."""
    gucs = {g: conn.execute("SELECT current_setting(%s, true)",
                            (f"pg_predict.{g}",)).fetchone()[0] for g in GUCS}
    for g in ignore:
        gucs[g] = None
    return gucs


def enum_values(conn, guc):
    """The values of pg_predict.<guc> as the server lists them, or None when it has no such
    setting."""
    r = conn.execute(enumvals_sql(guc)).fetchone()
    return r[0].split(",") if r and r[0] else None
