"""pg_predict's benchmark as a package; bench/run.py is the command over it.

- data:     the tables (generated in PostgreSQL with a fixed seed), their export to numpy,
            sample tables
- models:   training (cached in bench/.cache), create_model / deploy of every format
- rows:     one definition per row: key, SQL, settings, baseline, what it needs
- server:   the pg_predict settings the server offers (strategy and cpu_kernel names)
- procs:    process memory, CPU time and load sampling
- measure:  timing one row on a fresh connection, or a baseline in its own process
- checks:   ratios, numerical sanity, the issue's targets
- report:   markdown, text and JSON output, the command that reproduces each row
- chart:    the PNG chart
- machine:  CPU, flags, git commit, installed library

Modules import numpy, psycopg etc. only where they need them, so that bench/gpu.py can use
`server` on a machine without them.
"""
