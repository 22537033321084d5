"""The one-line swap: feedline.torch.DataLoader over torchvision's own
ImageFolder / DatasetFolder runs the transforms natively when it can
(feedline/frontends/lowering.py, docs/python.md "Native transforms").

Checked here: the random draws are distributed as torchvision's (two-sample
Kolmogorov-Smirnov tests at the 1% level, each shown to reject a slightly
wrong distribution), the deterministic ops are within the documented pixel
tolerance of torchvision's, batches have torch's structure and dtypes, and
what cannot be lowered (a subclass with its own __getitem__, a Lambda, the
opt-out) runs in Python, unchanged."""

import logging
import math
import os

import numpy as np
import pytest
import torch
import torch.utils.data as tud

torchvision = pytest.importorskip("torchvision")  # Debian's python3-torchvision
import torchvision.transforms as tvt  # noqa: E402
from torchvision.transforms import InterpolationMode  # noqa: E402
from torchvision.transforms.autoaugment import _apply_op  # noqa: E402

from feedline.torch import DataLoader  # noqa: E402
from feedline.vision import encode_png, synth  # noqa: E402
from feedline.vision import functional as F  # noqa: E402

from conftest import image_folder  # noqa: E402

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


# ---------------------------------------------------------------------------
# Two-sample Kolmogorov-Smirnov test (scipy is not a dependency).


def ks_2samp(a, b):
    """(D, p): the two-sample KS statistic and its asymptotic p-value
    (Kolmogorov's distribution with Stephens' small-sample correction). On
    discrete data the p-value is conservative."""
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


ALPHA = 0.01


def test_the_ks_test_accepts_equal_and_rejects_shifted_samples():
    rng = np.random.default_rng(0)
    assert ks_2samp(rng.random(3000), rng.random(3000))[1] > ALPHA
    assert ks_2samp(rng.random(3000), rng.random(3000) * 1.1)[1] < ALPHA
    # Against the exact value for a known case: D = 0.5, n = m = 100.
    assert abs(ks_2samp(np.arange(100), np.arange(50, 150))[1] - 4.5e-11) < 1e-10


# ---------------------------------------------------------------------------
# Datasets


def write_png(root, image, name="a.png", cls="class_a"):
    os.makedirs(os.path.join(root, cls), exist_ok=True)
    with open(os.path.join(root, cls, name), "wb") as f:
        f.write(encode_png(np.ascontiguousarray(image, dtype=np.uint8)))


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    # Photo-like JPEGs, short side 300-500 (feedline.vision.synth).
    return image_folder(tmp_path_factory, "lowering_photos", 12, classes=3, seed=23)


@pytest.fixture(scope="module")
def gradient(tmp_path_factory):
    # One 128x96 PNG whose red level is twice the column and green twice
    # the row: a crop's box can be read back from the pixels of its resized
    # output, the rounding to levels costing at most a quarter pixel.
    root = str(tmp_path_factory.mktemp("lowering_gradient"))
    x, y = np.meshgrid(np.arange(128), np.arange(96))
    write_png(root, np.stack([2 * x, 2 * y, np.full_like(x, 128)], axis=-1))
    return root


def native_stats(loader):
    return loader.stats()["native_transforms"]


def repeated(dataset, n):
    # Sample 0 n times: each position draws its own random parameters.
    return tud.Subset(dataset, [0] * n)


def images_of(loader):
    return np.concatenate([batch[0].numpy() for batch in loader])


# ---------------------------------------------------------------------------
# (1) Random draws distributed as torchvision's


def crop_boxes(images):
    """(top, left, height, width, flipped) of each crop, read from the
    gradient: output column c shows source column left + (c + 0.5) * s - 0.5
    with s = width / out (mirrored when flipped); a line fitted over the
    columns' means gives s and left to a fraction of a pixel. The outermost
    columns are left out: when the crop is enlarged their sample positions
    lie outside the box and are clamped to its edge.

    The crops are resized to half the image's size or more, so the pipeline
    resamples the box as drawn (a box twice the output or more may be
    decoded at half scale, its edges snapped to even pixels:
    docs/vision.md, "DCT scale")."""
    levels = images * 255.0 / 2  # in source pixels
    out_h, out_w = levels.shape[2:]

    def fit(values, n):
        index = np.arange(2, n - 2)
        slope, intercept = np.polyfit(index, values[:, 2:n - 2].T, 1)
        return slope, intercept

    sx, ax = fit(levels[:, 0].mean(axis=1), out_w)  # red: columns
    sy, ay = fit(levels[:, 1].mean(axis=2), out_h)  # green: rows
    flipped = sx < 0
    width = np.abs(sx) * out_w
    left = np.where(flipped, ax + 0.5 * np.abs(sx) + 0.5 - width, ax - 0.5 * sx + 0.5)
    height = sy * out_h
    top = ay - 0.5 * sy + 0.5
    return np.stack([np.rint(top), np.rint(left), np.rint(height), np.rint(width), flipped])


