"""What a result was measured on: the CPU (model, cores, the SIMD flags the kernels dispatch
on), the software versions, the git commit of the tree, and the installed pg_predict.so."""

import datetime as dt
import os
import platform
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the flags that decide which cpu_kernel a machine can run
SIMD_FLAGS = ("avx512f", "avx512bw", "avx512vl", "avx2", "fma", "bmi2", "asimd")


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              cwd=ROOT).stdout.strip()
    except Exception:
        return ""


def git_commit():
    """`git rev-parse --short HEAD`, plus "+dirty" when tracked files differ from it."""
    head = sh("git rev-parse --short HEAD") or "unknown"
    return head + ("+dirty" if sh("git status --porcelain --untracked-files=no") else "")


def cpu():
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k = k.strip()
                if k == "model name" and not model:
                    model = v.strip()
                elif k in ("flags", "Features") and not flags:
                    flags = set(v.split())
    except OSError:
        pass
    return {"cpu": model or platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "simd": [f for f in SIMD_FLAGS if f in flags],
            "avx512f": "avx512f" in flags, "avx2": "avx2" in flags}


def installed_so():
    """mtime and path of the installed pg_predict.so (which build the server loaded)."""
    try:
        pg_config = os.environ.get("PG_CONFIG", "pg_config")
        libdir = subprocess.run([pg_config, "--pkglibdir"], capture_output=True,
                                text=True).stdout.strip()
        path = os.path.join(libdir, "pg_predict.so")
        return dt.datetime.fromtimestamp(os.stat(path).st_mtime).strftime(
            "%Y-%m-%dT%H:%M:%S") + " " + path
    except Exception as e:
        return f"unknown ({e})"


def environment(conn, gucs):
    import numpy as np
    import xgboost
    return {
        **cpu(),
        "postgres": conn.execute("SELECT version()").fetchone()[0],
        "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "xgboost": xgboost.__version__, "numpy": np.__version__,
        "python": platform.python_version(),
        "git": git_commit(),
        "gucs": gucs,
        "installed_so": installed_so(),
        "batch_size": gucs.get("batch_size"),
        "shared_buffers": conn.execute("SHOW shared_buffers").fetchone()[0],
    }


def describe(env, load_min, load_max):
    """One line naming the machine, the load during the rows and the commit."""
    simd = ", ".join(env["simd"]) or "none of " + "/".join(SIMD_FLAGS)
    return (f"machine: {env['cpu']}, {env['cores']} cores, SIMD: {simd}; load average "
            f"(1 min) during the rows: min {load_min:.1f}, max {load_max:.1f}; "
            f"git {env['git']}")
