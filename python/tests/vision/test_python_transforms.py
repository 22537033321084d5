"""Python transforms on native image datasets: a torchvision transform (or
any callable) given to feedline.vision.datasets.ImageFolder runs in Python on
the image C++ decoded, in worker processes by default, with torch's random
draws seeded per sample so that batches do not depend on the worker count."""

import pickle

import numpy as np
import pytest
import torch
import torchvision.transforms as tvT
from PIL import Image

import feedline
import feedline.torch
from feedline import io
from feedline.vision import datasets
from feedline.vision import transforms as T

from conftest import image_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return image_folder(tmp_path_factory, "python_transforms", 12, classes=3, seed=21)


RECIPE = tvT.Compose([
    tvT.RandomResizedCrop(24),
    tvT.RandomHorizontalFlip(),
    tvT.TrivialAugmentWide(),
    tvT.PILToTensor(),
    tvT.ConvertImageDtype(torch.float),
    tvT.RandomErasing(p=0.5),
])


def epoch(loader, e):
    loader.set_epoch(e)
    return [(images.clone(), labels.clone()) for images, labels in loader]


def test_a_torchvision_recipe_runs_on_the_native_decode(folder):
    dataset = datasets.ImageFolder(folder, transform=RECIPE)
    image, label = dataset[5]
    assert isinstance(image, torch.Tensor) and image.shape == (3, 24, 24)
    assert label == dataset.targets[5]
    loader = feedline.torch.DataLoader(dataset, batch_size=4, num_workers=2, seed=3)
    assert loader.worker_mode == "process"  # the transform holds the GIL
    images, labels = next(iter(loader))
    assert images.shape == (4, 3, 24, 24) and images.dtype == torch.float32
    assert labels.tolist() == dataset.targets[:4]
    loader.close()


def test_the_transform_gets_a_pil_image_of_the_decoded_pixels(folder):
    seen = []

    def record(image):
        seen.append(image)
        return np.asarray(image).mean()

    dataset = datasets.ImageFolder(folder, transform=record)
    decoded = datasets.ImageFolder(folder)[2][0]  # native, no transform
    value, _ = dataset[2]
    assert isinstance(seen[-1], Image.Image) and seen[-1].mode == "RGB"
    np.testing.assert_array_equal(np.asarray(seen[-1]), decoded)
    assert value == pytest.approx(decoded.mean())


@pytest.mark.parametrize("kind,check", [
    ("numpy", lambda x: isinstance(x, np.ndarray) and x.dtype == np.uint8 and x.shape[2] == 3),
    ("tensor", lambda x: isinstance(x, torch.Tensor) and x.dtype == torch.uint8 and x.shape[0] == 3),
])
def test_transform_input_asks_for_an_array_or_a_tensor(folder, kind, check):
    types = []
    dataset = datasets.ImageFolder(folder, transform=lambda x: types.append(check(x)) or 0,
                                   transform_input=kind)
    dataset[0]
    assert types == [True]


def test_batches_are_the_same_for_any_worker_count_and_change_with_the_epoch(folder):
    dataset = datasets.ImageFolder(folder, transform=RECIPE)
    runs = {}
    for workers in (0, 2):
        loader = feedline.torch.DataLoader(dataset, batch_size=4, num_workers=workers, seed=11,
                                           seed_per_sample=True)
        runs[workers] = (epoch(loader, 0), epoch(loader, 1))
        loader.close()
    for (a_images, a_labels), (b_images, b_labels) in zip(runs[0][0], runs[2][0]):
        assert torch.equal(a_images, b_images) and torch.equal(a_labels, b_labels)
    # torch's generator is seeded per sample, not inherited by every worker:
    # the same image gets other draws in another epoch.
    # (Without shuffling, the same row holds the same sample in both epochs.)
    epoch0 = torch.cat([images for images, _ in runs[2][0]])
    epoch1 = torch.cat([images for images, _ in runs[2][1]])
    assert all(not torch.equal(a, b) for a, b in zip(epoch0, epoch1))


def test_draws_differ_between_samples_in_worker_processes(folder):
    dataset = datasets.ImageFolder(folder, transform=lambda image: torch.rand(2))
    loader = feedline.torch.DataLoader(dataset, batch_size=12, num_workers=2, seed=1)
    (draws, _), = list(loader)
    assert len({tuple(row.tolist()) for row in draws}) == 12
    loader.close()


def test_the_training_process_torch_generator_is_left_alone(folder):
    dataset = datasets.ImageFolder(folder, transform=lambda image: torch.rand(1))
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    dataset[0], dataset[1]
    assert torch.equal(torch.rand(3), expected)


def test_subset_of_a_dataset_with_a_python_transform_keeps_the_transform(folder):
    dataset = datasets.ImageFolder(folder, transform=lambda image: np.float32(image.size[0]))
    subset = io.Subset(dataset, [3, 1])
    loader = feedline.DataLoader(subset, batch_size=2)
    sizes, labels = next(iter(loader))
    assert sizes.tolist() == [float(dataset[3][0]), float(dataset[1][0])]
    assert labels.tolist() == [dataset.targets[3], dataset.targets[1]]
    loader.close()


def test_a_dataset_with_a_torchvision_transform_pickles(folder):
    dataset = datasets.ImageFolder(folder, transform=RECIPE)
    copy = pickle.loads(pickle.dumps(dataset))
    torch.manual_seed(0)
    assert copy[4][0].shape == (3, 24, 24) and copy[4][1] == dataset[4][1]


def test_feedline_and_torchvision_transforms_mixed_are_refused_with_a_way_out(folder):
    with pytest.raises(TypeError, match="from_torchvision"):
        datasets.ImageFolder(folder, transform=T.Compose([T.Resize(8), tvT.TrivialAugmentWide()]))
    with pytest.raises(TypeError, match="callable"):
        datasets.ImageFolder(folder, transform=5)
    with pytest.raises(ValueError, match="transform_input"):
        datasets.ImageFolder(folder, transform=RECIPE, transform_input="cv2")


def test_target_transform_runs_in_python_on_the_label(folder):
    train = T.Compose([T.RandomResizedCrop(16), T.ToTensor()])
    dataset = datasets.ImageFolder(folder, transform=train, target_transform=lambda y: 10 * y + 1)
    runs = []
    for workers in (0, 2):
        loader = feedline.DataLoader(dataset, batch_size=6, num_workers=workers, seed=4)
        assert loader.worker_mode == ("process" if workers else "thread")
        runs.append([(np.array(images), np.array(labels)) for images, labels in loader])
        loader.set_epoch(1)
        runs[-1].append(next((np.array(i), np.array(l)) for i, l in loader))
        loader.close()
    assert np.concatenate([l for _, l in runs[0][:-1]]).tolist() == [
        10 * y + 1 for y in dataset.targets]
    # The native transforms still draw per (seed, epoch, index): the same
    # for any worker count, another crop in another epoch.
    for (a, la), (b, lb) in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
    assert not np.array_equal(runs[0][0][0], runs[0][-1][0])