def boxes_of(loader):
    return np.concatenate([crop_boxes(batch[0].numpy()) for batch in loader], axis=1)


def test_crop_boxes_are_read_back_exactly(gradient):
    # The measurement itself, on fixed boxes from the whole image to a
    # quarter of it, mirrored or not.
    whole = torchvision.datasets.ImageFolder(gradient, transform=tvt.Compose(
        [tvt.RandomResizedCrop((48, 64), scale=(1.0, 1.0), ratio=(4 / 3, 4 / 3)),
         tvt.ToTensor()]))
    assert boxes_of(DataLoader(repeated(whole, 2), batch_size=2)).T.tolist() == \
        [[0, 0, 96, 128, 0]] * 2
    for height, width, flip in ((50, 30, 1.0), (27, 93, 0.0), (96, 41, 1.0), (61, 128, 0.0)):
        center = torchvision.datasets.ImageFolder(gradient, transform=tvt.Compose(
            [tvt.CenterCrop((height, width)), tvt.Resize((48, 64)),
             tvt.RandomHorizontalFlip(flip), tvt.ToTensor()]))
        top, left = round((96 - height) / 2), round((128 - width) / 2)
        assert boxes_of(DataLoader(center, batch_size=1))[:, 0].tolist() == \
            [top, left, height, width, flip]


def test_random_resized_crop_boxes_are_distributed_as_torchvisions(gradient):
    n = 3000
    data = torchvision.datasets.ImageFolder(gradient, transform=tvt.Compose(
        [tvt.RandomResizedCrop((48, 64)), tvt.RandomHorizontalFlip(), tvt.ToTensor()]))
    loader = DataLoader(repeated(data, n), batch_size=250, seed=5)
    assert native_stats(loader)["native"]
    top, left, height, width, flipped = boxes_of(loader)

    torch.manual_seed(0)
    blank = torch.zeros(3, 96, 128)
    crop = tvt.RandomResizedCrop((48, 64))
    theirs = np.array([crop.get_params(blank, crop.scale, crop.ratio) for _ in range(n)], float)
    ours = {"top": top, "left": left, "height": height, "width": width,
            "area": height * width / (96 * 128)}
    reference = {"top": theirs[:, 0], "left": theirs[:, 1], "height": theirs[:, 2],
                 "width": theirs[:, 3], "area": theirs[:, 2] * theirs[:, 3] / (96 * 128)}
    for name in ours:
        d, p = ks_2samp(ours[name], reference[name])
        assert p > ALPHA, f"RandomResizedCrop {name}: KS D={d:.4f}, p={p:.2g}"
    # The flip: Bernoulli(0.5), as torch.rand(1) < 0.5; two-sided 1% bound.
    assert abs(flipped.sum() - n / 2) < 2.576 * math.sqrt(n / 4)

    # The tests see a slightly wrong distribution: torchvision's draws with
    # a scale range starting at 0.2 instead of 0.08.
    wrong = tvt.RandomResizedCrop((48, 64), scale=(0.2, 1.0))
    shifted = np.array([wrong.get_params(blank, wrong.scale, wrong.ratio) for _ in range(n)],
                       float)
    assert ks_2samp(ours["area"], shifted[:, 2] * shifted[:, 3] / (96 * 128))[1] < ALPHA


def augment_space():
    """[(op, op index, magnitudes, signed)] of torchvision's TrivialAugmentWide."""
    space = tvt.TrivialAugmentWide()._augmentation_space(31)
    return [(op, i, magnitudes.reshape(-1).tolist(), signed)
            for i, (op, (magnitudes, signed)) in enumerate(space.items())]


