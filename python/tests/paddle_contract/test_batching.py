"""How samples become batches: batch_size=None (samples already batched, or
one sample per step), a collate_fn (what it is given, what comes back),
samplers and batch samplers from paddle.io. Paddle's
test_multiprocess_dataloader_dynamic.py and _static.py (the batched
dataset, batch_size=None) and paddle.io's collate semantics
(default_collate_fn, default_convert_fn) are the references
(docs/paddle.md)."""

import numpy as np
import paddle
import pytest
from paddle.io import (BatchSampler, Dataset, DistributedBatchSampler, RandomSampler,
                       SequenceSampler)

BATCH = 8
FEATURES = 32


class PreBatched(Dataset):
    """Each item is a whole batch: ([8, 32] float32, [8, 1] int64)."""

    def __len__(self):
        return 5

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        return (rng.random([BATCH, FEATURES]).astype("float32"),
                rng.integers(0, 9, (BATCH, 1)).astype("int64"))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_batch_size_none_takes_each_item_as_a_batch(loader_class, num_workers):
    loader = loader_class(PreBatched(), batch_size=None, drop_last=True, num_workers=num_workers)
    assert len(loader) == 5
    batches = list(loader())
    assert len(batches) == 5
    for index, batch in enumerate(batches):
        assert isinstance(batch, list) and len(batch) == 2
        image, label = batch
        assert image.shape == [BATCH, FEATURES] and image.dtype == paddle.float32
        assert label.shape == [BATCH, 1] and label.dtype == paddle.int64
        np.testing.assert_array_equal(image.numpy(), PreBatched()[index][0])


class Mixed(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        return np.arange(3) + index, index, "name", {"weight": 0.5, "mask": np.ones(2, bool),
                                                     "scale": np.float32(2)}


@pytest.mark.parametrize("num_workers", [0, 1])
def test_batch_size_none_leaves_numbers_and_strings_as_they_are(loader_class, num_workers):
    batches = list(loader_class(Mixed(), batch_size=None, num_workers=num_workers))
    assert len(batches) == 4
    for index, (array, number, name, extra) in enumerate(batches):
        assert isinstance(array, paddle.Tensor) and array.shape == [3]
        assert array.numpy().tolist() == [index, index + 1, index + 2]
        assert type(number) is int and number == index
        assert name == "name"
        assert type(extra) is dict and type(extra["weight"]) is float and extra["weight"] == 0.5
        assert isinstance(extra["mask"], paddle.Tensor) and extra["mask"].dtype == paddle.bool
        assert type(extra["scale"]) is np.float32 and extra["scale"] == 2  # a numpy scalar stays


def stack_with_extras(samples):
    # Returns a tuple mixing an array, a Python number, a string and a
    # nested list: paddle.io hands on all but the array as they are.
    return (np.stack([s[0] for s in samples]), len(samples), "tag", [1.5, "x"])


@pytest.mark.parametrize("num_workers", [0, 1])
def test_what_collate_fn_returns_is_the_batch(loader_class, num_workers):
    loader = loader_class(Mixed(), batch_size=2, collate_fn=stack_with_extras,
                          num_workers=num_workers)
    batches = list(loader)
    assert len(batches) == 2
    for batch in batches:
        assert isinstance(batch, list) and len(batch) == 4
        assert isinstance(batch[0], paddle.Tensor) and batch[0].shape == [2, 3]
        assert batch[1] == 2 and type(batch[1]) is int
        assert batch[2] == "tag"
        assert batch[3] == [1.5, "x"]


def to_dict(samples):
    return {"x": np.stack([s[0] for s in samples]).astype("float32"),
            "n": [s[1] for s in samples]}


def test_a_collate_fn_dict_stays_a_dict(loader_class):
    batch = next(iter(loader_class(Mixed(), batch_size=4, collate_fn=to_dict)))
    assert type(batch) is dict and list(batch) == ["x", "n"]
    assert batch["x"].dtype == paddle.float32 and batch["x"].shape == [4, 3]
    assert batch["n"] == [0, 1, 2, 3]


def describe_samples(samples):
    # The batch says what collate_fn was given (it runs in the worker); it
    # holds an array too, since paddle.io ends the epoch at a batch with none.
    first = samples[0]
    return [np.zeros(1), type(samples).__name__, type(first).__name__, type(first[0]).__name__,
            type(first[1]).__name__, type(first[2]).__name__, type(first[3]).__name__,
            type(first[3]["weight"]).__name__, len(samples)]


@pytest.mark.parametrize("num_workers", [0, 1])
def test_collate_fn_gets_the_samples_as_the_dataset_returned_them(loader_class, num_workers):
    batch = next(iter(loader_class(Mixed(), batch_size=3, collate_fn=describe_samples,
                                   num_workers=num_workers)))
    assert batch[1:] == ["list", "tuple", "ndarray", "int", "str", "dict", "float", 3]


def one_sample(sample):
    # With batch_size=None, collate_fn gets one sample, not a list.
    return [sample[0], type(sample).__name__, sample[1] * 10]


def test_with_batch_size_none_collate_fn_gets_one_sample(loader_class):
    batches = list(loader_class(Mixed(), batch_size=None, collate_fn=one_sample))
    assert [b[1:] for b in batches] == [["tuple", 0], ["tuple", 10], ["tuple", 20],
                                        ["tuple", 30]]
    assert [b[0].numpy().tolist() for b in batches] == [[i, i + 1, i + 2] for i in range(4)]


def stack_with_paddle(samples):
    # paddle operations in collate_fn, as PaddleNLP-style collators use them.
    return paddle.stack([paddle.to_tensor(s[0]) for s in samples]), paddle.to_tensor(
        [s[1] for s in samples])


@pytest.mark.parametrize("num_workers", [0, 1])
def test_a_collate_fn_may_return_paddle_tensors(loader_class, num_workers):
    loader = loader_class(Mixed(), batch_size=2, collate_fn=stack_with_paddle,
                          num_workers=num_workers, use_shared_memory=False)
    batches = list(loader)
    assert len(batches) == 2
    for b, (x, n) in enumerate(batches):
        assert isinstance(x, paddle.Tensor) and x.shape == [2, 3]
        assert n.numpy().tolist() == [2 * b, 2 * b + 1]


class TensorSamples(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, index):
        return paddle.full([3], float(index)), index


def stack_tensors(samples):
    # Only paddle Tensors can be stacked by paddle.stack.
    return paddle.stack([s[0] for s in samples])


def test_collate_fn_gets_the_tensors_a_dataset_returned(loader_class):
    batches = list(loader_class(TensorSamples(), batch_size=3, collate_fn=stack_tensors))
    assert [b.numpy()[:, 0].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5]]


