#!/usr/bin/python3
"""Conformance: every SQL line of README.md and docs/ runs against the demo (issue 46).

The README's tour once broke predict() for every caller (a boolean target over a name with labels
{0, 1}) and named columns the demo does not have. So each ```sql block of README.md and
docs/*.md runs here, statement by statement, in a database of its own made from the demo that
`make run` creates (scripts/demo.sql: the customers table; scripts/demo_model.py: the XGBoost
model 'churn'). A statement must succeed, unless it carries a marker in a comment:

    -- [error]           it shows an error on purpose: it must fail
    -- [needs: WHAT]     it needs what the demo lacks (a file on the server, a restart, Citus, a
                         GPU, a role, another model or table, psql): it is not run, and the
                         summary counts it

A marker goes in a comment of the statement, usually after its ';'. psql's own commands (a line
starting with a backslash) are not run; `CREATE EXTENSION pg_predict` runs as CREATE EXTENSION IF
NOT EXISTS (the demo database has it).

A block that does not parse into statements, or a statement without a marker that fails, fails
its file's test, naming the line.

Run: /usr/bin/python3 regress/conformance/test_docs_sql.py [-k name] [--list]
Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import glob
import os
import re
import subprocess

import psycopg

from harness import Failure, add_test, main
from pgcluster import Cluster

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FILES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
NEEDS = re.compile(r"--.*\[needs: ([^\]]+)\]")
ERROR = re.compile(r"--.*\[error\]")


def sql_blocks(path):
    """[(first line number, text)] of each ```sql block."""
    blocks, current, start = [], None, 0
    with open(os.path.join(ROOT, path)) as f:
        for n, line in enumerate(f, 1):
            if current is None and line.strip() == "```sql":
                current, start = [], n + 1
            elif current is not None and line.strip() == "```":
                blocks.append((start, "".join(current)))
                current = None
            elif current is not None:
                current.append(line)
    return blocks


def statements(first_line, text):
    """[(line number, statement text)]: split at a ';' outside quotes and comments; a psql
    meta-command (a line starting with a backslash) is a statement of its own."""
    out, buf, line, start = [], [], first_line, None
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if start is None and not c.isspace():
            start = line
        if quote is None and c == "\\" and not "".join(buf).strip():
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            out.append((line, text[i:end]))
            i, buf, start = end, [], None
            continue
        if quote is None and text.startswith("--", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            buf.append(text[i:end])
            i = end
            continue
        if quote is None and c in "'\"":
            quote = c
        elif quote is not None and c == quote:
            quote = None
        elif quote is None and text.startswith("$$", i):
            end = text.find("$$", i + 2)
            buf.append(text[i:end + 2])
            line += text[i:end + 2].count("\n")
            i = end + 2
            continue
        buf.append(c)
        if c == "\n":
            line += 1
        if quote is None and c == ";":
            # a comment after the ';' on its line belongs to this statement (markers go there)
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            tail = text[i + 1:end]
            if tail.strip().startswith("--") or not tail.strip():
                buf.append(tail)
                i = end - 1
            out.append((start, "".join(buf).strip()))
            buf, start = [], None
        i += 1
    rest = "".join(buf).strip()
    if rest and not all(l.strip().startswith("--") for l in rest.splitlines() if l.strip()):
        raise Failure(f"line {start}: a statement without its ';': {rest[:80]!r}")
    return out


class Env:
    pass


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env()
        env.pg = pg
        env.skipped = {}
        with pg.connect() as conn:
            conn.execute("CREATE DATABASE demo")
        host, port = pg.dir, str(pg.port)
        psql = os.path.join(pg.bindir, "psql")
        with open(os.path.join(ROOT, "scripts", "demo.sql")) as f:
            subprocess.run([psql, "-h", host, "-p", port, "-U", "postgres", "-d", "demo", "-X", "-q",
                            "-v", "ON_ERROR_STOP=1"], stdin=f, check=True, capture_output=True)
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo_model.py"), host, port, "postgres",
                        "demo", os.path.join(pg.dir, "churn.json")], check=True, capture_output=True)
        yield env
        print("  not run, by what they need: " + ", ".join(f"{k} {v}" for k, v in sorted(env.skipped.items())))


def file_test(path):
    def run(env):
        blocks = sql_blocks(path)
        if not blocks:
            return
        db = "docs_" + re.sub(r"\W", "_", path.lower())
        with env.pg.connect() as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {db}")
            admin.execute(f"CREATE DATABASE {db} TEMPLATE demo")
        problems = []
        try:
            with env.pg.connect(db) as conn:
                for first, text in blocks:
                    for line, stmt in statements(first, text):
                        needs = NEEDS.search(stmt)
                        if needs:
                            env.skipped[needs.group(1)] = env.skipped.get(needs.group(1), 0) + 1
                            continue
                        if stmt.startswith("\\"):  # a psql command (it cannot carry a comment)
                            env.skipped["psql"] = env.skipped.get("psql", 0) + 1
                            continue
                        # The demo database has the extension: the docs' first step is a no-op here.
                        stmt = re.sub(r"^CREATE EXTENSION pg_predict", "CREATE EXTENSION IF NOT EXISTS pg_predict", stmt,
                                      flags=re.M)
                        try:
                            cur = conn.execute(stmt)
                            if cur.description is not None:
                                cur.fetchall()
                            failed = None
                        except psycopg.Error as e:
                            failed = (e.diag.message_primary or str(e)).strip()
                        if ERROR.search(stmt):
                            if failed is None:
                                problems.append(f"{path}:{line}: marked [error], yet it succeeded: {stmt[:100]!r}")
                        elif failed is not None:
                            problems.append(f"{path}:{line}: {failed} — in {stmt[:160]!r}")
        finally:
            with env.pg.connect() as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {db}")
        if problems:
            raise Failure("\n".join(problems))
    return run


for _path in FILES:
    add_test(f"docs_sql[{_path}]", file_test(_path))


if __name__ == "__main__":
    main(fixture=make_env)