def identify(outputs, table):
    """(op index, signed bin) of each image: the candidates that give that
    image. Several (op, magnitude) pairs can give the same image (every op
    at magnitude 0 is the identity; posterize bins share bit counts): the
    op is then -1 unless all candidates are of one op, and the bin the
    candidates' mean.

    An image no candidate gives exactly is matched to the nearest one within
    one level everywhere: the native magnitudes may be one float32 ulp from
    torch's (docs/vision.md), which moves a few pixels of Color or
    Sharpness by a level. At most 2% of the images may need it."""
    keys = list(table)
    pixels = np.stack([np.frombuffer(k, np.uint8) for k in keys]).astype(np.int16)
    ops, bins, near = [], [], 0
    for image in outputs:
        candidates = table.get(image.tobytes())
        if candidates is None:
            difference = np.abs(pixels - image.reshape(-1).astype(np.int16))
            total = np.where(difference.max(axis=1) <= 1, difference.sum(axis=1), np.inf)
            best = np.flatnonzero(total == total.min())
            assert np.isfinite(total.min()) and len(best) == 1, \
                "an augmented image that no (op, magnitude) gives"
            candidates, near = table[keys[best[0]]], near + 1
        names = {c[0] for c in candidates}
        ops.append(candidates[0][0] if len(names) == 1 else -1)
        signed_bins = [c[1] for c in candidates if c[1] is not None]
        bins.append(np.mean(signed_bins) if len(names) == 1 and signed_bins else np.nan)
    assert near <= 0.02 * len(outputs), f"{near} images matched within a level only"
    return np.array(ops, float), np.array(bins, float)


def candidate_table(apply):
    """image bytes -> [(op index, signed bin or None)] for every draw the
    space has; `apply(op, magnitude)` gives the image."""
    table = {}
    for op, index, magnitudes, signed in augment_space():
        draws = [(0.0, None)] if len(magnitudes) == 1 else [
            (sign * m, sign * (b + 1)) for b, m in enumerate(magnitudes)
            for sign in ((1, -1) if signed else (1,))]
        for magnitude, signed_bin in draws:
            table.setdefault(apply(op, magnitude).tobytes(), []).append((index, signed_bin))
    return table


def test_trivial_augment_ops_and_magnitudes_are_distributed_as_torchvisions(tmp_path):
    n = 3000
    image = synth.synthesize_image(24, 20, seed=3)
    write_png(str(tmp_path), image)
    # CenterCrop of the whole image: a fixed output size, the pixels unchanged.
    data = torchvision.datasets.ImageFolder(str(tmp_path), transform=tvt.Compose(
        [tvt.CenterCrop((20, 24)), tvt.TrivialAugmentWide(), tvt.PILToTensor()]))
    loader = DataLoader(repeated(data, n), batch_size=500, seed=9)
    assert native_stats(loader)["native"]
    ours_images = images_of(loader).transpose(0, 2, 3, 1)  # uint8 CHW -> HWC
    assert ours_images.dtype == np.uint8

    # Each side's images are identified with its own operations (equal to
    # each other bit for bit except Rotate's rare neighbour, docs/vision.md).
    ours_op, ours_bin = identify(
        ours_images, candidate_table(lambda op, m: F.apply_augment_op(image, op, m)))
    chw = torch.from_numpy(image).permute(2, 0, 1).contiguous()
    torch.manual_seed(2)
    augment = tvt.TrivialAugmentWide()
    theirs_images = [augment(chw).permute(1, 2, 0).numpy() for _ in range(n)]
    theirs_op, theirs_bin = identify(theirs_images, candidate_table(
        lambda op, m: _apply_op(chw, op, m, InterpolationMode.NEAREST, None).permute(1, 2, 0)
        .numpy()))

    assert set(np.unique(ours_op)) >= set(range(1, 14)), "every op with a visible effect drawn"
    d, p = ks_2samp(ours_op, theirs_op)
    assert p > ALPHA, f"TrivialAugmentWide op: KS D={d:.4f}, p={p:.2g}"
    mine, reference = ours_bin[~np.isnan(ours_bin)], theirs_bin[~np.isnan(theirs_bin)]
    d, p = ks_2samp(mine, reference)
    assert p > ALPHA, f"TrivialAugmentWide signed magnitude bin: KS D={d:.4f}, p={p:.2g}"

    # Power: one op never drawn, or magnitudes from half the bins, are seen.
    assert ks_2samp(np.where(ours_op == 13, -1, ours_op), theirs_op)[1] < ALPHA
    assert ks_2samp(np.sign(mine) * np.ceil(np.abs(mine) / 2), reference)[1] < ALPHA


