"""The loader in Paddle's static graph: `feed_list` (paddle.static.data
variables), `places` and `return_list`, and an Executor fed each batch as it
comes (`exe.run(program, feed=batch)`). Paddle's
test_multiprocess_dataloader_static.py and
test_multiprocess_dataloader_iterable_dataset_static.py train this way
(TestStaticDataLoader, TestStaticDataLoaderReturnList,
TestStaticDataLoaderWithBatchedDataset), on CPU places here (docs/paddle.md).

The form paddle.io gives (3.3.1): with return_list=False a list with one
dict per place, {feed variable's name: DenseTensor}; with return_list=True
the batch's own structure of DenseTensors, per place (one place: the batch
itself); each step takes one batch per place."""

import numpy as np
import paddle
import pytest
from paddle import base
from paddle.framework import in_pir_mode
from paddle.io import Dataset, IterableDataset

from conftest import LOADERS

FEATURES = 32
CLASSES = 10
SAMPLES = 96
BATCH = 8
EPOCHS = 3


def sample(index):
    rng = np.random.default_rng(index)
    return (rng.random([FEATURES]).astype("float32"),
            rng.integers(0, CLASSES - 1, (1,)).astype("int64"))


def whole_batch(index):
    pairs = [sample(index * BATCH + k) for k in range(BATCH)]
    return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


class RandomPairs(Dataset):
    def __init__(self, n=SAMPLES):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return sample(index)


class RandomBatches(Dataset):
    """Each item is one batch of BATCH samples."""

    def __len__(self):
        return SAMPLES // BATCH

    def __getitem__(self, index):
        return whole_batch(index)


class RandomStream(IterableDataset):
    def __iter__(self):
        for index in range(SAMPLES):
            yield sample(index)


class RandomBatchStream(IterableDataset):
    def __iter__(self):
        for index in range(SAMPLES // BATCH):
            yield whole_batch(index)


class Labelled(Dataset):
    """Sample i: [i] * 4 as float32 and the label [i], so a batch says
    which samples it holds."""

    def __init__(self, n=20, extra=()):
        self.n = n
        self.extra = extra

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return (np.full([4], index, "float32"), np.array([index], "int64"),
                *[f(index) for f in self.extra])


@pytest.fixture
def static_graph(dynamic_graph):
    """Paddle's static graph, as the static test files run (paddle.enable_static()),
    with a program and a scope of its own; conftest's dynamic_graph restores
    dynamic mode for the next test."""
    paddle.enable_static()
    with base.program_guard(base.Program(), base.Program()), base.scope_guard(base.Scope()):
        yield
    paddle.disable_static()


def feeds(width=FEATURES, image="image", label="label"):
    """paddle.static.data variables `image` and `label` in the test's program
    (which keeps them alive)."""
    return (paddle.static.data(name=image, shape=[None, width], dtype="float32"),
            paddle.static.data(name=label, shape=[None, 1], dtype="int64"))


def fc_program():
    """A small classifier as a static program (Paddle's simple_fc_net_static),
    constant-initialized so that every run starts from the same point."""
    startup, main = base.Program(), base.Program()
    paddle.seed(1)
    with base.unique_name.guard(), base.program_guard(main, startup):
        image = paddle.static.data(name="image", shape=[None, FEATURES], dtype="float32")
        label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")
        weight = base.ParamAttr(initializer=paddle.nn.initializer.Constant(value=0.8))
        bias = base.ParamAttr(initializer=paddle.nn.initializer.Constant(value=0.5))
        hidden = image
        for size in (10, 20, 30):
            hidden = paddle.static.nn.fc(hidden, size=size, activation="tanh",
                                         weight_attr=weight, bias_attr=bias)
        predict = paddle.static.nn.fc(hidden, size=CLASSES, activation="softmax",
                                      weight_attr=weight, bias_attr=bias)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(
            input=predict, label=label, reduction="none", use_softmax=False))
        paddle.optimizer.Adam().minimize(loss)
    return startup, main, image, label, loss


