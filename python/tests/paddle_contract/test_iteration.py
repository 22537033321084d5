"""Epochs and workers: leaving an epoch early and starting the next one,
persistent workers, the worker processes' set-up (worker_init_fn, Paddle's
dynamic graph, distinct random streams). Paddle's
test_dataloader_early_reset.py and test_multiprocess_dataloader_dynamic.py
(persistent_workers) are the references (docs/paddle.md)."""

import os

import numpy as np
import paddle
import pytest
from paddle.io import Dataset

WORKER_ID = None  # set by worker_init_fn in each worker process


class Filled(Dataset):
    """Sample i: a float32 [8, 32] block filled with i, as Paddle's
    early-reset test's reader yields ones * batch number."""

    def __len__(self):
        return 40

    def __getitem__(self, index):
        return np.full([8, 32], index, "float32")


# Not with persistent workers: paddle.io's then hand the next epoch the
# batches the left one had in flight (paddle 3.3.1).
@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_epoch_left_early_does_not_leak_into_the_next(loader_class, num_workers):
    loader = loader_class(Filled(), batch_size=1, num_workers=num_workers)
    # 0: left as soon as its first batch arrives, unused.
    for stop in (10, 0, 3, 20, 0, 1, 10):
        seen = 0
        for step, batch in enumerate(loader()):
            if seen >= stop:
                break
            assert batch.shape == [1, 8, 32]
            assert np.all(batch.numpy() == step)  # every epoch starts at sample 0
            seen += 1
        assert seen == stop


@pytest.mark.parametrize("persistent_workers", [False, True])
def test_every_epoch_is_whole_and_in_order_with_workers(loader_class, persistent_workers):
    loader = loader_class(Filled(), batch_size=4, num_workers=2,
                          persistent_workers=persistent_workers)
    for _ in range(3):
        firsts = [int(b.numpy()[0, 0, 0]) for b in loader]
        assert firsts == list(range(0, 40, 4))


def test_len_of_the_iterator_is_the_number_of_batches(loader_class):
    loader = loader_class(Filled(), batch_size=6)
    iterator = iter(loader)
    assert len(iterator) == len(loader) == 7
    assert sum(1 for _ in iterator) == 7


def remember_worker(worker_id):
    global WORKER_ID
    WORKER_ID = worker_id


class ReportsWorker(Dataset):
    """Sample i: [the worker id worker_init_fn set (-1: none), the process id,
    1 if paddle runs its dynamic graph here, a draw from paddle's generator,
    a draw from numpy's]."""

    def __len__(self):
        return 16

    def __getitem__(self, index):
        return np.array([
            -1 if WORKER_ID is None else WORKER_ID,
            os.getpid(),
            int(paddle.in_dynamic_mode()),
            float(paddle.rand([1]).numpy()[0]),
            np.random.random(),
        ], "float64")


def worker_reports(loader_class, **arguments):
    loader = loader_class(ReportsWorker(), batch_size=2, num_workers=2,
                          worker_init_fn=remember_worker, **arguments)
    return np.concatenate([b.numpy() for b in loader])


def test_worker_init_fn_runs_in_each_worker_process(loader_class):
    rows = worker_reports(loader_class)
    assert set(rows[:, 0].astype(int).tolist()) == {0, 1}
    assert os.getpid() not in set(rows[:, 1].astype(int).tolist())
    # Each id belongs to one process.
    pairs = {(int(w), int(p)) for w, p in rows[:, :2]}
    assert len(pairs) == 2 and len({p for _, p in pairs}) == 2


def test_datasets_run_in_paddles_dynamic_graph_in_workers(loader_class):
    rows = worker_reports(loader_class)
    assert rows[:, 2].tolist() == [1.0] * 16


def test_workers_draw_distinct_random_numbers(loader_class):
    rows = worker_reports(loader_class)
    # Neither paddle's nor numpy's generator repeats across the workers.
    assert len(set(rows[:, 3].tolist())) == 16
    assert len(set(rows[:, 4].tolist())) == 16
