"""The one-line swap for Paddle: paddle.vision.datasets.DatasetFolder with
paddle.vision.transforms lowered to the native pipeline
(feedline/frontends/lowering.py, docs/python.md "Native transforms"): the same batch
structure and dtypes as paddle.io.DataLoader's, pixels within the
documented tolerance, RandomResizedCrop boxes distributed as paddle's own
draws (two-sample Kolmogorov-Smirnov at the 1% level), and what cannot be
lowered left to Python."""

import math
import os
import random

import numpy as np
import pytest

paddle = pytest.importorskip("paddle")  # the venv's paddle (make test-peers)
from paddle.vision import transforms as T  # noqa: E402
from paddle.vision.datasets import DatasetFolder, ImageFolder  # noqa: E402

from feedline.frontends.paddle import lowering as _lowering  # noqa: E402
from feedline.paddle import DataLoader  # noqa: E402
from feedline.vision import encode_png, synth  # noqa: E402

ALPHA = 0.01
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def ks_2samp(a, b):
    """(D, p): two-sample Kolmogorov-Smirnov statistic and its asymptotic
    p-value (conservative on discrete data)."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    grid = np.concatenate([a, b])
    d = float(np.max(np.abs(np.searchsorted(a, grid, side="right") / len(a)
                            - np.searchsorted(b, grid, side="right") / len(b))))
    en = math.sqrt(len(a) * len(b) / (len(a) + len(b)))
    lam = (en + 0.12 + 0.11 / en) * d
    if lam < 0.2:
        return d, 1.0
    p = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return d, min(1.0, max(0.0, p))


def write_png(root, image, name="a.png", cls="class_a"):
    os.makedirs(os.path.join(root, cls), exist_ok=True)
    with open(os.path.join(root, cls, name), "wb") as f:
        f.write(encode_png(np.ascontiguousarray(image, dtype=np.uint8)))


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("paddle_lowering_photos"))
    assert synth.write_image_folder(root, 12, classes=3, seed=23) == []
    return root


def lowered(dataset):
    data, lowering = _lowering.lower(dataset, True)
    return data, lowering


def batches(loader):
    return [[np.array(x) for x in batch] for batch in loader]


def recipe():
    return T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor(),
                      T.Normalize(MEAN, STD)])


def test_a_dataset_folder_is_lowered_with_paddles_batch_structure(photos):
    data = DatasetFolder(photos, transform=recipe())
    native, lowering = lowered(data)
    assert lowering.native and native is not data
    assert lowering.summary == "feedline.paddle: DatasetFolder + 4 transforms run natively"
    assert lowering.stats()["lowered"] == ["RandomResizedCrop", "RandomHorizontalFlip",
                                          "ToTensor", "Normalize"]
    ours = next(iter(DataLoader(native, batch_size=4)))
    theirs = next(iter(paddle.io.DataLoader(data, batch_size=4)))
    assert isinstance(ours, list) and len(ours) == len(theirs) == 2
    for mine, reference in zip(ours, theirs):
        assert mine.dtype == reference.dtype and list(mine.shape) == list(reference.shape)
    assert ours[0].dtype == paddle.float32 and ours[1].dtype == paddle.int64
    image = np.array(ours[0])
    low = (0 - np.array(MEAN)) / np.array(STD) - 1e-5
    high = (1 - np.array(MEAN)) / np.array(STD) + 1e-5
    assert (image.min(axis=(0, 2, 3)) >= low).all() and (image.max(axis=(0, 2, 3)) <= high).all()


# Measured 2026-12-01 on synth's photo-like JPEGs (3 folders of 24), in
# levels of 0-255, as max / 99th percentile / mean (paddle resizes with PIL,
# as torchvision does, and the numbers are torchvision's):
#   Resize(256) + CenterCrop(224) + ToTensor + Normalize:   48-56 / 5-6 / 0.64-0.66
#   Resize(64) + CenterCrop(56) + Transpose + Normalize(127.5, 127.5), the
#   0-255 units of paddle's examples:                       43-45 / 13-14 / 1.53-1.66
#   CenterCrop(224) + Transpose (no resampling):            0 / 0 / 0
@pytest.mark.parametrize("name,transform,scale,max_level,p99_level,mean_level", [
    ("ToTensor+Normalize", T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                                      T.Normalize(MEAN, STD)]),
     np.array(STD)[:, None, None] * 255, 64, 8, 1.0),
    ("Transpose+Normalize(127.5)", T.Compose([T.Resize(64), T.CenterCrop(56), T.Transpose(),
                                              T.Normalize([127.5] * 3, [127.5] * 3)]),
     127.5, 64, 20, 2.5),
    ("Transpose", T.Compose([T.CenterCrop(224), T.Transpose()]), 1.0, 1, 0, 0.05),
    # Without resampling only float rounding is left: the unit conversion
    # of Normalize(127.5, 127.5) is exact to far less than a level.
    ("CenterCrop+Transpose+Normalize(127.5)", T.Compose([
        T.CenterCrop(224), T.Transpose(), T.Normalize([127.5] * 3, [127.5] * 3)]),
     127.5, 1, 0.01, 0.01),
], ids=["ToTensor+Normalize", "Transpose+Normalize(127.5)", "Transpose",
        "CenterCrop+Transpose+Normalize(127.5)"])
def test_deterministic_ops_are_within_tolerance_of_paddle(photos, name, transform, scale,
                                                          max_level, p99_level, mean_level):
    data = DatasetFolder(photos, transform=transform)
    native, lowering = lowered(data)
    assert lowering.native
    ours = batches(DataLoader(native, batch_size=4))
    theirs = batches(paddle.io.DataLoader(data, batch_size=4))
    for mine, reference in zip(ours, theirs):
        # float32 after ToTensor or Normalize, uint8 after Transpose alone.
        assert mine[0].dtype == reference[0].dtype == (np.uint8 if name == "Transpose"
                                                       else np.float32)
        assert mine[0].shape == reference[0].shape
        np.testing.assert_array_equal(mine[1], reference[1])
    levels = np.abs(np.concatenate([b[0] for b in ours]).astype(np.float64)
                    - np.concatenate([b[0] for b in theirs]))
    levels = levels * scale
    measured = (f"{name}: max {levels.max():.2f}, 99th percentile "
                f"{np.percentile(levels, 99):.2f}, mean {levels.mean():.3f} levels")
    assert levels.max() <= max_level, measured
    assert np.percentile(levels, 99) <= p99_level + 0.01, measured
    assert levels.mean() <= mean_level, measured


def crop_boxes(images):
    """(top, left, height, width, flipped) of each crop of the gradient
    image, read from its pixels (python/tests/frontends/torch/test_native_lowering.py
    explains how)."""
    levels = images * 255.0 / 2
    out_h, out_w = levels.shape[2:]

    def fit(values, n):
        index = np.arange(2, n - 2)
        return np.polyfit(index, values[:, 2:n - 2].T, 1)

    sx, ax = fit(levels[:, 0].mean(axis=1), out_w)
    sy, ay = fit(levels[:, 1].mean(axis=2), out_h)
    flipped = sx < 0
    width = np.abs(sx) * out_w
    left = np.where(flipped, ax + 0.5 * np.abs(sx) + 0.5 - width, ax - 0.5 * sx + 0.5)
    return np.stack([np.rint(ay - 0.5 * sy + 0.5), np.rint(left), np.rint(sy * out_h),
                     np.rint(width), flipped])


def test_random_resized_crop_boxes_are_distributed_as_paddles(tmp_path):
    n = 3000
    x, y = np.meshgrid(np.arange(128), np.arange(96))
    write_png(str(tmp_path), np.stack([2 * x, 2 * y, np.full_like(x, 128)], axis=-1))
    crop = T.RandomResizedCrop((48, 64))
    data = DatasetFolder(str(tmp_path), transform=T.Compose(
        [crop, T.RandomHorizontalFlip(0.3), T.ToTensor()]))
    native, lowering = lowered(paddle.io.Subset(data, [0] * n))
    assert lowering.native
    ours = np.concatenate([crop_boxes(np.array(b[0])) for b in
                           DataLoader(native, batch_size=250, seed=6)], axis=1)
    np.random.seed(0)
    random.seed(0)
    image = np.zeros((96, 128, 3), np.uint8)
    theirs = np.array([crop._dynamic_get_param(image) for _ in range(n)], float).T
    # The flip: Bernoulli(0.3) as paddle's random.random() < prob; 1% bound.
    assert abs(ours[4].sum() - 0.3 * n) < 2.576 * math.sqrt(n * 0.3 * 0.7)
    ours = list(ours[:4]) + [ours[2] * ours[3]]
    theirs = list(theirs) + [theirs[2] * theirs[3]]
    for name, mine, reference in zip(("top", "left", "height", "width", "area"), ours, theirs):
        d, p = ks_2samp(mine, reference)
        assert p > ALPHA, f"RandomResizedCrop {name}: KS D={d:.4f}, p={p:.2g}"
    # Power: paddle's draws with a scale range from 0.2 are told apart.
    wrong = T.RandomResizedCrop((48, 64), scale=(0.2, 1.0))
    shifted = np.array([wrong._dynamic_get_param(image) for _ in range(n)], float).T
    assert ks_2samp(ours[2] * ours[3], shifted[2] * shifted[3])[1] < ALPHA


def test_subset_and_concat_are_lowered(photos):
    data = DatasetFolder(photos, transform=T.Compose([T.CenterCrop(32), T.ToTensor()]))
    concat = paddle.io.ConcatDataset([paddle.io.Subset(data, [11, 0, 5]), data])
    native, lowering = lowered(concat)
    assert lowering.native
    labels = np.concatenate([np.array(b[1]) for b in DataLoader(native, batch_size=5)])
    assert labels.tolist() == [concat[i][1] for i in range(len(concat))]


class OwnItems(DatasetFolder):
    def __getitem__(self, index):
        image, label = super().__getitem__(index)
        return image, label + 1000


@pytest.mark.parametrize("make,reason", [
    (lambda root: OwnItems(root, transform=recipe()), "OwnItems overrides __getitem__"),
    (lambda root: DatasetFolder(root, transform=T.Compose([T.CenterCrop(32), T.Grayscale(3),
                                                           T.ToTensor()])),
     "Grayscale has no native transform"),
    (lambda root: DatasetFolder(root, transform=T.Compose([T.CenterCrop(32), T.ToTensor(),
                                                           T.Normalize(to_rgb=True)])),
     "Normalize(to_rgb=True) swaps the channels of an RGB image"),
    (lambda root: DatasetFolder(root, transform=T.CenterCrop(32)),
     "its transform does not end in an array or tensor (no ToTensor or Transpose)"),
    (lambda root: ImageFolder(root, transform=recipe()),
     "its samples have no label, and the native image datasets always deliver one"),
], ids=["subclass", "unknown transform", "to_rgb", "PIL images", "ImageFolder"])
def test_what_cannot_be_lowered_stays_in_python(photos, make, reason):
    data = make(photos)
    same, lowering = lowered(data)
    assert same is data and not lowering.native
    assert lowering.reason == reason
    assert lowering.summary == f"feedline.paddle: {type(data).__name__} runs in Python: {reason}"


def test_native_transforms_false_stays_in_python(photos):
    data = DatasetFolder(photos, transform=recipe())
    same, lowering = _lowering.lower(data, False)
    assert same is data and not lowering.native
    assert lowering.summary == ("feedline.paddle: DatasetFolder runs in Python: "
                                "native_transforms=False")
    assert _lowering.lower(paddle.io.TensorDataset([paddle.zeros([2, 3])]), True)[1] \
        is None
