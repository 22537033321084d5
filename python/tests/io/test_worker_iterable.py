"""A Python IterableDataset in worker processes (worker_mode="process", the
"auto" choice for it): each process runs its own copy's iterator, split with
get_worker_info() as in torch; batches come round-robin over the workers in
the order of thread mode; persistent workers keep their processes; a dead
worker ends the epoch with an error naming it and its signal. Only the
public API."""

import os
import signal
import time

import numpy as np
import pytest

import feedline
from feedline import io
from worker_helpers import bounded, pid_running, wait_gone  # noqa: F401 (bounded: autouse)


class Stream(io.IterableDataset):
    """Worker w of n yields items w, w+n, w+2n, ... < `n_items`: the item, the
    pid that produced it, the worker id and epoch get_worker_info() gave, and
    a variable-length array. Worker 1 yields fewer items, so the workers'
    streams end at different batches."""

    def __init__(self, n_items=50, delay=0.0):
        self.n_items = n_items
        self.delay = delay

    def __iter__(self):
        info = io.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        worker = -1 if info is None else info.id
        epoch = -1 if info is None else info.epoch
        stop = self.n_items - (7 if worker == 1 else 0)
        for i in range(start, stop, step):
            if self.delay:
                time.sleep(self.delay)
            yield {"item": np.int64(i), "worker": np.int64(worker), "epoch": np.int64(epoch),
                   "pid": np.int64(os.getpid()), "ramp": np.arange(i % 4 + 1, dtype=np.int32)}


def batches_of(loader, drop=("pid",)):
    """Each batch as {name: array}, without the fields that differ by mode."""
    return [{k: np.array(v) for k, v in b.items() if k not in drop} for b in loader]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            assert x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]), k


@pytest.mark.parametrize("workers,batch_size,drop_last", [(2, 4, False), (3, 5, True)])
def test_batches_are_those_of_thread_mode_in_round_robin_order(workers, batch_size, drop_last):
    kwargs = dict(batch_size=batch_size, num_workers=workers, drop_last=drop_last)
    threads = batches_of(feedline.DataLoader(Stream(), worker_mode="thread", **kwargs))
    loader = feedline.DataLoader(Stream(), **kwargs)
    assert loader.worker_mode == "process"
    processes = batches_of(loader, drop=())
    assert_same(threads, [{k: v for k, v in b.items() if k != "pid"} for b in processes])
    # Round-robin: batch k comes from worker k % workers while every stream lasts.
    assert [int(b["worker"][0]) for b in processes[:workers * 2]] == list(range(workers)) * 2
    for b in processes:  # each batch is one worker's, loaded in its own process
        assert len(set(b["worker"].tolist())) == 1 and len(set(b["pid"].tolist())) == 1
        assert int(b["pid"][0]) != os.getpid()
    items = np.concatenate([b["item"] for b in processes]).tolist()
    assert len(items) == len(set(items))  # the split: no item twice
    loader.close()


def test_persistent_workers_keep_their_processes_and_reopen_each_epoch():
    loader = feedline.DataLoader(Stream(20), batch_size=4, num_workers=2,
                                 persistent_workers=True)
    first = batches_of(loader, drop=())
    pids = loader.worker_pids
    second = batches_of(loader, drop=())
    assert loader.worker_pids == pids and None not in pids
    assert {int(p) for b in first + second for p in b["pid"]} == set(pids)
    assert {int(e) for b in first for e in b["epoch"]} == {0}
    assert {int(e) for b in second for e in b["epoch"]} == {1}
    assert [b["item"].tolist() for b in first] == [b["item"].tolist() for b in second]
    loader.close()
    assert wait_gone(pids) == []


def test_without_persistent_workers_each_epoch_gets_fresh_processes():
    loader = feedline.DataLoader(Stream(20), batch_size=4, num_workers=2)
    first = {int(p) for b in batches_of(loader, drop=()) for p in b["pid"]}
    second = {int(p) for b in batches_of(loader, drop=()) for p in b["pid"]}
    assert len(first) == 2 and len(second) == 2 and not first & second
    loader.close()


def test_a_dead_worker_ends_the_epoch_naming_the_worker_and_signal():
    loader = feedline.DataLoader(Stream(400, delay=0.002), batch_size=4, num_workers=2,
                                 persistent_workers=True)
    it = iter(loader)
    next(it)
    victim = loader.worker_pids[1]
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(RuntimeError, match=r"worker process 1 .*signal 9 .*cannot be replayed"):
        for _ in it:
            pass
    assert wait_gone([victim]) == []
    # The next epoch starts a fresh worker and runs to its end.
    items = np.concatenate([b["item"] for b in batches_of(loader)]).tolist()
    assert sorted(items) == [i for i in range(400) if i % 2 == 0 or i < 393]
    assert victim not in loader.worker_pids
    assert loader.stats()["worker_restarts"] == 1
    loader.close()


def test_errors_in_the_iterator_follow_the_error_policy_as_on_threads():
    class Flaky(io.IterableDataset):
        def __iter__(self):
            info = io.get_worker_info()
            for i in range(info.id, 24, info.num_workers):
                if i == 9:
                    raise OSError("cannot read record 9")  # ends this worker's generator
                yield np.int64(i)

    def run(mode, policy):
        loader = feedline.DataLoader(Flaky(), batch_size=4, num_workers=2, worker_mode=mode,
                                     error_policy=policy)
        return [b.tolist() for b in loader]

    assert run("process", "skip") == run("thread", "skip")
    with pytest.raises(feedline.SampleError, match="cannot read record 9"):
        run("process", "raise")


def test_worker_init_fn_runs_in_the_worker_before_its_iterator():
    class Seen(io.IterableDataset):
        def __iter__(self):
            info = io.get_worker_info()
            yield np.array([info.id, info.num_workers, getattr(info.dataset, "init_pid", 0),
                            os.getpid()])

    def init(worker_id):
        io.get_worker_info().dataset.init_pid = os.getpid()

    rows = np.concatenate(list(feedline.DataLoader(Seen(), batch_size=1, num_workers=2,
                                                   worker_init_fn=init)))
    assert sorted(rows[:, 0].tolist()) == [0, 1] and set(rows[:, 1].tolist()) == {2}
    assert (rows[:, 2] == rows[:, 3]).all() and os.getpid() not in rows[:, 3].tolist()


def test_iter_failing_in_the_worker_is_an_error_naming_it():
    class Broken(io.IterableDataset):
        def __iter__(self):
            raise ValueError("no shards for this worker")

    with pytest.raises(RuntimeError, match="no shards for this worker"):
        list(feedline.DataLoader(Broken(), batch_size=2, num_workers=2))


def test_no_worker_process_is_left_after_close_mid_epoch():
    loader = feedline.DataLoader(Stream(10_000, delay=0.001), batch_size=8, num_workers=2)
    it = iter(loader)
    next(it)
    pids = [p for p in loader.worker_pids if p is not None]
    assert len(pids) == 2
    start = time.monotonic()
    loader.close()
    assert time.monotonic() - start < 5
    assert wait_gone(pids) == []
