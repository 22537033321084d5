"""list(loader) over an IterableDataset keeps every batch, and must not wait
forever: with the slots all held by kept batches and by another worker's
batch waiting for its turn, the worker whose batch comes next in the
round-robin still gets a slot. Run 50 times per worker mode, as a hang
showed in 4 runs of 4 (processes) and 3 of 4 (threads) before the fix.
Only the public API (feedline.DataLoader, feedline.torch.DataLoader)."""

import numpy as np
import pytest

import feedline
from feedline import io

RUNS = 50


class Items(io.IterableDataset):
    """Worker w of n yields w, w + n, ... < 40, each as an int64 scalar."""

    def __iter__(self):
        info = io.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, 40, step):
            yield np.int64(i)


@pytest.mark.parametrize("mode,workers", [("thread", 2), ("process", 2), ("thread", 0)])
def test_list_of_a_stream_keeps_every_batch_without_waiting_forever(mode, workers):
    for run in range(RUNS):
        loader = feedline.DataLoader(Items(), batch_size=4, num_workers=workers,
                                     worker_mode=mode)
        batches = list(loader)
        items = sorted(int(v) for b in batches for v in np.asarray(b))
        assert items == list(range(40)), f"run {run}"
        assert len(batches) == 10
        loader.close()


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_list_of_a_stream_through_the_torch_swap(mode):
    torch = pytest.importorskip("torch")
    from feedline.torch import DataLoader

    class TorchItems(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info() or io.get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, 40, step))

    for run in range(RUNS):
        loader = DataLoader(TorchItems(), batch_size=4, num_workers=2, worker_mode=mode)
        batches = list(loader)
        assert sorted(int(v) for b in batches for v in b) == list(range(40)), f"run {run}"
        loader.close()
