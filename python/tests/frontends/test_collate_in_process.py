"""Samples loaded in the training process (worker threads, num_workers=0)
reach a user's collate_fn as the objects the dataset returned, as torch
hands them over: never pickled on the way, so a sample that cannot be
pickled is collated too, and the objects are the dataset's own."""

import threading

import numpy as np
import pytest
import torch.utils.data as tud

import feedline
import feedline.torch


class WithLock(tud.Dataset):
    """Sample i: {"x": int64 [2] filled with i, "lock": a lock}; rows in
    `fail` raise. Every object returned is kept, by index, to compare."""

    def __init__(self, n=10, fail=()):
        self.n = n
        self.fail = set(fail)
        self.returned = {}
        self.mu = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.fail:
            raise ValueError(f"sample {i} is broken")
        sample = {"x": np.full(2, i, dtype=np.int64), "lock": threading.Lock()}
        with self.mu:
            self.returned.setdefault(i, []).append(sample)
        return sample


def lock_collate(samples):
    """The rows' indices, and whether each sample is a lock-holding dict."""
    return ([int(s["x"][0]) for s in samples],
            [isinstance(s["lock"], type(threading.Lock())) for s in samples])


MODES = [
    ("torch", dict(num_workers=0)),
    ("torch", dict(num_workers=2, worker_mode="thread")),
    ("feedline", dict(num_workers=0)),
    ("feedline", dict(num_workers=2, worker_mode="thread")),
]


def loader(front, dataset, **kwargs):
    kwargs.setdefault("batch_size", 4)
    kwargs.setdefault("collate_fn", lock_collate)
    make = feedline.torch.DataLoader if front == "torch" else feedline.DataLoader
    return make(dataset, **kwargs)


@pytest.mark.parametrize("front,kwargs", MODES)
def test_samples_that_cannot_be_pickled_are_collated_as_torch_collates_them(front, kwargs):
    ours = list(loader(front, WithLock(), **kwargs))
    theirs = list(tud.DataLoader(WithLock(), batch_size=4, collate_fn=lock_collate))
    assert ours == theirs
    assert [len(indices) for indices, _ in ours] == [4, 4, 2]


@pytest.mark.parametrize("front,kwargs", MODES)
def test_collate_fn_receives_the_very_objects_the_dataset_returned(front, kwargs):
    dataset = WithLock()
    seen = []

    def identity_collate(samples):
        seen.append([any(s is r for r in dataset.returned[int(s["x"][0])]) for s in samples])
        return len(samples)

    assert list(loader(front, dataset, collate_fn=identity_collate, **kwargs)) == [4, 4, 2]
    assert seen and all(all(batch) for batch in seen)


@pytest.mark.parametrize("policy", ["skip", "replace"])
@pytest.mark.parametrize("front,kwargs", MODES[2:])
def test_a_failed_row_is_skipped_or_replaced_by_its_own_object(front, kwargs, policy):
    dataset = WithLock(n=13, fail={5, 6})
    batches = list(loader(front, dataset, error_policy=policy, seed=3, **kwargs))
    alone = list(loader(front, WithLock(n=13, fail={5, 6}), error_policy=policy, seed=3,
                        num_workers=0))
    assert batches == alone
    rows = [i for indices, _ in batches for i in indices]
    assert 5 not in rows and 6 not in rows
    assert all(all(locks) for _, locks in batches)
    if policy == "skip":
        assert sorted(rows) == [i for i in range(13) if i not in (5, 6)]
    else:
        assert [len(indices) for indices, _ in batches] == [4, 4, 4, 1]


class Stream(tud.IterableDataset):
    """Items {"i": i, "lock": a lock} for i < 9, split between workers (on
    threads torch's get_worker_info, one global per process, cannot name
    them: feedline's names each)."""

    def __iter__(self):
        info = feedline.get_worker_info() or tud.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, 9, step):
            yield {"i": i, "lock": threading.Lock()}


@pytest.mark.parametrize("workers", [0, 2])
def test_a_streams_items_reach_collate_fn_whole_on_threads(workers):
    collate = lambda items: sorted(item["i"] for item in items)  # noqa: E731
    ours = list(feedline.torch.DataLoader(Stream(), batch_size=3, num_workers=workers,
                                          worker_mode="thread", collate_fn=collate))
    theirs = list(tud.DataLoader(Stream(), batch_size=3, num_workers=workers,
                                 collate_fn=collate))
    assert sorted(i for b in ours for i in b) == list(range(9))
    if workers == 0:
        assert ours == theirs
