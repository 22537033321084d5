"""feedline.paddle's batches reach Paddle through DLPack: each Tensor is made
by paddle.utils.dlpack.from_dlpack over the batch's own memory, with no
numpy array in between, holds paddle.io's values and dtypes, and keeps that
memory (the batch's slot) after its loader is gone. (The torch side:
frontends/torch/test_dlpack_batches.py.)"""

import gc

import numpy as np
import paddle
import pytest

import feedline.paddle
from feedline.frontends import _shaping

from dtype_samples import DTYPES, typed_dataset

Typed = typed_dataset(paddle.io.Dataset)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_each_dtype_arrives_with_paddles_values(dtype):
    ours = list(feedline.paddle.DataLoader(Typed(dtype), batch_size=4))
    theirs = list(paddle.io.DataLoader(Typed(dtype), batch_size=4))
    assert len(ours) == len(theirs) == 3
    for (x, y), (tx, ty) in zip(ours, theirs):
        assert x.dtype == tx.dtype and y.dtype == ty.dtype
        assert x.shape == tx.shape and y.shape == ty.shape
        assert np.array_equal(x.numpy(), tx.numpy()) and np.array_equal(y.numpy(), ty.numpy())


def test_no_numpy_array_stands_between_a_batch_and_its_tensors(monkeypatch):
    exported = []
    dlpack = _shaping.BatchArray.__dlpack__

    def counting(self, *args, **kwargs):
        exported.append(self.shape)
        return dlpack(self, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("a batch field went through a numpy array")

    monkeypatch.setattr(_shaping.BatchArray, "__dlpack__", counting)
    monkeypatch.setattr(_shaping.BatchArray, "numpy", refuse)
    monkeypatch.setattr(_shaping.BatchArray, "__array__", refuse)
    monkeypatch.setattr(paddle, "to_tensor", refuse)
    batches = list(feedline.paddle.DataLoader(Typed(np.float32, n=64), batch_size=16,
                                              num_workers=2))
    monkeypatch.undo()
    assert len(batches) == 4
    # Each batch's two fields, exported from the batch itself.
    assert exported == [(16, 2, 3), (16,)] * 4
    for x, y in batches:
        assert x.dtype == paddle.float32 and y.dtype == paddle.int64


def test_a_tensor_keeps_its_batch_after_the_loader_is_gone():
    loader = feedline.paddle.DataLoader(Typed(np.int64, n=8), batch_size=4, num_workers=2)
    first, _ = next(iter(loader))
    expected = np.stack([Typed(np.int64)[i][0] for i in range(4)])
    del loader
    gc.collect()
    assert np.array_equal(first.numpy(), expected)
    first += 1  # the memory is the Tensor's to write, as paddle.io's own batch is
    assert np.array_equal(first.numpy(), expected + 1)


def test_batches_held_past_the_pool_stay_whole():
    """Each batch's Tensor holds its own slot: holding every batch of an
    epoch (more than the loader prefetches) keeps each one's values."""
    held = [x for x, _ in feedline.paddle.DataLoader(Typed(np.int32, n=64), batch_size=4,
                                                     num_workers=2, prefetch_factor=2)]
    again = [x for x, _ in paddle.io.DataLoader(Typed(np.int32, n=64), batch_size=4)]
    assert len(held) == 16
    for ours, theirs in zip(held, again):
        assert np.array_equal(ours.numpy(), theirs.numpy())
