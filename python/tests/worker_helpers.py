"""Helpers shared by the worker-process tests: a bound on every test, and
whether processes are gone (as `ps` would see them)."""

import time

import pytest

import time_bounds


@pytest.fixture(autouse=True)
def bounded():
    # A hang ends the run with every thread's stack instead of blocking CI.
    time_bounds.bound_time(60)
    yield
    time_bounds.unbound()


def pid_running(pid):
    """True while `pid` exists and is not a zombie (a reparented zombie may
    wait for a container's init to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, seconds=10):
    """The pids still running after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(pid_running(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if pid_running(p)]
