"""A throwaway PostgreSQL 15 cluster for tests and benchmarks.

    from pgcluster import Cluster
    with Cluster() as pg:                 # initdb + start in a fresh temp dir
        with pg.connect() as conn:        # psycopg connection, autocommit
            conn.execute("CREATE EXTENSION pg_predict")
        print(pg.dsn)                     # "host=/tmp/pg_predict-xxxx port=NNNN user=postgres ..."
    # stopped and removed here, also when the body raised

The cluster runs as an unprivileged OS user when we are root (initdb refuses root): the user named
by $PGPREDICT_USER, else `postgres`. Authentication is `trust`, the server listens only on a unix
socket inside the temp dir, on a port that was free when chosen, with
shared_preload_libraries = 'pg_predict' (unless preload=False) and fsync off.

Run it as a script for a smoke test: /usr/bin/python3 regress/pgcluster.py
"""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SUPERUSER = "postgres"  # the database superuser initdb creates (-U)


def pg_bindir():
    """The bin dir of the PostgreSQL the extension is built for ($PG_CONFIG or pg_config)."""
    pg_config = os.environ.get("PG_CONFIG", "pg_config")
    try:
        return subprocess.run([pg_config, "--bindir"], check=True, capture_output=True,
                              text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        fallback = "/usr/lib/postgresql/15/bin"
        if os.path.exists(os.path.join(fallback, "initdb")):
            return fallback
        raise RuntimeError("pg_config not found: install postgresql-server-dev-15 "
                           "(bash scripts/install-deps.sh)")


def os_user():
    """The OS user the server runs as: ourselves, or an unprivileged one when we are root."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()).pw_name
    name = os.environ.get("PGPREDICT_USER", "postgres")
    try:
        pwd.getpwnam(name)
    except KeyError:
        raise RuntimeError(f"running as root and OS user {name!r} does not exist "
                           "(install postgresql-15 or set PGPREDICT_USER)")
    return name


def free_port():
    """A TCP port nobody listens on right now (the server only uses it to name its socket)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, preload=True, settings=None, prefix="pg_predict-", keep=False):
        """preload: put pg_predict in shared_preload_libraries. settings: extra GUCs
        {name: value} for postgresql.conf. keep: leave the directory behind (debugging)."""
        self.preload = preload
        self.settings = dict(settings or {})
        self.prefix = prefix
        self.keep = keep or os.environ.get("PGCLUSTER_KEEP") == "1"
        self.bindir = pg_bindir()
        self.user = os_user()
        self.dir = None
        self.port = None
        self.started = False
        self._old_sigterm = None

    # -- helpers -------------------------------------------------------------------------
    def _cmd(self, args):
        exe = [os.path.join(self.bindir, args[0])] + list(args[1:])
        if os.geteuid() == 0:
            return ["runuser", "-u", self.user, "--"] + exe
        return exe

    def _run(self, *args, timeout=120):
        p = subprocess.run(self._cmd(args), capture_output=True, text=True, timeout=timeout,
                           cwd=self.dir)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed (rc {p.returncode}):\n"
                               f"{p.stdout}{p.stderr}{self.log_tail()}")
        return p

    @property
    def datadir(self):
        return os.path.join(self.dir, "data")

    @property
    def logfile(self):
        return os.path.join(self.dir, "server.log")

    @property
    def dsn(self):
        return f"host={self.dir} port={self.port} user={SUPERUSER} dbname=postgres"

    def conninfo(self, dbname="postgres"):
        return f"host={self.dir} port={self.port} user={SUPERUSER} dbname={dbname}"

    def psql_command(self):
        return f"{os.path.join(self.bindir, 'psql')} -h {self.dir} -p {self.port} -U {SUPERUSER}"

    def log_tail(self, lines=40):
        try:
            with open(self.logfile, errors="replace") as f:
                tail = f.readlines()[-lines:]
            return "\n--- server log (tail) ---\n" + "".join(tail)
        except OSError:
            return ""

    def connect(self, dbname="postgres", autocommit=True, **kwargs):
        import psycopg
        return psycopg.connect(self.conninfo(dbname), autocommit=autocommit, **kwargs)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        if os.geteuid() == 0:
            pw = pwd.getpwnam(self.user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o700)
        if len(self.dir) + len("/.s.PGSQL.65535.lock") > 100:
            raise RuntimeError(f"socket path too long: {self.dir}")
        self._run("initdb", "-D", self.datadir, "-A", "trust", "-U", SUPERUSER, "-E", "UTF8",
                  "--locale=C", "--no-sync")
        self.port = free_port()
        conf = {
            "port": str(self.port),
            "listen_addresses": "''",
            "unix_socket_directories": f"'{self.dir}'",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "30",
            "shared_buffers": "128MB",
            "log_min_messages": "warning",
            "lc_messages": "'C'",
        }
        if self.preload:
            conf["shared_preload_libraries"] = "'pg_predict'"
        conf.update({k: str(v) for k, v in self.settings.items()})
        with open(os.path.join(self.datadir, "postgresql.conf"), "a") as f:
            f.write("\n# pgcluster.py\n")
            for k, v in conf.items():
                f.write(f"{k} = {v}\n")
        self._install_sigterm()
        self._run("pg_ctl", "-D", self.datadir, "-l", self.logfile, "-w", "-t", "60", "start")
        self.started = True
        return self

    def stop(self):
        try:
            if self.started:
                try:
                    self._run("pg_ctl", "-D", self.datadir, "-m", "immediate", "-w", "-t", "30",
                              "stop", timeout=60)
                except Exception as e:  # never hide the body's exception behind this one
                    print(f"pgcluster: stopping the server failed: {e}", file=sys.stderr)
                    self._kill_postmaster()
                self.started = False
        finally:
            if self.dir and not self.keep:
                shutil.rmtree(self.dir, ignore_errors=True)
            elif self.dir:
                print(f"pgcluster: kept {self.dir}", file=sys.stderr)
            self._restore_sigterm()

    def _kill_postmaster(self):
        try:
            with open(os.path.join(self.datadir, "postmaster.pid")) as f:
                pid = int(f.readline().strip())
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass

    # A SIGTERM (e.g. from a timeout) unwinds through __exit__ instead of leaking the server.
    def _install_sigterm(self):
        try:
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
                self._old_sigterm = signal.signal(signal.SIGTERM, _sigterm_to_exit)
        except ValueError:  # not the main thread
            self._old_sigterm = None

    def _restore_sigterm(self):
        if self._old_sigterm is not None:
            try:
                signal.signal(signal.SIGTERM, self._old_sigterm)
            except ValueError:
                pass
            self._old_sigterm = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
        return False


def _sigterm_to_exit(signum, frame):
    raise SystemExit(128 + signum)


def cluster(**kwargs):
    """Same as Cluster(**kwargs), for `with cluster() as pg:`."""
    return Cluster(**kwargs)


if __name__ == "__main__":
    t0 = time.time()
    with Cluster() as pg:
        with pg.connect() as conn:
            version = conn.execute("SELECT version()").fetchone()[0]
            preload = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
        print(f"started in {time.time() - t0:.1f}s: {pg.dsn}")
        print(f"{version}; shared_preload_libraries = '{preload}'")
    print("stopped and removed")
