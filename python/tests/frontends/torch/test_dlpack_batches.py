"""feedline.torch's batches reach torch through DLPack: each tensor is the
batch's own memory, imported with no numpy array in between, with torch's
DataLoader's values and dtypes, and it keeps that memory (the batch's slot)
for as long as it lives, after its loader too."""

import gc

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import feedline.torch

from dtype_samples import DTYPES, typed_dataset

Typed = typed_dataset(tud.Dataset)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_each_dtype_arrives_with_torchs_values(dtype):
    ours = list(feedline.torch.DataLoader(Typed(dtype), batch_size=4))
    theirs = list(tud.DataLoader(Typed(dtype), batch_size=4))
    assert len(ours) == len(theirs) == 3
    for (x, y), (tx, ty) in zip(ours, theirs):
        assert x.dtype == tx.dtype and y.dtype == ty.dtype
        assert torch.equal(x, tx) and torch.equal(y, ty)
        assert x.is_contiguous() and x.stride() == tx.stride()


def test_no_numpy_array_stands_between_a_batch_and_its_tensors(monkeypatch):
    def refuse(array):
        raise AssertionError("a batch field went through torch.from_numpy")
    monkeypatch.setattr(torch, "from_numpy", refuse)
    batches = list(feedline.torch.DataLoader(Typed(np.float32, n=64), batch_size=16))
    assert len(batches) == 4
    monkeypatch.undo()
    for x, y in batches:
        assert x.dtype == torch.float32 and y.dtype == torch.int64


def test_a_tensor_keeps_its_batch_after_the_loader_is_gone():
    loader = feedline.torch.DataLoader(Typed(np.int64, n=8), batch_size=4, num_workers=2)
    first, _ = next(iter(loader))
    expected = torch.stack([torch.from_numpy(Typed(np.int64)[i][0]) for i in range(4)])
    del loader
    gc.collect()
    assert torch.equal(first, expected)
    first += 1  # the memory is the tensor's to write, as torch's own batch is
    assert torch.equal(first, expected + 1)


def test_batches_held_past_the_pool_stay_whole():
    """Each batch's tensor holds its own slot: holding every batch of an
    epoch (more than the loader prefetches) keeps each one's values."""
    loader = feedline.torch.DataLoader(Typed(np.int32, n=64), batch_size=4, num_workers=2,
                                       prefetch_factor=2)
    held = [x for x, _ in loader]
    again = [x for x, _ in tud.DataLoader(Typed(np.int32, n=64), batch_size=4)]
    assert len(held) == 16
    for ours, theirs in zip(held, again):
        assert torch.equal(ours, theirs)
