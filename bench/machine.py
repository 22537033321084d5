"""What the peer-comparison scripts print about the machine they ran on, and
what a loader run costs it (CPU and memory of a process tree)."""
import os
import platform
import threading


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def process_tree():
    """This process and its live descendants' pids (/proc): the children of
    every thread, as a process forked from a thread of its parent (feedline's
    worker processes are, from its spawner thread) is listed under that
    thread only."""
    found, pids = [], [os.getpid()]
    while pids:
        pid = pids.pop()
        found.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:  # exited meanwhile
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    pids.extend(int(p) for p in f.read().split())
            except (OSError, ValueError):
                continue
    return found


def process_tree_cpu(reaped=False):
    """CPU seconds (user + system) of this process and its live descendants
    (/proc); with `reaped`, also those of the children each of them waited
    for (cutime, cstime), so that a worker that exits is still counted,
    once."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields_counted = 4 if reaped else 2  # utime stime [cutime cstime]
    total = 0.0
    for pid in process_tree():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:11 + fields_counted]) / ticks
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile: its parent's cutime has it once reaped
    return total


def process_tree_pss():
    """Bytes of memory this process and its live descendants hold, each
    shared page divided among its sharers (PSS, /proc/PID/smaps_rollup):
    forked workers' copy-on-write pages and shared-memory batches count
    once, not once per process as their RSS would."""
    total = 0
    for pid in process_tree():
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total


class PeakMemory:
    """The most process_tree_pss() read while it runs, sampled every
    `interval` seconds on a thread of its own (a with block). Each read
    walks the processes' page tables (10-15 ms a process with torch
    imported, 2026-12-07): not for an epoch that is timed."""

    def __init__(self, interval=0.1):
        self.interval, self.peak = interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while True:
            self.peak = max(self.peak, process_tree_pss())
            if self._stop.wait(self.interval):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, process_tree_pss())
