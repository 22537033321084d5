"""A worker_init_fn that fails after the other workers loaded the whole
epoch still raises feedline.WorkerInitError (torch raises a failed
worker_init_fn too): the epoch does not end quietly without it."""

import time

import numpy as np
import pytest

import feedline
from feedline import io


class Numbers(io.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return np.int64(i)


def late_failing_init(worker_id):
    if worker_id == 1:
        time.sleep(0.3)  # worker 0 loads all 8 samples meanwhile
        raise OSError("no GPU here")


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_a_worker_init_fn_failing_after_the_epoch_was_loaded_is_raised(mode):
    loader = feedline.DataLoader(Numbers(), batch_size=4, num_workers=2,
                                 worker_init_fn=late_failing_init, worker_mode=mode)
    start = time.monotonic()
    delivered = []
    with pytest.raises(feedline.WorkerInitError) as error:
        for batch in loader:
            delivered.append(batch.tolist())
    assert "worker_init failed in worker 1" in str(error.value)
    assert "no GPU here" in str(error.value)
    assert delivered in ([], [[0, 1, 2, 3]], [[0, 1, 2, 3], [4, 5, 6, 7]])
    assert time.monotonic() - start < 10
    loader.close()