class Indexed(Dataset):
    def __init__(self, n=20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return np.array([index], "int64")


def indices_of(loader):
    return [b.numpy().ravel().tolist() for b in loader]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_without_shuffle_batches_follow_the_dataset(loader_class, num_workers):
    loader = loader_class(Indexed(), batch_size=6, num_workers=num_workers)
    assert indices_of(loader) == [list(range(0, 6)), list(range(6, 12)), list(range(12, 18)),
                                  [18, 19]]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_shuffle_gives_every_sample_once_in_a_new_order_each_epoch(loader_class, num_workers):
    np.random.seed(5)
    loader = loader_class(Indexed(40), batch_size=8, shuffle=True, num_workers=num_workers)
    epochs = [sum(indices_of(loader), []) for _ in range(3)]
    for order in epochs:
        assert sorted(order) == list(range(40))
    assert epochs[0] != list(range(40))
    assert epochs[0] != epochs[1] or epochs[1] != epochs[2]


@pytest.mark.parametrize("sampler", ["SequenceSampler", "RandomSampler", "range"])
def test_a_batch_sampler_over_a_sampler(loader_class, sampler):
    source = {"SequenceSampler": lambda: SequenceSampler(Indexed()),
              "RandomSampler": lambda: RandomSampler(Indexed()),
              "range": lambda: range(20)}[sampler]()
    batch_sampler = BatchSampler(sampler=source, batch_size=5, drop_last=True)
    batches = indices_of(loader_class(Indexed(), batch_sampler=batch_sampler))
    assert len(batches) == 4 and all(len(b) == 5 for b in batches)
    assert sorted(sum(batches, [])) == list(range(20))
    if sampler != "RandomSampler":
        assert sum(batches, []) == list(range(20))


class ListOfLists:
    """A batch sampler that is only a list of index lists with a length."""

    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)


def test_any_iterable_of_index_lists_is_a_batch_sampler(loader_class):
    plan = [[3, 1], [0], [19, 18, 17]]
    loader = loader_class(Indexed(), batch_sampler=ListOfLists(plan))
    assert len(loader) == 3
    assert indices_of(loader) == plan


@pytest.mark.parametrize("num_workers", [0, 2])
def test_distributed_batch_sampler_splits_the_epoch_between_ranks(loader_class, num_workers):
    dataset = Indexed(22)
    samplers = [DistributedBatchSampler(dataset, batch_size=4, num_replicas=2, rank=r,
                                        shuffle=True) for r in range(2)]
    loaders = [loader_class(dataset, batch_sampler=s, num_workers=num_workers) for s in samplers]
    orders = []
    for epoch in range(2):
        for s in samplers:
            s.set_epoch(epoch)
        ranks = [sum(indices_of(loader), []) for loader in loaders]
        assert len(ranks[0]) == len(ranks[1]) == 11
        assert sorted(ranks[0] + ranks[1]) == list(range(22))  # each sample on one rank
        assert [len(loader) for loader in loaders] == [3, 3]
        orders.append(ranks)
    assert orders[0] != orders[1]  # set_epoch reshuffles


@pytest.mark.parametrize("batch_size", [1, 2, None])
def test_a_batch_sampler_given_as_the_dataset_is_indexed(loader_class, batch_size):
    """paddle.io takes any dataset that is not an IterableDataset as indexed,
    a BatchSampler too: the loader's len() counts its batches (iterating it
    fails, as the sampler cannot be indexed)."""
    batch_sampler = BatchSampler(dataset=Indexed(10), batch_size=3)
    loader = loader_class(batch_sampler, batch_size=batch_size)
    steps = len(batch_sampler) if batch_size in (1, None) else 2
    assert len(loader) == steps == (4 if batch_size != 2 else 2)
