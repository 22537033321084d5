"""The one-line swap: feedline.torch.DataLoader and feedline.paddle.DataLoader
against the DataLoader they replace."""

import inspect
import sys
import types
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import feedline.paddle
import feedline.torch


class Pairs(tud.Dataset):
    """Sample i: a float32 [3, 4] tensor filled with i, and the label i % 5."""

    def __len__(self):
        return 22

    def __getitem__(self, i):
        return torch.full((3, 4), float(i)), i % 5


class Records(tud.Dataset):
    def __len__(self):
        return 9

    def __getitem__(self, i):
        return {"x": np.arange(4, dtype=np.float32) + i, "id": np.int64(i)}


def test_every_argument_of_torchs_dataloader_is_accepted():
    ours = inspect.signature(feedline.torch.DataLoader.__init__).parameters
    for name, parameter in inspect.signature(tud.DataLoader.__init__).parameters.items():
        assert name in ours, name
        assert ours[name].kind == parameter.kind, name
    # torch 2's additions too.
    for name in ("in_order", "prefetch_factor", "pin_memory_device"):
        assert name in ours


@pytest.mark.parametrize("workers", [0, 2])
def test_batches_equal_torchs_in_order(workers):
    ours = list(feedline.torch.DataLoader(Pairs(), batch_size=4, num_workers=workers))
    theirs = list(tud.DataLoader(Pairs(), batch_size=4))
    assert len(ours) == len(theirs) == 6
    for a, b in zip(ours, theirs):
        assert type(a) is type(b) is list
        for x, y in zip(a, b):
            assert isinstance(x, torch.Tensor)
            assert x.dtype == y.dtype and x.shape == y.shape
            assert torch.equal(x, y)


