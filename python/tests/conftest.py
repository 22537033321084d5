"""Shared fixtures: small Python datasets whose samples encode their index,
so every test can check which samples a batch holds."""

import os

import numpy as np
import pytest

import time_bounds
from feedline import io
from feedline.vision import synth


def pytest_configure(config):
    # The run's stderr, before pytest's capture (time_bounds.hang_report).
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        time_bounds.hang_report = os.fdopen(os.dup(2), "w")
        return
    with capture.global_and_fixture_disabled():
        time_bounds.hang_report = os.fdopen(os.dup(2), "w")


@pytest.fixture(autouse=True, scope="session")
def annotation_indexes_in_the_run(tmp_path_factory):
    """Annotation indexes (CocoDetection's annotation_index) of the tests'
    temporary files go to a folder of this run, not the user's cache."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(autouse=True)
def bounded():
    """Every test is bounded in time (time_bounds.py)."""
    time_bounds.bound_time(time_bounds.TEST_BOUND_S)
    yield
    time_bounds.unbound()


@pytest.fixture
def time_bound():
    """time_bounds.bound_time, for a test whose child may take longer than
    the bound: call it with more seconds than the child's timeout."""
    return time_bounds.bound_time


def image_folder(tmp_path_factory, name, images, classes, seed):
    """A new folder of `images` readable synthetic JPEGs in `classes` class
    subfolders, made from `seed`; returns its path."""
    root = str(tmp_path_factory.mktemp(name))
    assert synth.write_image_folder(root, images, classes=classes, seed=seed) == []
    return root


class IndexDataset(io.Dataset):
    """Sample i is (an int32 [2, 3] array filled with i, the label i)."""

    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return np.full((2, 3), index, np.int32), index


@pytest.fixture
def index_dataset():
    return IndexDataset(10)


def labels_of(loader):
    """The labels of one epoch, batch by batch."""
    return [batch[1].tolist() for batch in loader]


def copied(loader):
    """One epoch's batches, copied: a batch's arrays view its slot in the
    loader's small pool, so keeping more batches than the pool holds needs
    copies (as a training loop that keeps outputs would make)."""
    out = []
    for batch in loader:
        if isinstance(batch, dict):
            out.append({k: np.array(v) for k, v in batch.items()})
        elif isinstance(batch, tuple):
            out.append(tuple(np.array(v) for v in batch))
        else:
            out.append(np.array(batch))
    return out
