"""torch.bfloat16 fields: feedline.torch.DataLoader delivers them as
torch.bfloat16 tensors with the values the dataset gave, collated as torch's
DataLoader collates them; feedline.DataLoader (numpy batches, and numpy has
no bfloat16) refuses them, naming the field and the loader that takes them."""

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import feedline
import feedline.torch

# None of these is a float16 value (too large, too small, or too precise), so
# a path that converted through float16 would change them.
_VALUES = [1e20, -3.0e38, 2.0**-130, 1.0 + 2.0**-7, 0.3, -0.0]


def _sample_values(i):
    return torch.tensor(_VALUES, dtype=torch.bfloat16).reshape(2, 3) * (i + 1)


class Mixed(tud.Dataset):
    """Dict samples: bfloat16 [2, 3] and a bfloat16 scalar (nested) beside an
    int label and a float32 array."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {
            "x": _sample_values(i),
            "meta": {"w": torch.tensor(0.1 * i, dtype=torch.bfloat16)},
            "y": i,
            "f": torch.full((2,), float(i)),
        }


class Pairs(tud.Dataset):
    """Tuple samples: (bfloat16 [3], label)."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return _sample_values(i).reshape(-1)[:3].clone(), i


def _assert_same_batch(ours, theirs):
    """Same structure, dtypes and values; bfloat16 compared bit for bit."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and ours.keys() == theirs.keys()
        for key in theirs:
            _assert_same_batch(ours[key], theirs[key])
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, list) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same_batch(a, b)
    else:
        assert isinstance(ours, torch.Tensor), type(ours)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        assert torch.equal(ours, theirs)
        if theirs.dtype == torch.bfloat16:
            assert torch.equal(ours.view(torch.int16), theirs.view(torch.int16))


def test_the_values_are_not_float16_values():
    values = torch.tensor(_VALUES, dtype=torch.bfloat16).float()
    assert not torch.equal(values.half().float(), values)


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "thread"), (2, "process")])
@pytest.mark.parametrize("dataset", [Mixed, Pairs])
def test_bfloat16_fields_arrive_exactly_as_torchs_dataloader_gives_them(dataset, workers, mode):
    ours = list(feedline.torch.DataLoader(dataset(), batch_size=4, num_workers=workers,
                                          worker_mode=mode, timeout=60))
    theirs = list(tud.DataLoader(dataset(), batch_size=4))
    assert len(ours) == len(theirs) == (len(dataset()) + 3) // 4
    for a, b in zip(ours, theirs):
        _assert_same_batch(a, b)
    x = ours[0]["x"] if dataset is Mixed else ours[0][0]
    assert x.dtype == torch.bfloat16 and x.shape[0] == 4  # stacked along a new batch dimension


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "process")])
def test_a_collate_fn_gets_bfloat16_tensors_and_may_return_them(workers, mode):
    def collate(samples):
        # In the worker process that loaded the batch when workers are
        # processes: a failure there raises here as AssertionError.
        assert all(s["x"].dtype == torch.bfloat16 for s in samples)
        return tud.default_collate(samples)

    ours = list(feedline.torch.DataLoader(Mixed(), batch_size=5, num_workers=workers,
                                          worker_mode=mode, collate_fn=collate, timeout=60))
    theirs = list(tud.DataLoader(Mixed(), batch_size=5))
    for a, b in zip(ours, theirs):
        _assert_same_batch(a, b)
    assert len(ours) == 2  # every sample's x reached collate_fn as bfloat16


def test_without_batching_each_sample_is_its_own_bfloat16_tensor():
    ours = list(feedline.torch.DataLoader(Pairs(), batch_size=None))
    assert len(ours) == len(Pairs())
    for i, (x, y) in enumerate(ours):
        _assert_same_batch([x], [Pairs()[i][0]])
        assert y == i


def test_bfloat16_fields_of_varying_shape_are_padded_with_their_lengths():
    samples = [torch.arange(1, n + 1, dtype=torch.bfloat16) / 3 for n in (1, 3, 2)]
    x, lengths = next(iter(feedline.torch.DataLoader(samples, batch_size=3)))
    assert x.dtype == torch.bfloat16 and lengths.tolist() == [1, 3, 2]
    for row, sample in zip(x, samples):
        _assert_same_batch([row[: len(sample)]], [sample])
        assert not row[len(sample):].any()  # padded with zeros


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "thread"), (2, "process")])
def test_the_numpy_loader_refuses_a_bfloat16_field_naming_it_and_the_torch_loader(workers, mode):
    loader = feedline.DataLoader(Mixed(), batch_size=4, num_workers=workers, worker_mode=mode,
                                 timeout=60)
    with pytest.raises(feedline.SampleError,
                       match=r"field 'x' is a torch\.bfloat16 tensor.*numpy has no dtype.*"
                             r"feedline\.torch\.DataLoader delivers it"):
        next(iter(loader))


def test_a_nested_bfloat16_field_is_refused_by_its_path():
    class Nested(tud.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return {"meta": {"w": torch.zeros(2, dtype=torch.bfloat16)}}

    with pytest.raises(feedline.SampleError, match=r"field 'meta\[\"w\"\]' is a torch\.bfloat16"):
        next(iter(feedline.DataLoader(Nested(), batch_size=2)))


def test_a_field_that_is_bfloat16_in_one_sample_and_float32_in_another_is_refused():
    samples = [{"x": torch.ones(2, dtype=torch.bfloat16)}, {"x": torch.ones(2)}]
    with pytest.raises(feedline.SampleError,
                       match=r"key 'x' of the sample is a numeric array but in the first sample "
                             r"it was a torch\.bfloat16 tensor"):
        next(iter(feedline.torch.DataLoader(samples, batch_size=2)))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_fields_are_still_refused_by_the_torch_loader(dtype):
    samples = [(torch.ones(2, dtype=dtype), i) for i in range(4)]
    with pytest.raises(feedline.SampleError, match=r"field '0' .*complex.*not supported"):
        next(iter(feedline.torch.DataLoader(samples, batch_size=2)))


def test_a_bfloat16_tensor_needing_grad_is_refused_with_advice():
    samples = [torch.ones(2, dtype=torch.bfloat16, requires_grad=True) for _ in range(2)]
    with pytest.raises(feedline.SampleError, match=r"field '0' .*needing grad.*detach"):
        next(iter(feedline.torch.DataLoader(samples, batch_size=2)))
