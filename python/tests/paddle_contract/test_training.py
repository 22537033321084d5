"""A small network trained in Paddle's dynamic graph: the loader's batches
feed paddle.nn and backward as they come, the losses do not depend on the
number of workers, and every epoch has len(loader) steps. Paddle's
test_multiprocess_dataloader_dynamic.py and
test_multiprocess_dataloader_iterable_dataset_dynamic.py train the same
way (docs/paddle.md)."""

import numpy as np
import paddle
import pytest
from paddle.io import Dataset, IterableDataset

FEATURES = 32
CLASSES = 10
SAMPLES = 48
BATCH = 8
EPOCHS = 2


def sample(index):
    rng = np.random.default_rng(index)
    return (rng.random([FEATURES]).astype("float32"),
            rng.integers(0, CLASSES - 1, (1,)).astype("int64"))


class RandomPairs(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return sample(index)


class RandomBatches(Dataset):
    """Each item is one batch of BATCH samples."""

    def __len__(self):
        return SAMPLES // BATCH

    def __getitem__(self, index):
        pairs = [sample(index * BATCH + k) for k in range(BATCH)]
        return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


class RandomStream(IterableDataset):
    def __iter__(self):
        for index in range(SAMPLES):
            yield sample(index)


def network():
    # Constant initial weights: every run starts from the same point.
    weight = paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(value=0.8))
    bias = paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(value=0.5))
    layers, width = [], FEATURES
    for hidden in (10, 20, 30):
        layers += [paddle.nn.Linear(width, hidden, weight_attr=weight, bias_attr=bias),
                   paddle.nn.Tanh()]
        width = hidden
    layers += [paddle.nn.Linear(width, CLASSES, weight_attr=weight, bias_attr=bias),
               paddle.nn.Softmax()]
    return paddle.nn.Sequential(*layers)


def train(loader):
    """Per-step losses and steps per epoch."""
    paddle.seed(1)
    net = network()
    optimizer = paddle.optimizer.Adam(parameters=net.parameters())
    losses, steps = [], []
    for _ in range(EPOCHS):
        step = 0
        for image, label in loader():
            loss = paddle.nn.functional.cross_entropy(net(image), label, reduction="none",
                                                      use_softmax=False)
            average = paddle.mean(loss)
            average.backward()
            optimizer.minimize(average)
            net.clear_gradients()
            losses.append(float(average.numpy()))
            step += 1
        steps.append(step)
    return np.array(losses), steps


@pytest.mark.parametrize("persistent_workers", [False, True])
def test_losses_do_not_depend_on_the_number_of_workers(loader_class, persistent_workers):
    runs = []
    for num_workers in (0, 2):
        loader = loader_class(RandomPairs(), num_workers=num_workers, batch_size=BATCH,
                              drop_last=True,
                              persistent_workers=persistent_workers and num_workers > 0)
        assert len(loader) == SAMPLES // BATCH
        runs.append(train(loader))
    (single, single_steps), (multi, multi_steps) = runs
    assert single_steps == multi_steps == [SAMPLES // BATCH] * EPOCHS
    assert np.max(np.abs(single - multi) / np.abs(single)) < 1e-2
    assert np.all(np.isfinite(single))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_training_on_a_dataset_of_whole_batches(loader_class, num_workers):
    loader = loader_class(RandomBatches(), num_workers=num_workers, batch_size=None,
                          drop_last=True)
    assert len(loader) == SAMPLES // BATCH
    losses, steps = train(loader)
    assert steps == [SAMPLES // BATCH] * EPOCHS
    reference, _ = train(loader_class(RandomPairs(), batch_size=BATCH, drop_last=True))
    np.testing.assert_allclose(losses, reference, rtol=1e-5)


class RandomBatchStream(IterableDataset):
    """A stream of whole batches."""

    def __iter__(self):
        for index in range(SAMPLES // BATCH):
            yield RandomBatches()[index]


# Not with persistent workers: over a stream, paddle.io's (3.3.1) sometimes
# wait forever for the second epoch's first batch.
@pytest.mark.parametrize("batched", [False, True], ids=["samples", "whole batches"])
def test_training_on_a_stream_with_two_workers_sees_each_copy(loader_class, batched):
    def loader(num_workers):
        if batched:
            return loader_class(RandomBatchStream(), batch_size=None, num_workers=num_workers)
        return loader_class(RandomStream(), batch_size=BATCH, drop_last=True,
                            num_workers=num_workers)

    single, single_steps = train(loader(0))
    double, double_steps = train(loader(2))
    # Unsplit, each of the two workers yields the whole stream.
    assert single_steps == [SAMPLES // BATCH] * EPOCHS
    assert double_steps == [2 * SAMPLES // BATCH] * EPOCHS
    assert len(double) == 2 * len(single) and np.all(np.isfinite(double))
