"""Batches are views of the loader's slots: no copy on the way to numpy or
torch, and a slot stays out of the pool while any view of it lives."""

import gc
import threading

import numpy as np
import pytest

import feedline
from feedline import io

from conftest import IndexDataset


def small_pool_loader(dataset, **kwargs):
    # num_workers * prefetch_factor = 1, so the pool has its minimum of 2 slots.
    return feedline.DataLoader(dataset, batch_size=2, num_workers=1, prefetch_factor=1, **kwargs)


def test_held_arrays_keep_their_slot_and_their_contents():
    it = iter(small_pool_loader(IndexDataset(20)))
    held_images, held_labels = next(it)
    expected = held_images.copy()
    addresses = set()
    for _ in range(4):
        images, labels = next(it)
        addresses.add(images.ctypes.data)
        del images, labels
    # Every later batch went through the one slot left; the held one was
    # never written again.
    assert len(addresses) == 1 and held_images.ctypes.data not in addresses
    np.testing.assert_array_equal(held_images, expected)
    assert held_labels.tolist() == [0, 1]

    # Holding both slots: the loader makes one more slot rather than
    # deadlocking (list(loader) must work), and the held batches stay intact.
    second_images, second_labels = next(it)
    third_images, third_labels = next(it)
    assert third_labels.tolist() == [12, 13]
    assert third_images.ctypes.data not in (held_images.ctypes.data, second_images.ctypes.data)
    np.testing.assert_array_equal(held_images, expected)
    assert second_labels.tolist() == [10, 11]


def test_list_of_a_loader_holds_every_batch():
    batches = list(small_pool_loader(IndexDataset(20)))
    assert [labels.tolist() for _, labels in batches] == [[2 * k, 2 * k + 1] for k in range(10)]
    assert len({images.ctypes.data for images, _ in batches}) == 10


def test_a_view_of_a_batch_also_holds_the_slot():
    it = iter(small_pool_loader(IndexDataset(20)))
    row = next(it)[0][1]  # a view of one row; the batch itself is dropped
    other = next(it)
    third = next(it)
    # The row still views its own slot: nothing was written over it.
    np.testing.assert_array_equal(row, np.full((2, 3), 1))
    assert third[1].tolist() == [4, 5]
    del row, other, third


def test_batches_outlive_the_loader():
    loader = small_pool_loader(IndexDataset(6))
    images, labels = next(iter(loader))
    loader.close()
    del loader
    gc.collect()
    np.testing.assert_array_equal(images[1], np.full((2, 3), 1))


def test_numpy_exports_dlpack():
    images, _ = next(iter(small_pool_loader(IndexDataset(4))))
    assert images.flags.writeable and images.flags.c_contiguous
    assert images.__dlpack_device__() == (1, 0)  # kDLCPU
    assert type(images.__dlpack__()).__name__ == "PyCapsule"


def test_torch_takes_batches_without_copying():
    import torch  # Debian's python3-torch, installed by scripts/install_deps.sh
    it = iter(small_pool_loader(IndexDataset(20)))
    images, labels = next(it)
    address = images.ctypes.data
    from_dlpack = torch.from_dlpack(images)
    from_numpy = torch.from_numpy(labels)
    assert from_dlpack.data_ptr() == address
    assert from_numpy.data_ptr() == labels.ctypes.data
    assert from_dlpack.dtype == torch.int32 and tuple(from_dlpack.shape) == (2, 2, 3)
    images[0, 0, 0] = 42
    assert from_dlpack[0, 0, 0].item() == 42, "one memory, two views"

    # The tensor alone keeps the slot: drop the numpy arrays, keep the tensor,
    # and run batches through the pool: the tensor's memory is never reused.
    expected = from_dlpack.clone()
    del images, labels, from_numpy
    gc.collect()
    for k in range(1, 6):
        assert next(it)[1].tolist() == [2 * k, 2 * k + 1]
    assert torch.equal(from_dlpack, expected)


def test_waiting_for_a_batch_releases_the_gil():
    # The dataset blocks until the main thread, running Python, opens the
    # gate while another thread waits inside next(). A next() that kept the
    # GIL would deadlock here.
    gate = threading.Event()

    class Gated(io.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            gate.wait()
            return i

    # On a thread: a worker process would have its own copy of the gate,
    # which this thread never opens.
    loader = feedline.DataLoader(Gated(), batch_size=2, num_workers=1, worker_mode="thread")
    result = []
    consumer = threading.Thread(target=lambda: result.append(next(iter(loader)).tolist()))
    consumer.start()
    gate.set()
    consumer.join(timeout=60)
    assert result == [[0, 1]]