def erased_boxes(images):
    """(erased, top, left, height, width): the box of zeros in each image
    (the source has none)."""
    zero = np.all(images == 0, axis=1)
    rows, cols = zero.any(axis=2), zero.any(axis=1)
    erased = rows.any(axis=1)
    top = np.argmax(rows, axis=1)
    left = np.argmax(cols, axis=1)
    height = rows.sum(axis=1)
    width = cols.sum(axis=1)
    # A box is a rectangle: all its pixels, and only those, are zero.
    assert (zero.sum(axis=(1, 2)) == height * width).all()
    return erased, top[erased], left[erased], height[erased], width[erased]


def test_random_erasing_boxes_are_distributed_as_torchvisions(tmp_path):
    n = 3000
    write_png(str(tmp_path), np.full((48, 64, 3), (200, 120, 40)))
    erasing = tvt.RandomErasing(p=0.5)
    data = torchvision.datasets.ImageFolder(str(tmp_path), transform=tvt.Compose(
        [tvt.CenterCrop((48, 64)), tvt.ToTensor(), erasing]))
    loader = DataLoader(repeated(data, n), batch_size=500, seed=4)
    assert native_stats(loader)["native"]
    ours = erased_boxes(images_of(loader))

    torch.manual_seed(3)
    source = tvt.ToTensor()(data.loader(data.samples[0][0]))
    theirs = erased_boxes(np.stack([erasing(source.clone()).numpy() for _ in range(n)]))
    assert abs(ours[0].mean() - theirs[0].mean()) < 2.576 * math.sqrt(0.5 / n), "p = 0.5"
    for name, mine, reference in zip(("top", "left", "height", "width"), ours[1:], theirs[1:]):
        d, p = ks_2samp(mine, reference)
        assert p > ALPHA, f"RandomErasing {name}: KS D={d:.4f}, p={p:.2g}"
    area = ours[3] * ours[4]
    d, p = ks_2samp(area, theirs[3] * theirs[4])
    assert p > ALPHA, f"RandomErasing area: KS D={d:.4f}, p={p:.2g}"
    # Power: boxes a few percent larger are seen.
    assert ks_2samp(area * 1.1, theirs[3] * theirs[4])[1] < ALPHA


# ---------------------------------------------------------------------------
# (2) Deterministic ops: structure, dtypes, and pixels within the tolerance

# Measured on synth's photo-like JPEGs (short side 300-500; 3 folders of 24
# images), in levels of 0-255 (the normalized difference times 255 * std),
# 2026-12-01, as max / 99th percentile / mean:
#   CenterCrop(224), no resampling:          0 / 0 / 0 (the same decoded pixels,
#                                             Normalize within float rounding)
#   Resize(256) + CenterCrop(224), 1.2-2x:   48-56 / 5-6 / 0.64-0.66
#   Resize((224, 224)):                      43-47 / 4-5 / 0.48-0.55
#   Resize(64) + CenterCrop(56), 5-8x:       43-45 / 13-14 / 1.53-1.66
# The largest differences are single pixels at hard edges: bilinear (or
# area averaging past 2x, after DCT scaling) against PIL's antialiased
# bilinear filter. The bounds leave room above the measurements; docs/python.md
# quotes both.
TOLERANCES = [
    ("CenterCrop(224)", [tvt.CenterCrop(224)], 1, 0, 0.05),
    ("Resize(256)+CenterCrop(224)", [tvt.Resize(256), tvt.CenterCrop(224)], 64, 8, 1.0),
    ("Resize((224,224))", [tvt.Resize((224, 224))], 64, 8, 1.0),
    ("Resize(64)+CenterCrop(56)", [tvt.Resize(64), tvt.CenterCrop(56)], 64, 20, 2.5),
]


@pytest.mark.parametrize("name,geometry,max_level,p99_level,mean_level", TOLERANCES,
                         ids=[t[0] for t in TOLERANCES])
