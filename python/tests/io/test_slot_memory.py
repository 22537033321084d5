"""How many batch slots worker processes keep, through stats(): a for loop
that waits for its batches (the loader is the bottleneck) keeps two slots of
shared memory, one batch each; a loop slower than the loader gets the
prefetch it allows, max(2, num_workers * prefetch_factor)."""

import time

import numpy as np

import feedline
from feedline import io

BATCH = 64


class Slow(io.Dataset):
    """Sample i: float32 [256] made from i, after `row_s` seconds (a decoded
    image takes a while)."""

    def __init__(self, n, row_s):
        self.n, self.row_s = n, row_s

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        time.sleep(self.row_s)
        return np.arange(256, dtype=np.float32) + index, np.int64(index)


def loader_for(dataset):
    return feedline.DataLoader(dataset, batch_size=BATCH, num_workers=2, prefetch_factor=2,
                               worker_mode="process", persistent_workers=True)


def test_a_loop_that_waits_for_its_batches_keeps_two_slots():
    with loader_for(Slow(8 * BATCH, 0.002)) as loader:
        seen = 0
        for values, index in loader:  # holds each batch until the next arrives
            assert index.tolist() == list(range(seen, seen + BATCH))
            seen += BATCH
        stats = loader.stats()
    assert seen == 8 * BATCH
    assert stats["slots"] == 2
    assert stats["slot_bytes"] >= 2 * BATCH * (256 * 4 + 8)


def test_a_loop_slower_than_the_loader_gets_its_prefetch():
    with loader_for(Slow(8 * BATCH, 0.0001)) as loader:
        seen = 0
        for values, index in loader:
            assert index.tolist() == list(range(seen, seen + BATCH))
            seen += BATCH
            time.sleep(0.06)
        stats = loader.stats()
    assert seen == 8 * BATCH
    assert stats["slots"] == 4