def train(loader_class, dataset, num_workers, persistent_workers=False, batch_size=BATCH,
          compiled=False, epochs=EPOCHS):
    """Trains fc_program on the loader's batches; the losses and the steps
    per epoch. Checks each step's form as Paddle's static tests do."""
    startup, main, image, label, loss = fc_program()
    places = [base.CPUPlace()]
    loader = loader_class(dataset, feed_list=[image, label], places=places,
                          num_workers=num_workers, batch_size=batch_size, return_list=False,
                          drop_last=True, persistent_workers=persistent_workers)
    exe = base.Executor(place=places[0])
    exe.run(startup)
    # The iterable test file runs a CompiledProgram, which only the legacy
    # IR has (test_static_graph_legacy_ir.py).
    program = base.CompiledProgram(main) if compiled and not in_pir_mode() else main
    losses, steps = [], []
    for _ in range(epochs):
        step = 0
        for feed in loader:
            assert isinstance(feed, list) and len(feed) == len(places)
            for place, item in zip(places, feed):
                assert set(item) == {"image", "label"}
                assert item["image"].shape() == [BATCH, FEATURES]
                assert item["label"].shape() == [BATCH, 1]
                assert item["image"]._place()._equals(place)
                assert item["label"]._place()._equals(place)
            (value,) = exe.run(program=program, feed=feed, fetch_list=[loss],
                               use_program_cache=True)
            losses.append(float(np.mean(value)))
            step += 1
        steps.append(step)
    return loader, np.array(losses), steps


