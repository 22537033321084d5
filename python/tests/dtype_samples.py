"""Samples of every dtype a batch field goes out through DLPack in, for the
front ends' DLPack tests (frontends/torch/test_dlpack_batches.py,
paddle_contract/test_dlpack_batches_paddle.py). bool stays a numpy array
(DLPack 0.6 has no bool code), and so does uint16 (torch 1.13 has none)."""

import numpy as np

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]


def typed_sample(dtype, i):
    """Sample i: a [2, 3] array of `dtype` holding i, i + 1, ... (mod 100),
    and the label i."""
    return (np.arange(i, i + 6) % 100).astype(dtype).reshape(2, 3), i


def typed_dataset(base):
    """A map-style dataset class on the framework's `base` (torch's or
    Paddle's Dataset): Typed(dtype, n) holds typed_sample's first n."""

    class Typed(base):
        def __init__(self, dtype, n=10):
            super().__init__()
            self.dtype = dtype
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return typed_sample(self.dtype, i)

    return Typed
