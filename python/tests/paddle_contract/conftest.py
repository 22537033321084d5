"""Paddle's DataLoader behaviours, asserted twice: with paddle.io.DataLoader
itself and with feedline.paddle.DataLoader, the one-line swap. A test here
must pass with paddle.io (it states what Paddle does); passing with feedline
too is the contract (docs/paddle.md lists which of Paddle's own tests each
file covers).

These tests need paddle, which the project's own Python (Debian's) lacks:
they run with the venv's interpreter in make test-peers, and are skipped
as a whole where paddle cannot be imported."""

import gc

import pytest

paddle = pytest.importorskip("paddle")

import feedline.paddle  # noqa: E402

LOADERS = {
    "paddle.io": paddle.io.DataLoader,
    "feedline": feedline.paddle.DataLoader,
}


@pytest.fixture(params=list(LOADERS))
def loader_class(request):
    """The DataLoader class under test: Paddle's own, then feedline's."""
    return LOADERS[request.param]


@pytest.fixture(autouse=True)
def dynamic_graph():
    """Every test starts in Paddle's dynamic-graph mode on the CPU, as a
    training script does, whatever the test before it left. After it, what
    it left is collected, so that paddle.io's iterators stop their workers
    within the test that made them (a hang there is reported against that
    test, not in pytest's shutdown)."""
    paddle.disable_static()
    paddle.set_device("cpu")
    yield
    gc.collect()
