"""A Python dataset's arrays are written straight into the batch once the
first batch showed their layout (src/loader/slot_layout.h); a later sample
that does not fit that layout gets what it got before: padding with
"<field>_lengths", or the collate error naming the field and both shapes.
Each load is bounded by the loader's timeout (30 s), so nothing hangs."""

import numpy as np
import pytest

import feedline
from feedline import io

MODES = [(0, "thread"), (2, "thread"), (2, "process")]


class Widening(io.Dataset):
    """("x": float32 [width] of i*100 + k, "label": i); width 4 below
    `wide_from`, 6 from it; int64 from `int_from` on."""

    def __init__(self, n, wide_from=1 << 30, int_from=1 << 30):
        self.n, self.wide_from, self.int_from = n, wide_from, int_from

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        width = 6 if i >= self.wide_from else 4
        dtype = np.int64 if i >= self.int_from else np.float32
        return {"x": (i * 100 + np.arange(width)).astype(dtype), "label": i}


def expected_x(indices, width, wide_from=10):
    out = np.zeros((len(indices), width), np.float32)
    for r, i in enumerate(indices):
        w = 6 if i >= wide_from else 4
        out[r, :w] = i * 100 + np.arange(w)
    return out


@pytest.mark.parametrize("workers,mode", MODES)
def test_batches_over_epochs_hold_every_sample(workers, mode):
    with feedline.DataLoader(Widening(48), batch_size=4, num_workers=workers, worker_mode=mode,
                             shuffle=True, seed=5, timeout=30) as loader:
        for epoch in range(2):
            seen = []
            for batch in loader:
                labels = batch["label"].tolist()
                seen += labels
                assert set(batch) == {"x", "label"}
                np.testing.assert_array_equal(batch["x"], expected_x(labels, 4, wide_from=1 << 30))
            assert sorted(seen) == list(range(48)), epoch


@pytest.mark.parametrize("workers,mode", MODES)
def test_a_wider_sample_after_the_first_batches_is_padded(workers, mode):
    with feedline.DataLoader(Widening(24, wide_from=10), batch_size=4, num_workers=workers,
                             worker_mode=mode, timeout=30) as loader:
        batches = [{k: np.array(v) for k, v in b.items()} for b in loader]
    assert "x_lengths" not in batches[1]
    np.testing.assert_array_equal(batches[1]["x"], expected_x([4, 5, 6, 7], 4))
    # Batch 2 holds indices 8..11: widths 4, 4, 6, 6.
    np.testing.assert_array_equal(batches[2]["x"], expected_x([8, 9, 10, 11], 6))
    np.testing.assert_array_equal(batches[2]["x_lengths"], [4, 4, 6, 6])
    np.testing.assert_array_equal(batches[4]["x"], expected_x([16, 17, 18, 19], 6))


@pytest.mark.parametrize("workers,mode", MODES)
def test_a_dtype_change_after_the_first_batches_names_the_field_and_both(workers, mode):
    with feedline.DataLoader(Widening(16, int_from=10), batch_size=4, num_workers=workers,
                             worker_mode=mode, timeout=30) as loader:
        with pytest.raises(feedline.SampleError,
                           match=r"field 'x' has f32 \[4\] in one sample and i64 \[4\] in another"):
            for _ in loader:
                pass