@pytest.mark.parametrize("persistent_workers", [False, True], ids=["fresh", "persistent"])
def test_a_static_program_trains_on_the_batches(loader_class, static_graph,
                                                persistent_workers):
    results = []
    for num_workers in (0, 2):
        loader, losses, steps = train(loader_class, RandomPairs(), num_workers,
                                      persistent_workers)
        assert len(loader) == SAMPLES // BATCH
        assert steps == [SAMPLES // BATCH] * EPOCHS
        results.append(losses)
    assert np.max(np.abs(results[0] - results[1]) / np.abs(results[0])) < 1e-2
    per_epoch = results[0].reshape(EPOCHS, -1).mean(axis=1)
    assert per_epoch[-1] < per_epoch[0]


def test_the_losses_are_paddle_ios(static_graph):
    """Same batches in the same order: feedline's program loses exactly what
    paddle.io's does, step by step."""
    losses = {name: train(cls, RandomPairs(), 2)[1] for name, cls in LOADERS.items()}
    np.testing.assert_array_equal(losses["feedline"], losses["paddle.io"])


def test_a_dataset_of_whole_batches(loader_class, static_graph):
    results = []
    for num_workers in (0, 2):
        loader, losses, steps = train(loader_class, RandomBatches(), num_workers,
                                      batch_size=None)
        assert len(loader) == SAMPLES // BATCH
        assert steps == [SAMPLES // BATCH] * EPOCHS
        results.append(losses)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-2)


@pytest.mark.parametrize("dataset,batch_size", [(RandomStream, BATCH),
                                                (RandomBatchStream, None)],
                         ids=["samples", "whole batches"])
def test_a_stream_trains_with_each_worker_iterating_its_copy(loader_class, static_graph,
                                                             dataset, batch_size):
    steps = {}
    for num_workers in (0, 2):
        _, losses, steps[num_workers] = train(loader_class, dataset(), num_workers,
                                              batch_size=batch_size, compiled=True, epochs=2)
        assert len(losses) == sum(steps[num_workers])
    assert steps[0] == [SAMPLES // BATCH] * 2
    assert steps[2] == [2 * SAMPLES // BATCH] * 2


@pytest.mark.parametrize("num_workers", [0, 2])
def test_feeds_are_keyed_by_the_variables_names(loader_class, static_graph, num_workers):
    image, label = feeds(width=4)
    loader = loader_class(Labelled(), feed_list=[image, label], places=[base.CPUPlace()],
                          batch_size=4, return_list=False, num_workers=num_workers)
    batches = list(loader)
    assert len(batches) == 5
    for step, feed in enumerate(batches):
        (item,) = feed
        assert isinstance(item, dict) and set(item) == {"image", "label"}
        assert all(isinstance(t, base.core.DenseTensor) for t in item.values())
        expected = np.arange(step * 4, step * 4 + 4)
        np.testing.assert_array_equal(np.array(item["label"]), expected[:, None])
        np.testing.assert_array_equal(np.array(item["image"]),
                                      np.repeat(expected[:, None], 4, axis=1).astype("float32"))
        assert np.array(item["image"]).dtype == np.float32
        assert np.array(item["label"]).dtype == np.int64


def test_fields_match_the_feeds_by_position_not_by_key(loader_class, static_graph):
    image, label = feeds(width=4)

    class Swapped(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, index):
            return {"label": np.array([index], "int64"),
                    "image": np.full([4], index, "float32")}

    (item,) = next(iter(loader_class(Swapped(), feed_list=[image, label], batch_size=4,
                                     return_list=False)))
    # The first field (the dict's "label") feeds the first variable.
    assert item["image"].shape() == [4, 1]
    assert item["label"].shape() == [4, 4]


def test_numbers_and_strings_are_not_fields(loader_class, static_graph):
    image, label = feeds(width=4)
    dataset = Labelled(extra=[lambda i: f"sample {i}"])
    (item,) = next(iter(loader_class(dataset, feed_list=[image, label], batch_size=4,
                                     return_list=False)))
    assert set(item) == {"image", "label"}
    np.testing.assert_array_equal(np.array(item["label"]).ravel(), [0, 1, 2, 3])


@pytest.mark.parametrize("num_workers", [0, 2])
def test_each_step_has_a_batch_per_place(loader_class, static_graph, num_workers):
    image, label = feeds(width=4)
    places = [base.CPUPlace()] * 2
    loader = loader_class(Labelled(), feed_list=[image, label], places=places, batch_size=4,
                          return_list=False, num_workers=num_workers)
    assert len(loader) == 5
    steps = list(loader)
    # 5 batches over 2 places: 2 steps of consecutive batches; the fifth,
    # alone, is dropped.
    assert len(steps) == 2
    labels = [[np.array(item["label"]).ravel().tolist() for item in step] for step in steps]
    assert labels == [[[0, 1, 2, 3], [4, 5, 6, 7]], [[8, 9, 10, 11], [12, 13, 14, 15]]]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_return_list_gives_the_batch_per_place(loader_class, static_graph, num_workers):
    """Paddle's TestStaticDataLoaderReturnList: one place, the batch's list of
    tensors; two places, a list of such lists."""
    image, label = feeds()
    one = loader_class(RandomPairs(), feed_list=[image, label], num_workers=num_workers,
                       batch_size=BATCH, drop_last=True, return_list=True)
    for batch in one:
        assert isinstance(batch, list) and len(batch) == 2
        assert all(isinstance(t, base.core.DenseTensor) for t in batch)
        assert batch[0].shape() == [BATCH, FEATURES] and batch[1].shape() == [BATCH, 1]
    two = loader_class(RandomPairs(), feed_list=[image, label], num_workers=num_workers,
                       batch_size=BATCH, places=[base.CPUPlace()] * 2, drop_last=True,
                       return_list=True)
    steps = list(two)
    assert len(steps) == SAMPLES // BATCH // 2
    for step in steps:
        assert isinstance(step, list) and len(step) == 2
        for batch in step:
            assert isinstance(batch, list) and len(batch) == 2
            assert batch[0].shape() == [BATCH, FEATURES] and batch[1].shape() == [BATCH, 1]


def test_return_list_keeps_the_batchs_structure(loader_class, static_graph):
    class Named(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, index):
            return {"x": np.full([2], index, "float32"), "name": f"n{index}"}

    batch = next(iter(loader_class(Named(), batch_size=4, return_list=True)))
    assert set(batch) == {"x", "name"}
    assert isinstance(batch["x"], base.core.DenseTensor) and batch["x"].shape() == [4, 2]
    assert batch["name"] == ["n0", "n1", "n2", "n3"]
    single = next(iter(loader_class(Labelled(), batch_size=4, return_list=True)))
    assert [t.shape() for t in single] == [[4, 4], [4, 1]]


def test_return_list_false_needs_a_feed_list(loader_class, static_graph):
    with pytest.raises(AssertionError, match="feed_list should be set when return_list=False"):
        loader_class(Labelled(), batch_size=4, return_list=False)


@pytest.mark.parametrize("extra", [[lambda i: np.zeros([2], "float32")], []],
                         ids=["more fields", "fewer fields"])
def test_fields_and_feeds_must_be_as_many(loader_class, static_graph, extra):
    image, label = feeds(width=4)
    feed_list = [image, label] if extra else [image, label, feeds(2, "more", "unused")[0]]
    loader = loader_class(Labelled(extra=extra), feed_list=feed_list, batch_size=4,
                          return_list=False)
    with pytest.raises(ValueError, match="The sample number of reader's input data and the "
                                         "input number of feed list are not equal"):
        next(iter(loader))


def test_the_executor_checks_each_fields_dtype(loader_class, static_graph):
    """The loader feeds what the dataset gives; a float64 field for a
    float32 variable fails in exe.run (the Executor's check)."""
    startup, main, image, label, loss = fc_program()

    class Doubles(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, index):
            features, target = sample(index)
            return features.astype("float64"), target

    loader = loader_class(Doubles(), feed_list=[image, label], batch_size=BATCH,
                          return_list=False)
    exe = base.Executor(base.CPUPlace())
    exe.run(startup)
    feed = next(iter(loader))
    assert np.array(feed[0]["image"]).dtype == np.float64
    # The legacy IR's Executor names the variable; PIR's fails in the first
    # operator that reads it, with an error of its own words (only its type
    # is checked there).
    message = None if in_pir_mode() else "The data type of fed Variable 'image' must be 'float32'"
    with pytest.raises(ValueError, match=message):
        exe.run(main, feed=feed, fetch_list=[loss])


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    from feedline.vision import synth
    root = str(tmp_path_factory.mktemp("static_graph_photos"))
    assert synth.write_image_folder(root, 8, classes=2, seed=5) == []
    return root


def test_a_paddle_vision_folder_loads_natively_into_the_feeds(loader_class, static_graph,
                                                               photos):
    """The engine underneath is the same: a DatasetFolder whose transforms
    feedline has natively runs without Python (stats() says so) and feeds
    the program the pixels paddle.io feeds it."""
    from paddle.vision import transforms as T
    from paddle.vision.datasets import DatasetFolder
    dataset = DatasetFolder(photos, transform=T.Compose([T.CenterCrop(224), T.Transpose()]))
    image = paddle.static.data(name="image", shape=[None, 3, 224, 224], dtype="uint8")
    label = paddle.static.data(name="label", shape=[None], dtype="int64")
    loader = loader_class(dataset, feed_list=[image, label], batch_size=4, return_list=False,
                          num_workers=2)
    feeds_ = list(loader)
    if loader_class is LOADERS["feedline"]:
        assert loader.stats()["native_transforms"]["native"]
    reference = list(LOADERS["paddle.io"](dataset, feed_list=[image, label], batch_size=4,
                                          return_list=False))
    assert len(feeds_) == len(reference) == 2
    for (ours,), (theirs,) in zip(feeds_, reference):
        assert set(ours) == {"image", "label"}
        assert ours["image"].shape() == [4, 3, 224, 224]
        np.testing.assert_array_equal(np.array(ours["image"]), np.array(theirs["image"]))
        np.testing.assert_array_equal(np.array(ours["label"]), np.array(theirs["label"]))
