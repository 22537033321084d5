"""feedline.torch behaves as torch's DataLoader where a script can tell, in
every worker mode (torch's own suite, tests/peers/run_torch_suite.py, runs
the default mode only): the dataset's own exception type, a collate_fn's
return value as it is, namedtuple batches, dtypes kept, Python numbers of
unbatched samples left as they are. Each case is compared with torch's own
DataLoader on the same dataset. Only the public API."""

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tud

from feedline.torch import DataLoader

MODES = [dict(num_workers=0), dict(num_workers=2, worker_mode="thread"),
         dict(num_workers=2, worker_mode="process")]
MODE_IDS = ["no-workers", "threads", "processes"]

Record = collections.namedtuple("Record", ["index", "values", "name"])


class RecordError(Exception):
    """A dataset's own exception type."""


class Records(tud.Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 9:
            raise RecordError(f"record {i} is broken")
        return Record(i, np.arange(3, dtype=np.int16) + i, f"r{i}")


class Numbers(tud.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return i, i * 0.25, np.float64(i)


def first(loader):
    return next(iter(loader))


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_the_datasets_own_exception_type_is_raised(mode):
    # Closed on the way out: the exception's traceback would keep the loader,
    # and its worker processes and shared memory, alive after the test.
    with DataLoader(Records(), batch_size=4, **mode) as loader:
        with pytest.raises(RecordError, match="record 9 is broken") as info:
            list(loader)
    assert info.value.__cause__ is not None  # feedline's SampleError, with the index
    assert info.value.__cause__.index == 9


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_namedtuple_samples_give_namedtuple_batches_with_dtypes_kept(mode):
    ours = first(DataLoader(Records(), batch_size=4, **mode))
    theirs = first(tud.DataLoader(Records(), batch_size=4))
    assert type(ours) is type(theirs) is Record
    for a, b in ((ours.index, theirs.index), (ours.values, theirs.values)):
        assert a.dtype == b.dtype and torch.equal(a, b)
    assert ours.values.dtype == torch.int16
    # Strings in a tuple sample come as torch's zip(*batch) gives them: a tuple.
    assert type(ours.name) is type(theirs.name) is tuple
    assert ours.name == theirs.name == ("r0", "r1", "r2", "r3")


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_a_collate_fns_return_value_is_the_batch_as_it_is(mode):
    def collate(samples):
        # What torch hands a collate_fn: the samples as the dataset returned them.
        assert all(type(s) is Record for s in samples)
        assert all(type(s.index) is int and isinstance(s.values, np.ndarray) for s in samples)
        return {"ids": [s.index for s in samples], "stacked": np.stack([s.values for s in samples])}

    ours = first(DataLoader(Records(), batch_size=3, collate_fn=collate, **mode))
    assert ours["ids"] == [0, 1, 2]
    assert isinstance(ours["stacked"], np.ndarray) and ours["stacked"].dtype == np.int16


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_numbers_batched_and_unbatched_as_torch_gives_them(mode):
    batched = first(DataLoader(Numbers(), batch_size=3, **mode))
    theirs = first(tud.DataLoader(Numbers(), batch_size=3))
    assert type(batched) is type(theirs) is list
    for a, b in zip(batched, theirs):
        assert a.dtype == b.dtype and torch.equal(a, b)  # int64, float64, float64
    unbatched = list(DataLoader(Numbers(), batch_size=None, **mode))
    expected = list(tud.DataLoader(Numbers(), batch_size=None))
    for a, b in zip(unbatched, expected):
        assert type(a) is type(b) is list
        assert type(a[0]) is int and type(a[1]) is float  # Python numbers stay numbers
        assert a[0] == b[0] and a[1] == b[1]
        assert isinstance(a[2], torch.Tensor) and a[2].dtype == b[2].dtype == torch.float64


def test_a_loader_with_a_collate_fn_is_freed_when_dropped():
    # The native loader holds the collate_fn wrapper: a strong reference from
    # it back to the loader would keep loader, workers and shared memory alive.
    import gc
    import weakref

    loader = DataLoader(Records(), batch_size=3, num_workers=2, collate_fn=lambda s: len(s))
    assert next(iter(loader)) == 3
    gone = weakref.ref(loader)
    del loader
    gc.collect()
    assert gone() is None
