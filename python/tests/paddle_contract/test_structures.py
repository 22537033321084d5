"""What a batch is: Paddle's structures (lists for tuple samples, dicts for
dicts, one Tensor for single-field samples, lists of strings) and Paddle's
dtypes, for map-style and iterable datasets, in the training process and in
worker processes. Paddle's test_multiprocess_dataloader_dataset.py and
test_dataloader_dataset.py check these (docs/paddle.md)."""

import collections

import numpy as np
import paddle
import pytest
from paddle.io import (ChainDataset, ComposeDataset, ConcatDataset, Dataset, IterableDataset,
                       Subset, TensorDataset)
from paddle.vision import transforms

FEATURES = 32


def feature_and_label(index):
    # Deterministic per index, as the datasets of Paddle's tests make them.
    rng = np.random.default_rng(index)
    return rng.random(FEATURES).astype("float32"), rng.integers(0, 9, (1,)).astype("int64")


class ArrayPairs(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return feature_and_label(index)


class StreamOfPairs(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for index in range(self.n):
            yield feature_and_label(index)


def test_a_tensor_dataset_gives_its_rows_as_tensors(loader_class):
    # In the training process, as Paddle's own test reads it: in Paddle's
    # forked workers, indexing a Tensor made before the fork crashes the
    # worker (paddle 3.3.1, CPU).
    features = np.random.default_rng(1).random([16, 3, 4]).astype("float32")
    labels = np.arange(16, dtype="int32").reshape(16, 1)
    dataset = TensorDataset([paddle.to_tensor(features), paddle.to_tensor(labels)])
    loader = loader_class(dataset, places=paddle.CPUPlace(), num_workers=0, batch_size=1,
                          drop_last=True)
    count = 0
    for i, batch in enumerate(loader()):
        assert isinstance(batch, list) and len(batch) == 2
        x, y = batch
        assert isinstance(x, paddle.Tensor) and isinstance(y, paddle.Tensor)
        assert x.shape == [1, 3, 4] and y.shape == [1, 1]
        assert x.dtype == paddle.float32 and y.dtype == paddle.int32
        np.testing.assert_array_equal(x.numpy(), features[i:i + 1])
        np.testing.assert_array_equal(y.numpy(), labels[i:i + 1])
        count += 1
    assert count == 16


# Samples holding paddle Tensors come from Paddle's workers through its
# shared memory only when they fit the first batch's blocks (paddle 3.3.1,
# CPU: "Tensor's dimension is out of bound", then the loop waits forever):
# those tests load them without shared memory.


class TensorAndArray(Dataset):
    """A paddle Tensor made in __getitem__ (in the worker, with workers)
    next to a numpy array."""

    def __len__(self):
        return 12

    def __getitem__(self, index):
        feature, label = feature_and_label(index)
        return paddle.to_tensor(feature, place=paddle.CPUPlace()), label


@pytest.mark.parametrize("num_workers", [0, 2])
def test_samples_mixing_tensors_and_arrays(loader_class, num_workers):
    loader = loader_class(TensorAndArray(), places=paddle.CPUPlace(), num_workers=num_workers,
                          batch_size=2, drop_last=True, use_shared_memory=False)
    batches = list(loader())
    assert len(batches) == 6
    for b, (x, y) in enumerate(batches):
        assert x.shape == [2, FEATURES] and x.dtype == paddle.float32
        assert y.shape == [2, 1] and y.dtype == paddle.int64
        expected = np.stack([feature_and_label(2 * b + k)[0] for k in range(2)])
        np.testing.assert_array_equal(x.numpy(), expected)


class Nested(Dataset):
    """A number, a string, a Tensor, a list and a dict in one sample."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        return (
            3.1,
            "abc",
            paddle.to_tensor(np.full([FEATURES], index, "float32"), place=paddle.CPUPlace()),
            [1, np.full([2], index, "float32")],
            {"a": 2.0, "b": np.full([2], index, "float32")},
        )


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_nested_sample_keeps_its_structure(loader_class, num_workers):
    loader = loader_class(Nested(), places=paddle.CPUPlace(), num_workers=num_workers,
                          batch_size=2, drop_last=True, use_shared_memory=False)
    count = 0
    for b, data in enumerate(loader()):
        assert isinstance(data, list) and len(data) == 5
        assert isinstance(data[0], paddle.Tensor) and data[0].shape == [2]
        assert data[0].dtype == paddle.float64  # Python floats: numpy's float64
        assert data[1] == ["abc", "abc"]
        assert isinstance(data[2], paddle.Tensor) and data[2].shape == [2, FEATURES]
        assert isinstance(data[3], list) and len(data[3]) == 2
        assert data[3][0].shape == [2] and data[3][0].dtype == paddle.int64
        assert data[3][1].shape == [2, 2] and data[3][1].dtype == paddle.float32
        assert isinstance(data[4], dict) and sorted(data[4]) == ["a", "b"]
        assert data[4]["a"].shape == [2] and data[4]["a"].dtype == paddle.float64
        assert data[4]["b"].shape == [2, 2]
        assert data[4]["b"].numpy()[:, 0].tolist() == [2 * b, 2 * b + 1]
        count += 1
    assert count == 4


class OneArray(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        return np.full((2, 3), index, "float32")


class StreamOfArrays(IterableDataset):
    def __iter__(self):
        for index in range(16):
            yield np.full((2, 3), index, "float32")


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("make", [OneArray, StreamOfArrays], ids=["map", "iterable"])
def test_a_single_field_sample_gives_one_tensor(loader_class, make, num_workers):
    loader = loader_class(make(), places=paddle.CPUPlace(), num_workers=num_workers,
                          batch_size=2, drop_last=True)
    batches = list(loader())
    # Each worker iterates its own copy of a stream (no split here).
    assert len(batches) == (8 * num_workers if make is StreamOfArrays and num_workers else 8)
    for data in batches:
        assert isinstance(data, paddle.Tensor)
        assert data.shape == [2, 2, 3] and data.dtype == paddle.float32


@pytest.mark.parametrize("num_workers", [0, 1])
@pytest.mark.parametrize("drop_last", [True, False])
@pytest.mark.parametrize("make", [ArrayPairs, StreamOfPairs], ids=["map", "iterable"])
def test_steps_with_and_without_drop_last(loader_class, make, drop_last, num_workers):
    loader = loader_class(make(10), batch_size=3, drop_last=drop_last, num_workers=num_workers)
    sizes = [len(batch[1]) for batch in loader]
    assert sizes == ([3, 3, 3] if drop_last else [3, 3, 3, 1])


def test_subsets_split_a_dataset(loader_class):
    features = np.random.default_rng(2).random([5, 3, 4]).astype("float32")
    labels = np.arange(5, dtype="int32").reshape(5, 1) * 10
    dataset = TensorDataset([paddle.to_tensor(features), paddle.to_tensor(labels)])

    def labels_of(data):
        out = []
        for x, y in loader_class(data, places=paddle.CPUPlace(), batch_size=1, drop_last=True)():
            assert x.shape == [1, 3, 4] and y.shape == [1, 1]
            out.append(int(y.numpy()[0, 0]))
        return out

    everything = labels_of(dataset)
    even = labels_of(Subset(dataset, [0, 2, 4]))
    odd = labels_of(Subset(dataset, [1, 3]))
    assert everything == [0, 10, 20, 30, 40]
    assert even == [0, 20, 40] and odd == [10, 30]


class EveryDtype(Dataset):
    ARRAYS = ["uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool"]

    def __len__(self):
        return 4

    def __getitem__(self, index):
        arrays = [np.full([2], index, dtype) for dtype in self.ARRAYS]
        scalars = [np.int16(index), np.float32(index), np.int64(index)]
        return arrays + scalars + [index, float(index), index % 2 == 0]


def test_dtypes_are_paddles(loader_class):
    batch = next(iter(loader_class(EveryDtype(), batch_size=2)))
    got = [str(t.dtype) for t in batch]
    arrays = [f"paddle.{name}" for name in EveryDtype.ARRAYS]
    # numpy scalars keep their dtype; Python ints, floats and bools become
    # int64, float64 and bool, as np.array of them does.
    assert got == arrays + ["paddle.int16", "paddle.float32", "paddle.int64", "paddle.int64",
                            "paddle.float64", "paddle.bool"]
    assert [t.shape for t in batch] == [[2, 2]] * 9 + [[2]] * 6


class Records(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, index):
        return {"image": np.full([3, 2], index, "float32"), "label": index, "name": f"s{index}"}


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dict_samples_give_dicts_and_strings_lists(loader_class, num_workers):
    batches = list(loader_class(Records(), batch_size=3, num_workers=num_workers))
    assert len(batches) == 2
    for b, batch in enumerate(batches):
        assert type(batch) is dict and list(batch) == ["image", "label", "name"]
        assert batch["image"].shape == [3, 3, 2]
        assert batch["label"].dtype == paddle.int64
        assert batch["label"].numpy().tolist() == [3 * b, 3 * b + 1, 3 * b + 2]
        assert batch["name"] == [f"s{3 * b + k}" for k in range(3)]


Point = collections.namedtuple("Point", ["x", "y"])


class Points(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        return Point(np.full([2], index, "float32"), index)


def test_a_namedtuple_sample_gives_a_list(loader_class):
    # Paddle's default collate treats every sequence alike.
    batch = next(iter(loader_class(Points(), batch_size=4)))
    assert type(batch) is list and len(batch) == 2
    assert batch[1].numpy().tolist() == [0, 1, 2, 3]


class Images(Dataset):
    """Synthetic HWC uint8 images through paddle.vision.transforms, ending
    in ToTensor (a paddle Tensor made in the worker)."""

    def __init__(self):
        self.transform = transforms.Compose([
            transforms.CenterCrop(20),
            transforms.RandomResizedCrop(14),
            transforms.Normalize(mean=[127.5], std=[127.5], data_format="HWC"),
            transforms.ToTensor(),
        ])

    def __len__(self):
        return 12

    def __getitem__(self, index):
        image = np.random.default_rng(index).integers(0, 256, (28, 28, 1)).astype("uint8")
        return self.transform(image), np.array([index % 10], "int64")


@pytest.mark.parametrize("num_workers", [0, 1])
def test_batches_are_on_the_cpu_and_need_no_gradient(loader_class, num_workers):
    loader = loader_class(Images(), batch_size=4, num_workers=num_workers, shuffle=True,
                          use_shared_memory=False)
    for image, label in loader:
        assert image.place.is_cpu_place() and label.place.is_cpu_place()
        assert image.shape == [4, 1, 14, 14] and image.dtype == paddle.float32
        assert label.shape == [4, 1] and label.dtype == paddle.int64
        assert image.stop_gradient and label.stop_gradient


class Offset(Dataset):
    """Sample i: the int64 [1] array [base + i]."""

    def __init__(self, base, n):
        self.base = base
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return np.array([self.base + index], "int64")


class OffsetStream(IterableDataset):
    def __init__(self, base, n):
        self.base = base
        self.n = n

    def __iter__(self):
        for index in range(self.n):
            yield np.array([self.base + index], "int64")


@pytest.mark.parametrize("num_workers", [0, 2])
def test_paddles_dataset_wrappers_load_as_they_index(loader_class, num_workers):
    def rows(dataset, batch_size=4):
        out = []
        for batch in loader_class(dataset, batch_size=batch_size, num_workers=num_workers):
            parts = batch if isinstance(batch, list) else [batch]
            out.extend(np.concatenate([p.numpy() for p in parts], axis=1).tolist())
        return out

    concat = ConcatDataset([Offset(0, 3), Offset(100, 4)])
    assert rows(concat) == [[0], [1], [2], [100], [101], [102], [103]]
    assert rows(Subset(concat, [6, 0, 3])) == [[103], [0], [100]]
    # ComposeDataset: the fields of its datasets' samples side by side.
    assert rows(ComposeDataset([Offset(0, 5), Offset(50, 5)])) == [[i, 50 + i] for i in range(5)]
    if num_workers == 0:  # a stream with workers is one copy per worker
        assert rows(ChainDataset([OffsetStream(0, 3), OffsetStream(10, 2)])) == [
            [0], [1], [2], [10], [11]]
