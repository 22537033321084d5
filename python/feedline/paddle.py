"""feedline for Paddle users: paddle.io.DataLoader's signature, paddle Tensors
out when paddle is importable. The one changed line::

    from feedline.paddle import DataLoader   # was: from paddle.io import DataLoader

A thin adapter over feedline.DataLoader, which already follows paddle.io's
names: it accepts the arguments only paddle has (feed_list, places,
return_list, use_buffer_reader) and hands each array to paddle through
DLPack, sharing its memory. Without paddle, batches stay numpy arrays. See
docs/python.md, "Coming from Paddle".
"""

import importlib

import numpy as np

from feedline import io
from feedline._framework import ConvertingIterator, map_batch

__all__ = ["DataLoader"]


def _paddle_to_tensor():
    """A numpy array to a paddle Tensor through DLPack (sharing its memory),
    or None when paddle is not installed."""
    try:
        paddle = importlib.import_module("paddle")
        from_dlpack = importlib.import_module("paddle.utils.dlpack").from_dlpack
    except ImportError:
        return None

    def to_tensor(array):
        try:
            capsule = array.__dlpack__()
        except BufferError:
            # numpy before 1.25 exports no bool arrays through DLPack: a bool
            # field (a mask) is copied instead, and stays bool.
            return paddle.to_tensor(array)
        return from_dlpack(capsule)

    return to_tensor


class DataLoader(io.DataLoader):
    """paddle.io.DataLoader, loaded by feedline.

      feed_list           static-graph feeds: must be None (dynamic graph only).
      places              accepted; batches are on the host, move them with
                          paddle.to_tensor(..., place=) or .cuda().
      return_list         True (paddle's default in dynamic mode): a list per
                          batch for tuple samples; False is refused (it serves
                          static graphs).
      use_buffer_reader   accepted: prefetching is always on (prefetch_factor).
      use_shared_memory   accepted (see feedline.DataLoader).
      batch_sampler, batch_size, shuffle, drop_last, collate_fn, num_workers,
      prefetch_factor, timeout, worker_init_fn, persistent_workers
                          as in paddle.io.

    Extra keywords go to feedline.DataLoader (seed, error_policy, ...).
    `to_tensor` converts a numpy array to the framework's tensor; it defaults
    to paddle's DLPack import when paddle is importable, else arrays are
    returned as they are.
    """

    def __init__(
        self,
        dataset,
        feed_list=None,
        places=None,
        return_list=True,
        batch_sampler=None,
        batch_size=1,
        shuffle=False,
        drop_last=False,
        collate_fn=None,
        num_workers=0,
        use_buffer_reader=True,
        prefetch_factor=2,
        use_shared_memory=True,
        timeout=0,
        worker_init_fn=None,
        persistent_workers=False,
        to_tensor=None,
        **feedline_options,
    ):
        if feed_list is not None:
            raise ValueError("feed_list is for static graphs; feedline.paddle.DataLoader serves "
                             "dynamic-graph training: leave feed_list=None")
        if not return_list:
            raise ValueError("return_list=False is for static graphs; feedline.paddle.DataLoader "
                             "returns lists (paddle's dynamic-graph default)")
        if batch_sampler is not None:
            # paddle ignores batch_size, shuffle and drop_last next to a batch_sampler.
            batch_size, shuffle, drop_last = 1, False, False
        super().__init__(
            dataset,
            batch_size=batch_size,
            shuffle=shuffle,
            batch_sampler=batch_sampler,
            num_workers=num_workers,
            collate_fn=collate_fn,
            drop_last=drop_last,
            prefetch_factor=prefetch_factor,
            persistent_workers=persistent_workers,
            use_shared_memory=use_shared_memory,
            timeout=timeout,
            worker_init_fn=worker_init_fn,
            **feedline_options,
        )
        self.places = places
        self.return_list = return_list
        self.use_buffer_reader = use_buffer_reader
        self._to_tensor = _paddle_to_tensor() if to_tensor is None else to_tensor

    def __iter__(self):
        return ConvertingIterator(self, super().__iter__())

    def _convert(self, batch):
        def one(value):
            if self._to_tensor is not None and isinstance(value, np.ndarray):
                return self._to_tensor(value)
            return value

        return map_batch(batch, one)