def test_deterministic_ops_are_within_tolerance_of_torchvision(photos, name, geometry,
                                                               max_level, p99_level, mean_level):
    data = torchvision.datasets.ImageFolder(photos, transform=tvt.Compose(
        geometry + [tvt.ToTensor(), tvt.Normalize(MEAN, STD)]))
    ours_loader = DataLoader(data, batch_size=4, num_workers=2)
    assert native_stats(ours_loader)["native"]
    ours = list(ours_loader)
    theirs = list(tud.DataLoader(data, batch_size=4, num_workers=0))
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        # torch's structure: [images float32 [B, 3, H, W], labels int64 [B]].
        assert isinstance(mine, list) and len(mine) == 2
        assert mine[0].dtype == reference[0].dtype == torch.float32
        assert mine[0].shape == reference[0].shape
        assert mine[1].dtype == reference[1].dtype == torch.int64
        assert torch.equal(mine[1], reference[1])
    a = torch.cat([b[0] for b in ours]).numpy()
    b = torch.cat([b[0] for b in theirs]).numpy()
    # The same value range: Normalize of [0, 1].
    low = (0 - np.array(MEAN)) / np.array(STD) - 1e-5
    high = (1 - np.array(MEAN)) / np.array(STD) + 1e-5
    assert (a.min(axis=(0, 2, 3)) >= low).all() and (a.max(axis=(0, 2, 3)) <= high).all()
    levels = np.abs(a - b) * (np.array(STD, np.float32)[:, None, None] * 255)
    measured = (f"{name}: max {levels.max():.2f}, 99th percentile "
                f"{np.percentile(levels, 99):.2f}, mean {levels.mean():.3f} levels")
    assert levels.max() <= max_level, measured
    assert np.percentile(levels, 99) <= p99_level + 0.01, measured
    assert levels.mean() <= mean_level, measured


def test_the_listing_is_the_datasets_own(photos, tmp_path):
    # is_valid_file chooses the files; the lowered loader gives the same
    # labels in the same order as torch's over the same dataset.
    def valid(path):
        return not path.endswith(("1.jpg", "4.jpg"))

    data = torchvision.datasets.DatasetFolder(
        photos, torchvision.datasets.folder.default_loader, is_valid_file=valid,
        transform=tvt.Compose([tvt.CenterCrop(16), tvt.PILToTensor()]))
    loader = DataLoader(data, batch_size=3)
    assert native_stats(loader)["native"]
    assert len(data) < 12
    labels = torch.cat([b[1] for b in loader]).tolist()
    assert labels == [label for _, label in data.samples]
    images = torch.cat([b[0] for b in loader])
    assert images.dtype == torch.uint8 and images.shape == (len(data), 3, 16, 16)
    reference = torch.stack([data[i][0] for i in range(len(data))])
    assert (images.int() - reference.int()).abs().max() <= 2  # the JPEG decoders only


def test_subset_and_concat_are_lowered(photos):
    data = torchvision.datasets.ImageFolder(photos, transform=tvt.Compose(
        [tvt.Resize(40), tvt.CenterCrop(32), tvt.ToTensor()]))
    subset = tud.Subset(data, [11, 0, 5, 5])
    concat = tud.ConcatDataset([subset, data])
    loader = DataLoader(concat, batch_size=8)
    stats = native_stats(loader)
    assert stats["native"]
    assert stats["text"] == ("feedline.torch: ConcatDataset of Subset of ImageFolder + 3 "
                             "transforms, ImageFolder + 3 transforms run natively")
    labels = torch.cat([b[1] for b in loader]).tolist()
    assert labels == [concat[i][1] for i in range(len(concat))]
    # A part feedline does not lower keeps the whole concatenation in Python.
    mixed = tud.ConcatDataset([data, tud.TensorDataset(torch.zeros(2, 3, 32, 32),
                                                       torch.zeros(2, dtype=torch.int64))])
    loader = DataLoader(mixed, batch_size=7)
    stats = native_stats(loader)
    assert not stats["native"] and "part 1 (TensorDataset)" in stats["reason"]
    assert loader.dataset is mixed


