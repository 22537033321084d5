"""Every argument of paddle.io.DataLoader (3.x), in Paddle's order, checked
as Paddle checks it, and the attributes scripts read. Paddle's
test_multiprocess_dataloader_exception.py (TestDataLoaderAssert) checks the
refusals; the rest is paddle.io.DataLoader's documented signature
(docs/paddle.md)."""

import inspect

import numpy as np
import paddle
import pytest
from paddle.io import BatchSampler, Dataset, IterableDataset


class Pairs(Dataset):
    """Sample i: a float32 [4] array filled with i, and the int64 label [i]."""

    def __init__(self, n=20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return np.full([4], index, "float32"), np.array([index], "int64")


class Stream(IterableDataset):
    def __iter__(self):
        for index in range(10):
            yield np.array([index], "int64")


def labels(loader):
    return [batch[1].numpy().ravel().tolist() for batch in loader]


# paddle.io.DataLoader's parameters in 3.x, with their defaults.
PADDLE_PARAMETERS = [
    ("self", inspect.Parameter.empty), ("dataset", inspect.Parameter.empty),
    ("feed_list", None), ("places", None), ("return_list", True), ("batch_sampler", None),
    ("batch_size", 1), ("shuffle", False), ("drop_last", False), ("collate_fn", None),
    ("num_workers", 0), ("use_buffer_reader", True), ("reader_buffer_size", 2),
    ("prefetch_factor", 2), ("use_shared_memory", True), ("timeout", 0),
    ("worker_init_fn", None), ("persistent_workers", False),
]


def test_the_signature_is_paddles(loader_class):
    parameters = list(inspect.signature(loader_class.__init__).parameters.values())
    # Same names, order and defaults, all positional-or-keyword; feedline's
    # own keywords may follow.
    got = [(p.name, p.default) for p in parameters[:len(PADDLE_PARAMETERS)]]
    assert got == PADDLE_PARAMETERS
    assert all(p.kind == p.POSITIONAL_OR_KEYWORD for p in parameters[:len(PADDLE_PARAMETERS)])


@pytest.mark.parametrize("arguments,message", [
    (dict(num_workers=-1), "num_workers should be a non-negative value"),
    (dict(timeout=-1), "timeout should be a non-negative value"),
    (dict(prefetch_factor=0), "prefetch_factor should be a positive value"),
    (dict(batch_size=0), "batch_size should be None or a positive value"),
    (dict(batch_size=2.0), "batch_size should be a positive integer"),
    (dict(shuffle="yes"), "shuffle should be a boolean value"),
    (dict(drop_last=1), "drop_last should be a boolean value"),
], ids=["num_workers", "timeout", "prefetch_factor", "batch_size", "float batch_size",
        "shuffle", "drop_last"])
def test_wrong_values_fail_an_assertion(loader_class, arguments, message):
    with pytest.raises(AssertionError, match=message):
        loader_class(Pairs(), places=paddle.CPUPlace(), **arguments)


@pytest.mark.parametrize("arguments", [
    dict(shuffle=True, drop_last=True), dict(batch_size=4), dict(shuffle=True),
    dict(drop_last=True),
], ids=["shuffle and drop_last", "batch_size", "shuffle", "drop_last"])
def test_a_batch_sampler_excludes_batch_size_shuffle_and_drop_last(loader_class, arguments):
    sampler = BatchSampler(dataset=Pairs(), batch_size=4)
    with pytest.raises(AssertionError, match="should not be set when batch_sampler is given"):
        loader_class(Pairs(), places=paddle.CPUPlace(), batch_sampler=sampler, **arguments)


def test_a_batch_sampler_alone_gives_the_batches(loader_class):
    sampler = BatchSampler(dataset=Pairs(), batch_size=6, drop_last=False)
    loader = loader_class(Pairs(), places=paddle.CPUPlace(), batch_sampler=sampler)
    assert len(loader) == len(sampler) == 4
    assert labels(loader) == [list(range(0, 6)), list(range(6, 12)), list(range(12, 18)),
                              [18, 19]]
    assert loader.batch_sampler is sampler and loader.batch_size is None


def test_an_iterable_dataset_refuses_shuffle_and_batch_sampler(loader_class):
    with pytest.raises(ValueError, match="IterableDataset not support shuffle"):
        loader_class(Stream(), shuffle=True)
    with pytest.raises(ValueError, match="IterableDataset expect unspecified batch_sampler"):
        loader_class(Stream(), batch_sampler=BatchSampler(dataset=Pairs(), batch_size=2))


def test_a_loader_over_a_stream_has_no_length(loader_class):
    loader = loader_class(Stream(), batch_size=4)
    with pytest.raises(ValueError, match="length of IterableDataset not supported"):
        len(loader)
    assert [b.numpy().ravel().tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


@pytest.mark.parametrize("places", [None, "cpu", paddle.CPUPlace(), [paddle.CPUPlace()]],
                         ids=["None", "str", "Place", "list"])
def test_places_are_accepted_and_batches_are_on_the_cpu(loader_class, places):
    loader = loader_class(Pairs(), places=places, batch_size=5)
    assert isinstance(loader.places, list) and len(loader.places) == 1
    assert loader.places[0].is_cpu_place()
    x, y = next(iter(loader))
    assert x.place.is_cpu_place() and y.place.is_cpu_place()


def test_a_place_paddle_does_not_know_is_refused(loader_class):
    with pytest.raises(ValueError, match="Paddle supports CPUPlace"):
        loader_class(Pairs(), places="nonsense")


def test_every_argument_by_keyword(loader_class):
    started = []
    loader = loader_class(
        dataset=Pairs(), feed_list=None, places=paddle.CPUPlace(), return_list=True,
        batch_sampler=None, batch_size=6, shuffle=False, drop_last=True, collate_fn=None,
        num_workers=2, use_buffer_reader=False, reader_buffer_size=4, prefetch_factor=3,
        use_shared_memory=False, timeout=60, worker_init_fn=started.append,
        persistent_workers=True)
    for _ in range(2):
        assert labels(loader) == [list(range(0, 6)), list(range(6, 12)), list(range(12, 18))]
    assert len(loader) == 3


def test_positional_arguments_in_paddles_order(loader_class):
    # dataset, feed_list, places, return_list, batch_sampler, batch_size,
    # shuffle, drop_last
    loader = loader_class(Pairs(), None, paddle.CPUPlace(), True, None, 7, False, True)
    assert labels(loader) == [list(range(0, 7)), list(range(7, 14))]


def test_return_list_false_gives_the_same_lists_in_dynamic_mode(loader_class):
    assert paddle.in_dynamic_mode()
    loader = loader_class(Pairs(), return_list=False, batch_size=10)
    batches = list(loader)
    assert len(batches) == 2 and all(isinstance(b, list) and len(b) == 2 for b in batches)
    assert labels(loader) == [list(range(0, 10)), list(range(10, 20))]


def test_calling_the_loader_iterates_it(loader_class):
    loader = loader_class(Pairs(), batch_size=8)
    iterator = loader()
    assert len(iterator) == 3
    assert [b[1].numpy().ravel().tolist() for b in iterator] == labels(loader)


def test_the_attributes_scripts_read(loader_class):
    dataset = Pairs()

    def collate(samples):
        return [np.stack([s[0] for s in samples]), np.stack([s[1] for s in samples])]

    def init(worker_id):
        pass

    loader = loader_class(dataset, batch_size=6, drop_last=True, collate_fn=collate,
                          worker_init_fn=init, timeout=30, prefetch_factor=4,
                          use_buffer_reader=False, reader_buffer_size=3)
    assert loader.dataset is dataset
    assert loader.batch_size == 6 and loader.drop_last is True
    assert loader.collate_fn is collate and loader.worker_init_fn is init
    assert loader.return_list is True and loader.feed_list is None
    assert loader.num_workers == 0 and loader.timeout == 30 and loader.prefetch_factor == 4
    assert loader.use_buffer_reader is False and loader.reader_buffer_size == 3
    # With no workers there is no shared memory to use.
    assert loader.use_shared_memory is False
    assert loader.auto_collate_batch is True
    assert len(loader.batch_sampler) == len(loader) == 3
    assert [len(b) for b in loader.batch_sampler] == [6, 6, 6]

    unbatched = loader_class(dataset, batch_size=None)
    assert unbatched.batch_size is None and unbatched.auto_collate_batch is False
    assert len(unbatched) == len(dataset)
    assert loader_class(dataset, num_workers=2).use_shared_memory is True


@pytest.fixture
def autotune_off():
    paddle.incubate.autotune.set_config(config={"dataloader": {"enable": False}})
    yield
    paddle.incubate.autotune.set_config(config={"dataloader": {"enable": False}})


def test_num_workers_is_kept_as_given(loader_class, autotune_off):
    # Paddle's dataloader autotuning (paddle.incubate.autotune) off, as by
    # default: the loader runs the workers it was given.
    loader = loader_class(Pairs(), batch_size=1, num_workers=2)
    assert loader.num_workers == 2
    sampler = paddle.io.DistributedBatchSampler(Pairs(), batch_size=4)
    assert loader_class(Pairs(), batch_sampler=sampler, num_workers=2).num_workers == 2
