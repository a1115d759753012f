"""What a measured process costs: private memory, CPU time, and the machine's load meanwhile,
sampled from /proc."""

import os
import threading


def proc_status(pid):
    """{'RssAnon': kB, 'VmHWM': kB, ...} of a process, {} if it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                v = v.strip()
                if v.endswith(" kB"):
                    out[k] = int(v[:-3])
    except OSError:
        pass
    return out


def parallel_workers_of(leader_pid):
    """pids of the parallel workers serving a backend (their title names the leader)."""
    pids = []
    tag = f"parallel worker for PID {leader_pid}".encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if tag in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def proc_cpu_ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


class MemWatch:
    """Samples, every 20 ms, the private (anonymous) resident memory of a process and of its
    parallel workers; .peak_mb is the largest sum seen. Shared buffers are left out on purpose:
    a scan touching shared_buffers would otherwise count as backend memory. Also accounts the
    CPU time (user + system, all threads, workers included) spent after mark(), and the
    1-minute load average seen while it runs (.load_min, .load_max)."""

    def __init__(self, pid, workers=False, interval=0.02):
        self.pid, self.workers, self.interval = pid, workers, interval
        self.peak_kb = 0
        self.ticks = {}      # pid -> last seen cpu ticks
        self.base = {}       # pid -> ticks at mark()
        self.load_min = self.load_max = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        pids = [self.pid] + (parallel_workers_of(self.pid) if self.workers else [])
        total = 0
        for p in pids:
            total += proc_status(p).get("RssAnon", 0)
            c = proc_cpu_ticks(p)
            if c is not None:
                with self._lock:
                    self.ticks[p] = c
        self.peak_kb = max(self.peak_kb, total)
        load = os.getloadavg()[0]
        self.load_min = load if self.load_min is None else min(self.load_min, load)
        self.load_max = load if self.load_max is None else max(self.load_max, load)

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def mark(self):
        """Start the CPU account here (after the warm-up). Workers seen so far are excluded."""
        self._sample()
        with self._lock:
            self.base = dict(self.ticks)

    def cpu_seconds(self, sample=False):
        if sample:
            self._sample()
        with self._lock:
            ticks = sum(v - self.base.get(p, 0) for p, v in self.ticks.items())
        return ticks / os.sysconf("SC_CLK_TCK")

    def __enter__(self):
        self._sample()
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self._sample()

    @property
    def peak_mb(self):
        return self.peak_kb / 1024.0