def test_target_transform_stays_in_python_and_the_images_stay_native(photos):
    transform = tvt.Compose([tvt.CenterCrop(24), tvt.ToTensor()])
    plain = torchvision.datasets.ImageFolder(photos, transform=transform)
    data = torchvision.datasets.ImageFolder(photos, transform=transform,
                                            target_transform=lambda y: 100 + y)
    loader = DataLoader(data, batch_size=6, num_workers=2)
    stats = native_stats(loader)
    assert stats["lowered"] == ["CenterCrop", "ToTensor"] and stats["kept"] == ["target_transform"]
    assert stats["text"].endswith("; the target_transform runs in Python on the label")
    batches = list(loader)
    assert torch.cat([b[1] for b in batches]).tolist() == [100 + y for y in plain.targets]
    native = torch.cat([b[0] for b in DataLoader(plain, batch_size=6)])
    assert torch.equal(torch.cat([b[0] for b in batches]), native)


class ClassificationPresetTrain:
    """As torchvision's reference scripts write their train preset
    (references/classification/presets.py): a Compose behind __call__."""

    def __init__(self, crop_size):
        self.transforms = tvt.Compose([
            tvt.RandomResizedCrop(crop_size), tvt.RandomHorizontalFlip(0.5), tvt.PILToTensor(),
            tvt.ConvertImageDtype(torch.float), tvt.Normalize(MEAN, STD)])

    def __call__(self, img):
        return self.transforms(img)


class Doubled(ClassificationPresetTrain):
    """Not a plain forwarder: its own code runs."""

    def __call__(self, img):
        return self.transforms(img) * 2


def test_the_reference_scripts_presets_are_lowered(photos):
    loader = DataLoader(torchvision.datasets.ImageFolder(photos, ClassificationPresetTrain(32)),
                        batch_size=4)
    stats = native_stats(loader)
    assert stats["native"] and stats["text"] == \
        "feedline.torch: ImageFolder + 5 transforms run natively"
    images, labels = next(iter(loader))
    assert images.dtype == torch.float32 and images.shape == (4, 3, 32, 32)
    doubled = DataLoader(torchvision.datasets.ImageFolder(photos, Doubled(32)), batch_size=4)
    assert native_stats(doubled)["reason"] == "Doubled has no native transform"


def test_random_draws_change_per_epoch_when_a_part_runs_in_python(photos):
    # A target_transform makes the concatenation a Python dataset: the
    # lowered parts' samples are then drawn through __getitem__, and must
    # still draw new crops each epoch, as torchvision's do.
    crop = tvt.Compose([tvt.RandomResizedCrop(16), tvt.ToTensor()])
    concat = tud.ConcatDataset([
        torchvision.datasets.ImageFolder(photos, transform=crop),
        torchvision.datasets.ImageFolder(photos, transform=crop, target_transform=lambda y: -y)])
    loader = DataLoader(concat, batch_size=24, num_workers=2)
    assert native_stats(loader)["kept"] == ["target_transform"]
    first, second = (next(iter(loader)) for _ in range(2))
    assert first[1].tolist() == [y for _, y in concat.datasets[0].samples] + \
        [-y for _, y in concat.datasets[1].samples]
    assert all((first[0][i] != second[0][i]).any() for i in range(24))


# ---------------------------------------------------------------------------
# (3), (4) What stays in Python


class LabelledTwice(torchvision.datasets.ImageFolder):
    """A subclass with its own __getitem__: its code must run."""

    def __getitem__(self, index):
        image, label = super().__getitem__(index)
        return image, label + 1000


def torch_batches(data, batch_size=4):
    return list(tud.DataLoader(data, batch_size=batch_size))


def assert_same_batches(ours, theirs):
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert isinstance(mine, list) and len(mine) == len(reference)
        for x, y in zip(mine, reference):
            assert x.dtype == y.dtype and torch.equal(x, y)


def deterministic():
    return tvt.Compose([tvt.Resize(30), tvt.CenterCrop(24), tvt.ToTensor()])


def test_a_subclass_with_its_own_getitem_stays_in_python(photos, caplog):
    data = LabelledTwice(photos, transform=deterministic())
    with caplog.at_level(logging.INFO, logger="feedline"):
        loader = DataLoader(data, batch_size=4)
        assert not caplog.records, "the line is logged at the first batch, not before"
        ours = list(loader)
        list(loader)
    stats = native_stats(loader)
    assert not stats["native"] and stats["lowered"] == []
    line = "feedline.torch: LabelledTwice runs in Python: LabelledTwice overrides __getitem__"
    assert stats["text"] == line
    assert [r.getMessage() for r in caplog.records if r.name == "feedline"] == [line], "once"
    assert loader.dataset is data
    assert_same_batches(ours, torch_batches(data))
    assert ours[0][1].min() >= 1000


