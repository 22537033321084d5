"""Each test's bound in time, and where a hang's stacks go.

Every test is bounded (conftest.py's autouse `bounded`): past the bound the
run ends (exit status 1) with every thread's stack, instead of blocking CI
until its own limit. A test that waits on a child process gives the child a
timeout below its bound, so that a hung child fails that test (raising the
bound first when the child may take longer: bound_time)."""

import faulthandler
import os
import sys

# Each test's bound, in seconds. FEEDLINE_TEST_BOUND_S sets another: make
# test's ASan run of the worker files takes a shorter one, since a worker
# forked there can hang for good (Makefile, run-python-asan) and each hang
# costs the run its bound before the file runs again.
TEST_BOUND_S = int(os.environ.get("FEEDLINE_TEST_BOUND_S", "120"))

# Where a hang's stacks go: the run's own stderr, taken before pytest
# captures it (conftest.py's pytest_configure). faulthandler writes to
# sys.stderr otherwise, which during a test is pytest's capture of that
# test, lost when the process exits: the run then ended with no word of
# which test hung.
hang_report = None


def bound_time(seconds):
    """From now on, the running test may take `seconds` more."""
    faulthandler.dump_traceback_later(seconds, exit=True, file=hang_report or sys.stderr)


def unbound():
    faulthandler.cancel_dump_traceback_later()
