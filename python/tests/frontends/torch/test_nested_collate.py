"""Nested samples are collated level by level, as torch's default_collate
does: feedline.torch.DataLoader gives the same structure and values as
torch.utils.data.default_collate, in threads, worker processes and with 0
workers; feedline.DataLoader gives the same tree with tuples and numpy arrays."""


import numpy as np
import pytest
import torch
from torch.utils.data import default_collate

import feedline
import feedline.torch



MODES = [
    pytest.param(dict(num_workers=0), id="0-workers"),
    pytest.param(dict(num_workers=2, worker_mode="thread"), id="threads"),
    pytest.param(dict(num_workers=2, worker_mode="process"), id="processes"),
]


class DictOfTuples:
    """{"image": array, "meta": (int, {"box": array, "name": str}), "pair": [float, np.int64]}."""

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {
            "image": np.full((2, 3), i, np.float32),
            "meta": (i, {"box": np.arange(4, dtype=np.int64) + i, "name": f"sample-{i}"}),
            "pair": [i * 0.25, np.int64(-i)],
        }


class ListOfDicts:
    """[{"x": array, "y": int}, {"x": array, "y": int}]: two views of one sample."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return [
            {"x": np.full(3, i, np.int32), "y": i},
            {"x": np.full(3, -i, np.int32), "y": 10 + i},
        ]


class TupleWithInnerTuple:
    """(array, (int, float)): what "An inner tuple of numbers" used to flatten."""

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return np.arange(2, dtype=np.float32) + i, (i, i + 0.5)


def assert_same_tree(ours, theirs, path="batch"):
    """Same containers (list, dict, tensor, list of objects) and values; float
    tensors compared by value (feedline stores float64 as float32)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, torch.Tensor), f"{path}: {type(ours).__name__}, not a tensor"
        assert tuple(ours.shape) == tuple(theirs.shape), path
        if theirs.dtype.is_floating_point:
            assert ours.dtype.is_floating_point, path
            torch.testing.assert_close(ours.double(), theirs.double(), msg=path)
        else:
            assert ours.dtype == theirs.dtype, f"{path}: {ours.dtype} vs {theirs.dtype}"
            assert torch.equal(ours, theirs), path
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{path}: {type(ours).__name__}, not a dict"
        assert list(ours) == list(theirs), path
        for key in theirs:
            assert_same_tree(ours[key], theirs[key], f"{path}[{key!r}]")
    elif isinstance(theirs, list) and theirs and not isinstance(theirs[0], str):
        assert isinstance(ours, list) and len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_tree(a, b, f"{path}[{i}]")
    else:
        assert ours == theirs, path


def torch_batches(dataset, batch_size):
    return [default_collate([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
            for start in range(0, len(dataset), batch_size)]


@pytest.mark.parametrize("dataset", [DictOfTuples(), ListOfDicts(), TupleWithInnerTuple()],
                         ids=lambda d: type(d).__name__)
@pytest.mark.parametrize("mode", MODES)
def test_torch_loader_matches_default_collate(dataset, mode):
    loader = feedline.torch.DataLoader(dataset, batch_size=3, **mode)
    ours = list(loader)
    expected = torch_batches(dataset, 3)
    assert len(ours) == len(expected)
    for b, (mine, theirs) in enumerate(zip(ours, expected)):
        assert_same_tree(mine, theirs, f"batch {b}")
    loader.close()


def test_feedline_loader_gives_the_tree_as_tuples_and_arrays():
    loader = feedline.DataLoader(DictOfTuples(), batch_size=4, num_workers=0)
    batch = next(iter(loader))
    assert list(batch) == ["image", "meta", "pair"]
    count, inner = batch["meta"]
    assert isinstance(batch["meta"], tuple) and isinstance(inner, dict)
    np.testing.assert_array_equal(count, [0, 1, 2, 3])
    np.testing.assert_array_equal(inner["box"], np.arange(4) + np.arange(4)[:, None])
    assert inner["name"] == ["sample-0", "sample-1", "sample-2", "sample-3"]
    np.testing.assert_allclose(batch["pair"][0], [0, 0.25, 0.5, 0.75])
    np.testing.assert_array_equal(batch["pair"][1], [0, -1, -2, -3])
    # The arrays still view the batch slot: one owner for all of them.
    assert inner["box"].base is batch["image"].base
    loader.close()


def test_nested_arrays_of_varying_length_are_padded_with_lengths_beside_them():
    class Ragged:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"meta": {"tokens": np.arange(i + 1), "id": i}}

    (batch,) = list(feedline.DataLoader(Ragged(), batch_size=3))
    meta = batch["meta"]
    np.testing.assert_array_equal(meta["tokens"], [[0, 0, 0], [0, 1, 0], [0, 1, 2]])
    np.testing.assert_array_equal(meta["tokens_lengths"], [1, 2, 3])
    np.testing.assert_array_equal(meta["id"], [0, 1, 2])


@pytest.mark.parametrize("mode", MODES)
def test_a_nested_element_missing_from_a_sample_is_refused_naming_it(mode):
    class Uneven:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return {"meta": (1, 2, 3) if i < 2 else (1, 2)}

    loader = feedline.DataLoader(Uneven(), batch_size=4, **mode)
    with pytest.raises(feedline.SampleError, match=r"lacks 'meta\[2\]'"):
        list(loader)
    loader.close()


def test_collate_fn_receives_nested_samples_as_the_dataset_returned_them():
    seen = []

    def collate(samples):
        seen.extend(samples)
        return default_collate(samples)

    loader = feedline.torch.DataLoader(DictOfTuples(), batch_size=2, collate_fn=collate)
    batch = next(iter(loader))
    sample = seen[0]
    assert isinstance(sample["meta"], tuple) and isinstance(sample["meta"][1], dict)
    assert sample["meta"][1]["name"] == "sample-0"
    np.testing.assert_array_equal(sample["meta"][1]["box"], [0, 1, 2, 3])
    assert_same_tree(batch, default_collate([DictOfTuples()[0], DictOfTuples()[1]]))
    loader.close()


def test_a_dict_key_with_control_characters_is_an_ordinary_key():
    # The sample's nesting is its schema, not a code in its fields' names:
    # no character of a key is reserved.
    class Odd:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return {"a": {"b\x1ec": i, "d\x1fobject": "x"}}

    batch = next(iter(feedline.DataLoader(Odd(), batch_size=2)))
    np.testing.assert_array_equal(batch["a"]["b\x1ec"], [0, 1])
    assert batch["a"]["d\x1fobject"] == ["x", "x"]


def test_a_dict_key_that_reads_as_another_leafs_path_is_refused_naming_it():
    class Clash:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return {"a": [np.zeros(2), np.ones(2)], "a[0]": np.ones(2)}

    with pytest.raises(feedline.SampleError, match=r"two values at 'a\[0\]'"):
        list(feedline.DataLoader(Clash(), batch_size=2))


def test_a_container_that_becomes_an_object_is_refused_naming_it():
    class Switch:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.zeros(2), ({"id": i} if i != 2 else None)

    with pytest.raises(feedline.SampleError,
                       match="'1' of the sample is not a tuple, list or dict, but in the first"):
        list(feedline.DataLoader(Switch(), batch_size=3))
