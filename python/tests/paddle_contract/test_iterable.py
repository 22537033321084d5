"""Streams (paddle.io.IterableDataset) with worker processes: every worker
iterates its own copy, and paddle.io.get_worker_info() tells a copy which
part to read, in __iter__ or in worker_init_fn. Paddle's
test_multiprocess_dataloader_iterable_dataset_split.py and
test_multiprocess_dataloader_iterable_dataset_dynamic.py are the references
(docs/paddle.md)."""

import math

import numpy as np
import pytest
from paddle.io import IterableDataset, get_worker_info


class SplitByWorker(IterableDataset):
    """Yields start..end-1; in a worker, only that worker's share."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def __iter__(self):
        info = get_worker_info()
        start, end = self.start, self.end
        if info is not None:
            share = int(math.ceil((end - start) / float(info.num_workers)))
            start = self.start + info.id * share
            end = min(start + share, self.end)
        for value in range(start, end):
            yield np.array([value])


def values(loader):
    return sorted(int(v) for batch in loader for v in batch.numpy().ravel())


@pytest.mark.parametrize("num_workers", [0, 1, 2])
def test_get_worker_info_splits_a_stream_between_workers(loader_class, num_workers):
    loader = loader_class(SplitByWorker(0, 10), num_workers=num_workers, batch_size=1,
                          drop_last=True)
    assert values(loader) == list(range(10))


class Range(IterableDataset):
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def __iter__(self):
        for value in range(self.start, self.end):
            yield np.array([value])


def narrow_to_this_worker(worker_id):
    # worker_init_fn narrows the worker's own copy of the dataset.
    info = get_worker_info()
    dataset = info.dataset
    share = int(math.ceil((dataset.end - dataset.start) / float(info.num_workers)))
    dataset.start = dataset.start + worker_id * share
    dataset.end = min(dataset.start + share, dataset.end)


@pytest.mark.parametrize("num_workers", [1, 2])
def test_worker_init_fn_splits_through_worker_info(loader_class, num_workers):
    dataset = Range(0, 10)
    loader = loader_class(dataset, num_workers=num_workers, batch_size=1, drop_last=True,
                          worker_init_fn=narrow_to_this_worker)
    assert values(loader) == list(range(10))
    assert (dataset.start, dataset.end) == (0, 10)  # the training process's copy is untouched


class ReportsInfo(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        if info is None:
            yield np.array([-1, -1, -1])
        else:
            yield np.array([info.id, info.num_workers, int(isinstance(info.dataset, ReportsInfo))])


def test_worker_info_describes_the_worker(loader_class):
    rows = sorted(b.numpy().ravel().tolist() for b in loader_class(ReportsInfo(), num_workers=2))
    assert rows == [[0, 2, 1], [1, 2, 1]]
    assert [b.numpy().ravel().tolist() for b in loader_class(ReportsInfo())] == [[-1, -1, -1]]
    assert get_worker_info() is None


@pytest.mark.parametrize("num_workers", [0, 2])
def test_each_worker_iterates_its_own_copy(loader_class, num_workers):
    loader = loader_class(Range(0, 12), num_workers=num_workers, batch_size=4)
    copies = max(num_workers, 1)
    assert values(loader) == sorted(list(range(12)) * copies)
    assert sum(1 for _ in loader) == 3 * copies


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_stream_is_batched_with_a_short_last_batch(loader_class, num_workers):
    loader = loader_class(SplitByWorker(0, 10), num_workers=num_workers, batch_size=3)
    sizes = sorted(len(b) for b in loader)
    # One stream of 10, or two of 5: each worker batches its own.
    assert sizes == ([1, 3, 3, 3] if num_workers == 0 else [2, 2, 3, 3])