def test_dict_samples_give_dicts_of_tensors_like_torch():
    ours = next(iter(feedline.torch.DataLoader(Records(), batch_size=3)))
    theirs = next(iter(tud.DataLoader(Records(), batch_size=3)))
    assert set(ours) == set(theirs) == {"x", "id"}
    for key in ours:
        assert torch.equal(ours[key], theirs[key])


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_workers=-1),
        dict(timeout=-1),
        dict(num_workers=0, prefetch_factor=4),
        dict(persistent_workers=True),
        dict(sampler=tud.SequentialSampler(range(22)), shuffle=True),
        dict(batch_sampler=[[0, 1]], batch_size=2),
        dict(batch_sampler=[[0, 1]], drop_last=True),
    ],
)
def test_invalid_arguments_fail_with_torchs_messages(kwargs):
    with pytest.raises(ValueError) as theirs:
        tud.DataLoader(Pairs(), **kwargs)
    with pytest.raises(ValueError) as ours:
        feedline.torch.DataLoader(Pairs(), **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_prefetch_factor_none_is_torch_2s_default():
    loader = feedline.torch.DataLoader(Pairs(), batch_size=4, num_workers=2, prefetch_factor=None)
    assert sum(len(labels) for _, labels in loader) == 22


def test_manual_seed_and_generator_decide_the_shuffle():
    def order(**kwargs):
        loader = feedline.torch.DataLoader(Pairs(), batch_size=22, shuffle=True, **kwargs)
        return next(iter(loader))[0][:, 0, 0].tolist()

    torch.manual_seed(3)
    first = order()
    torch.manual_seed(3)
    assert order() == first
    assert order(generator=torch.Generator().manual_seed(3)) == order(
        generator=torch.Generator().manual_seed(3))
    assert order(generator=torch.Generator().manual_seed(4)) != order(
        generator=torch.Generator().manual_seed(3))
    assert sorted(first) == list(map(float, range(22)))


def test_batch_size_none_yields_single_samples():
    samples = list(feedline.torch.DataLoader(Pairs(), batch_size=None))
    assert len(samples) == 22
    assert samples[5][0].shape == (3, 4) and samples[5][0][0, 0].item() == 5.0


def test_pin_memory_without_cuda_warns_once_and_still_loads():
    feedline.frontends.torch.loader._pin_warning_given = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = feedline.torch.DataLoader(Pairs(), batch_size=8, pin_memory=True)
        feedline.torch.DataLoader(Pairs(), batch_size=8, pin_memory=True)
    if torch.cuda.is_available():
        pytest.skip("CUDA is present: batches are pinned instead")
    messages = [str(w.message) for w in caught if "pin_memory" in str(w.message)]
    assert messages == [
        "feedline.torch.DataLoader: pin_memory=True, but CUDA is not available: batches are "
        "not pinned"
    ]
    assert sum(len(labels) for _, labels in loader) == 22


def test_a_torchvision_style_training_loop_runs_with_the_one_line_swap(tmp_path):
    """The structure of torchvision's reference classification script: an
    ImageFolder with torchvision transforms, a sampler, the loader, SGD; only
    the DataLoader class is feedline's. The loss falls."""
    import torchvision
    from torchvision import transforms as tvt

    from feedline.torch import DataLoader  # the one changed line
    from feedline.vision import synth

    synth.write_image_folder(str(tmp_path), images=64, classes=2, seed=3)
    transform = tvt.Compose([tvt.RandomResizedCrop(32, scale=(0.5, 1.0)),
                             tvt.RandomHorizontalFlip(), tvt.PILToTensor(),
                             tvt.ConvertImageDtype(torch.float),
                             tvt.Normalize([0.5] * 3, [0.25] * 3)])
    dataset = torchvision.datasets.ImageFolder(str(tmp_path), transform=transform)
    sampler = tud.RandomSampler(dataset)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler, num_workers=2,
                        pin_memory=True, persistent_workers=True, prefetch_factor=None)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = torch.nn.CrossEntropyLoss()
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory without CUDA
        for epoch in range(6):
            for image, target in loader:
                image, target = image.to("cpu"), target.to("cpu")
                loss = criterion(model(image), target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
    assert len(losses) == 6 * 4
    assert np.mean(losses[-4:]) < np.mean(losses[:4])


# ---------------------------------------------------------------------------
# Paddle. paddle is not installable here: the argument handling is tested
# as it is, and the DLPack hand-off through a stand-in paddle.utils.dlpack
# whose from_dlpack is torch's (both take a DLPack capsule).


@pytest.fixture
def fake_paddle(monkeypatch):
    paddle = types.ModuleType("paddle")
    utils = types.ModuleType("paddle.utils")
    dlpack = types.ModuleType("paddle.utils.dlpack")
    dlpack.from_dlpack = torch.utils.dlpack.from_dlpack
    paddle.to_tensor = torch.as_tensor
    paddle.utils, utils.dlpack = utils, dlpack
    for name, module in (("paddle", paddle), ("paddle.utils", utils),
                         ("paddle.utils.dlpack", dlpack)):
        monkeypatch.setitem(sys.modules, name, module)


def test_paddle_arguments_are_accepted():
    loader = feedline.paddle.DataLoader(Pairs(), places=["cpu"], return_list=True,
                                        use_buffer_reader=False, use_shared_memory=True,
                                        batch_size=5, drop_last=True, num_workers=2)
    assert len(loader) == 4
    # Without paddle there is no static graph: feed_list is kept, unused,
    # and return_list=False gives the same lists, as in dynamic mode.
    loader = feedline.paddle.DataLoader(Pairs(), feed_list=["x"], return_list=False,
                                        batch_size=5)
    assert loader.feed_list == ["x"] and len(list(loader)) == len(loader) == 5


def test_paddle_indexes_a_batch_sampler_given_as_the_dataset():
    # paddle.io's rule (not an IterableDataset: indexed); reading it fails
    # with an error naming the sample, as the sampler cannot be indexed.
    batch_sampler = feedline.io.BatchSampler(list(range(10)), batch_size=3)
    loader = feedline.paddle.DataLoader(batch_sampler)
    assert len(loader) == 4
    with pytest.raises(feedline.SampleError, match="not subscriptable"):
        next(iter(loader))


def test_paddle_refuses_batch_size_next_to_a_batch_sampler_as_paddle_does():
    # paddle.io 2.x and 3.x assert it (python/tests/paddle_contract checks
    # the same against real Paddle).
    from feedline import io

    sampler = io.BatchSampler(Pairs(), batch_size=11)
    with pytest.raises(AssertionError, match="should not be set when batch_sampler is given"):
        feedline.paddle.DataLoader(Pairs(), batch_sampler=sampler, batch_size=3)
    loader = feedline.paddle.DataLoader(Pairs(), batch_sampler=sampler)
    assert [len(b[1]) for b in loader] == [11, 11]


def test_without_paddle_batches_are_numpy_lists():
    if "paddle" in sys.modules:
        pytest.skip("paddle is importable")
    batch = next(iter(feedline.paddle.DataLoader(Pairs(), batch_size=4)))
    assert type(batch) is list and all(isinstance(a, np.ndarray) for a in batch)


def test_paddle_tensors_come_through_dlpack_sharing_memory(fake_paddle):
    loader = feedline.paddle.DataLoader(Pairs(), batch_size=4)
    images, labels = next(iter(loader))
    assert isinstance(images, torch.Tensor) and isinstance(labels, torch.Tensor)
    assert images.shape == (4, 3, 4) and images[3, 0, 0].item() == 3.0
    assert labels.tolist() == [0, 1, 2, 3]


def test_paddle_bool_fields_stay_bool(fake_paddle):
    # numpy before 1.25 exports no bool through DLPack; the mask still comes
    # through, as a bool tensor.
    values, mask, _, flags = next(iter(feedline.paddle.DataLoader(Masks(), batch_size=4)))
    assert mask.dtype == flags.dtype == torch.bool
    theirs = next(iter(tud.DataLoader(Masks(), batch_size=4)))
    assert torch.equal(mask, theirs[1]) and torch.equal(flags, theirs[3])
    assert values[~mask].numel() == 7  # 1 + 2 + 3 + 1 of the 4 rows' 6


def test_sampler_and_batch_sampler_are_there_as_in_torch():
    torch.manual_seed(0)
    ours = feedline.torch.DataLoader(Pairs(), batch_size=4, shuffle=True)
    theirs = tud.DataLoader(Pairs(), batch_size=4, shuffle=True)
    assert len(ours.sampler) == len(theirs.sampler) == 22
    assert len(ours.batch_sampler) == len(theirs.batch_sampler) == 6
    order = [int(labels_and_images[0][:, 0, 0].tolist()[0]) for labels_and_images in ours]
    first_batch = next(iter(ours.batch_sampler))
    assert order[0] == first_batch[0]  # the loader's order


class SlowFirst(tud.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == 0:
            import time

            time.sleep(0.5)
        return torch.tensor([i])


@pytest.mark.parametrize("in_order", [True, False])
def test_in_order_false_lets_later_batches_overtake_a_slow_one(in_order):
    loader = feedline.torch.DataLoader(SlowFirst(), batch_size=2, num_workers=2,
                                       in_order=in_order, worker_mode="thread")
    firsts = [int(batch[0]) for batch in loader]
    assert sorted(firsts) == list(range(0, 16, 2))
    assert (firsts[0] == 0) == in_order


# --- dtypes and the tuner's "auto" values through the adapter ---


@pytest.mark.parametrize("kwargs", [
    dict(num_workers="auto"),
    dict(num_workers=2, prefetch_factor="auto"),
    dict(num_workers="auto", prefetch_factor="auto", memory_budget="2G"),
])
def test_torch_adapter_takes_the_tuners_auto_values(kwargs):
    loader = feedline.torch.DataLoader(Pairs(), batch_size=4, worker_mode="thread", **kwargs)
    labels = [label for _, labels in loader for label in labels.tolist()]
    assert labels == [i % 5 for i in range(22)]
    assert "tuner" in loader.stats()
    loader.close()


def test_torch_adapter_refuses_prefetch_auto_without_workers_as_torch_refuses_any():
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        feedline.torch.DataLoader(Pairs(), num_workers=0, prefetch_factor="auto")


@pytest.mark.parametrize("kwargs", [dict(num_workers="Auto"), dict(num_workers=2,
                                                                    prefetch_factor="many")])
def test_torch_adapter_names_a_bad_string_argument(kwargs):
    with pytest.raises(TypeError, match='must be an int or "auto"'):
        feedline.torch.DataLoader(Pairs(), **kwargs)


class Masks(tud.Dataset):
    """A tensor and a bool mask over it, a numpy bool array and a Python bool."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return (torch.arange(6.0) + i, torch.arange(6) > i % 3, np.arange(4) < i % 4,
                i % 2 == 0)


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "thread"), (2, "process")])
def test_bool_fields_arrive_as_torch_bool_in_every_worker_mode(workers, mode):
    ours = list(feedline.torch.DataLoader(Masks(), batch_size=4, num_workers=workers,
                                          worker_mode=mode, timeout=60))
    theirs = list(tud.DataLoader(Masks(), batch_size=4))
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype, (x.dtype, y.dtype)
            assert torch.equal(x, y)
        x, mask = a[0], a[1]
        assert mask.dtype == torch.bool
        assert x[~mask].numel() == b[0][~b[1]].numel() < x.numel()


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_bool_arrays_stay_numpy_bool_in_feedline_io(mode):
    samples = [np.array([True, False, i % 2 == 0]) for i in range(6)]
    loader = feedline.io.DataLoader(samples, batch_size=3, num_workers=1, worker_mode=mode,
                                    timeout=60)
    batches = list(loader)
    assert all(batch.dtype == np.bool_ for batch in batches)
    assert np.array_equal(np.concatenate(batches), np.stack(samples))


def test_padded_bool_fields_stay_bool():
    # Masks of varying length: the default collate pads them with False.
    samples = [np.ones(n, dtype=bool) for n in (1, 3, 2)]
    mask, lengths = next(iter(feedline.io.DataLoader(samples, batch_size=3)))
    assert mask.dtype == np.bool_
    assert mask.tolist() == [[True, False, False], [True, True, True], [True, True, False]]
    assert lengths.tolist() == [1, 3, 2]


class HalfBrain(tud.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"x": torch.ones(3, dtype=torch.bfloat16) * i, "y": i}


@pytest.mark.parametrize("workers", [0, 2])
def test_a_bfloat16_field_arrives_as_a_stacked_bfloat16_tensor_not_a_list(workers):
    # More in test_bfloat16.py (worker processes, exact values, the numpy
    # loader's refusal).
    loader = feedline.torch.DataLoader(HalfBrain(), batch_size=4, num_workers=workers, timeout=60)
    for ours, theirs in zip(loader, tud.DataLoader(HalfBrain(), batch_size=4), strict=True):
        assert ours["x"].dtype == torch.bfloat16
        assert torch.equal(ours["x"], theirs["x"]) and torch.equal(ours["y"], theirs["y"])