def test_an_unknown_transform_stays_in_python(photos, caplog):
    quarter = tvt.Lambda(lambda t: t * 0 + 0.25)
    data = torchvision.datasets.ImageFolder(photos, transform=tvt.Compose(
        [tvt.Resize(30), tvt.CenterCrop(24), tvt.ToTensor(), quarter]))
    with caplog.at_level(logging.INFO, logger="feedline"):
        loader = DataLoader(data, batch_size=4, num_workers=2)
        ours = list(loader)
    stats = native_stats(loader)
    assert not stats["native"] and stats["reason"] == "Lambda has no native transform"
    assert stats["kept"] == ["Resize", "CenterCrop", "ToTensor", "Lambda"]
    assert ("feedline.torch: ImageFolder runs in Python: Lambda has no native transform"
            in caplog.messages)
    assert_same_batches(ours, torch_batches(data))
    assert (ours[0][0] == 0.25).all()


def test_native_transforms_false_stays_in_python(photos):
    data = torchvision.datasets.ImageFolder(photos, transform=deterministic())
    loader = DataLoader(data, batch_size=4, native_transforms=False)
    stats = native_stats(loader)
    assert not stats["native"] and stats["reason"] == "native_transforms=False"
    assert stats["text"] == "feedline.torch: ImageFolder runs in Python: native_transforms=False"
    assert loader.dataset is data
    # PIL's own pixels, bit for bit: the torchvision code ran.
    assert_same_batches(list(loader), torch_batches(data))
    lowered = DataLoader(data, batch_size=4)
    assert native_stats(lowered)["native"] and lowered.dataset is not data


def test_what_else_stays_in_python(photos, tmp_path):
    def reason(data):
        return native_stats(DataLoader(data, batch_size=2))["reason"]

    tensor = tvt.Compose([tvt.CenterCrop(24), tvt.ToTensor()])
    assert reason(torchvision.datasets.ImageFolder(photos)) == \
        "it has no transform: its samples are PIL images"
    assert reason(torchvision.datasets.ImageFolder(photos, transform=tvt.CenterCrop(24))) == \
        "its transform does not end in a tensor (no ToTensor or PILToTensor)"
    assert "different sizes" in reason(torchvision.datasets.ImageFolder(
        photos, transform=tvt.Compose([tvt.Resize(24), tvt.ToTensor()])))
    assert "bicubic" in reason(torchvision.datasets.ImageFolder(photos, transform=tvt.Compose(
        [tvt.Resize(24, InterpolationMode.BICUBIC), tvt.CenterCrop(24), tvt.ToTensor()])))
    assert reason(torchvision.datasets.ImageFolder(
        photos, transform=tensor, loader=lambda p: torchvision.datasets.folder.pil_loader(p))) \
        == "its loader is not torchvision's default_loader"
    # A file PIL decodes and feedline does not (BMP) keeps the dataset in Python.
    from PIL import Image

    write_png(str(tmp_path), np.zeros((30, 30, 3)))
    Image.fromarray(np.zeros((30, 30, 3), np.uint8)).save(tmp_path / "class_a" / "b.bmp")
    assert "1 of its files are not JPEG, PNG or WebP by name (e.g. b.bmp)" in reason(
        torchvision.datasets.ImageFolder(str(tmp_path), transform=tensor))
    # A collate_fn would be handed numpy arrays where torchvision's dataset
    # returns tensors: feedline.torch passes it to lower(), which keeps the
    # dataset in Python.
    from feedline.frontends.torch import lowering as torch_lowering

    data = torchvision.datasets.ImageFolder(photos, transform=tensor)
    same, lowering = torch_lowering.lower(data, True, collate_fn=tud.default_collate)
    assert same is data and not lowering.native
    assert lowering.reason == ("a collate_fn is given, and it would receive numpy arrays, "
                               "not tensors")
    # Datasets that are no image folder are not reported at all.
    plain = DataLoader(tud.TensorDataset(torch.zeros(4, 2)), batch_size=2)
    assert native_stats(plain) is None
