"""The native augmentations (ColorJitter, TrivialAugmentWide, RandAugment,
AutoAugment, RandomErasing, PILToTensor, ConvertImageDtype) against
torchvision: the same pixels for fixed parameters (within the tolerances of
docs/vision.md), the same parameter distributions, the same batches for any
number of workers, and ValueErrors that name the bad argument."""

import math

import numpy as np
import pytest
import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as TF
import torchvision.transforms as tvt
from torchvision.transforms.autoaugment import _apply_op

import feedline
from feedline.vision import datasets, encode_png, synth
from feedline.vision import functional as F
from feedline.vision import transforms as T

from conftest import copied

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def photos():
    # Photo-like images: textures over a range of frequencies, edges, noise;
    # one odd size so no path relies on even dimensions.
    return [synth.synthesize_image(96, 80, seed=s) for s in range(3)] + [
        synth.synthesize_image(67, 53, seed=9)
    ]


def torchvision_on(image, fn):
    chw = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).contiguous()
    return fn(chw).permute(1, 2, 0).numpy()


def differences(ours, theirs):
    d = np.abs(ours.astype(np.int32) - theirs.astype(np.int32))
    return d.max(), float((d > 0).mean())


@pytest.mark.parametrize(
    "name,factor",
    [("brightness", 1.37), ("brightness", 0.4), ("contrast", 0.61), ("contrast", 1.7),
     ("saturation", 1.8), ("saturation", 0.2), ("hue", 0.23), ("hue", -0.41)],
)
def test_color_adjustments_equal_torchvision(name, factor):
    for image in photos():
        ours = getattr(F, "adjust_" + name)(image, factor)
        theirs = torchvision_on(image, lambda t: getattr(TF, "adjust_" + name)(t, factor))
        np.testing.assert_array_equal(ours, theirs, err_msg=f"adjust_{name}({factor})")


# Ops whose result agrees with torchvision's byte for byte on these images.
EXACT_OPS = [("Identity", 0.0), ("ShearX", 0.3), ("ShearX", -0.99), ("ShearY", -0.5),
             ("TranslateX", 13.4), ("TranslateY", -20.0), ("Brightness", 0.4),
             ("Color", -0.6), ("Contrast", 0.5), ("Sharpness", 0.9), ("Sharpness", -0.7),
             ("Posterize", 3.0), ("Posterize", 6.0),
             ("Solarize", 128.0), ("Solarize", 246.5), ("AutoContrast", 0.0), ("Equalize", 0.0),
             ("Invert", 0.0)]


@pytest.mark.parametrize("op,magnitude", EXACT_OPS)
def test_augment_ops_equal_torchvision(op, magnitude):
    for image in photos():
        ours = F.apply_augment_op(image, op, magnitude)
        theirs = torchvision_on(
            image, lambda t: _apply_op(t, op, magnitude, InterpolationMode.NEAREST, None))
        np.testing.assert_array_equal(ours, theirs, err_msg=f"{op}({magnitude})")


@pytest.mark.parametrize("op,magnitude", [("ShearX", 0.5), ("TranslateY", -17.0)])
def test_fill_equals_torchvision(op, magnitude):
    fill = [10.0, 128.0, 250.0]
    for image in photos():
        ours = F.apply_augment_op(image, op, magnitude, fill=fill)
        theirs = torchvision_on(
            image, lambda t: _apply_op(t, op, magnitude, InterpolationMode.NEAREST, fill))
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "op,magnitude,interpolation,max_level,max_fraction",
    [
        # Nearest-neighbour rotation: OpenCV rounds source positions in
        # 1/1024 pixel fixed point, torch in float32 with ties to even; a
        # pixel whose source lies within that error of a half picks the
        # other neighbour (any level apart), 0.1% of pixels here.
        ("Rotate", 33.0, "nearest", 255, 0.005),
        ("Rotate", -135.0, "nearest", 255, 0.005),
        # Bilinear: OpenCV's weights are multiples of 1/32, torch's float32;
        # measured over angles and shears: at most 4 levels, 8% of values.
        ("Rotate", 33.0, "bilinear", 4, 0.1),
        ("ShearY", 0.4, "bilinear", 4, 0.1),
    ],
)
def test_augment_ops_within_stated_tolerance(op, magnitude, interpolation, max_level,
                                             max_fraction):
    mode = InterpolationMode(interpolation)
    for image in photos():
        ours = F.apply_augment_op(image, op, magnitude, interpolation=interpolation)
        theirs = torchvision_on(image, lambda t: _apply_op(t, op, magnitude, mode, None))
        worst, fraction = differences(ours, theirs)
        assert worst <= max_level and fraction <= max_fraction, (op, magnitude, worst, fraction)


def encoded_photo(seed=1, width=160, height=120):
    return encode_png(synth.synthesize_image(width, height, seed=seed))


def test_pil_to_tensor_and_convert_image_dtype_are_to_tensor():
    data = encoded_photo()
    hwc = T.Compose([T.CenterCrop(64)])(data)
    chw = T.Compose([T.CenterCrop(64), T.PILToTensor()])(data)
    assert chw.dtype == np.uint8 and chw.shape == (3, 64, 64)
    np.testing.assert_array_equal(chw, hwc.transpose(2, 0, 1))
    converted = T.Compose([T.CenterCrop(64), T.PILToTensor(),
                           T.ConvertImageDtype(torch.float)])(data)
    to_tensor = T.Compose([T.CenterCrop(64), T.ToTensor()])(data)
    assert converted.dtype == np.float32
    np.testing.assert_array_equal(converted, to_tensor)
    np.testing.assert_array_equal(converted, TF.convert_image_dtype(torch.from_numpy(chw),
                                                                    torch.float).numpy())
    half = T.Compose([T.CenterCrop(64), T.PILToTensor(), T.ConvertImageDtype(torch.float16)])
    assert half(data).dtype == np.float16


def test_pipeline_applies_the_ops_to_the_cropped_image():
    # A deterministic ColorJitter (one-point ranges, one adjustment) and
    # Equalize-only AutoAugment stand-ins: the pipeline's output must be the
    # op applied to the same crop without it.
    data = encoded_photo(seed=3)
    crop = T.Compose([T.CenterCrop(72)])(data)
    jitter = T.Compose([T.CenterCrop(72), T.ColorJitter(brightness=(1.3, 1.3))])(data)
    np.testing.assert_array_equal(jitter, F.adjust_brightness(crop, 1.3))
    np.testing.assert_array_equal(
        jitter, torchvision_on(crop, lambda t: TF.adjust_brightness(t, 1.3)))


def erased_fractions(transform, count, size=48):
    # Fraction of each image erased (value 0 after Normalize is exactly
    # 0.0 in all three channels; no unerased pixel normalizes to 0).
    data = encoded_photo(seed=5, width=64, height=64)
    pipeline = T.build_pipeline(transform)
    out = []
    for index in range(count):
        image = pipeline.run(data, "", 11, 0, index)
        out.append(float(np.all(image == 0.0, axis=0).sum()) / (size * size))
    return np.array(out)


def ks_statistic(a, b):
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    return np.max(np.abs(np.searchsorted(a, grid, side="right") / len(a)
                         - np.searchsorted(b, grid, side="right") / len(b)))


def ks_bound(n, m, alpha=1e-6):
    # Two-sample Kolmogorov-Smirnov critical value: a correct implementation
    # exceeds it with probability alpha.
    return math.sqrt(-math.log(alpha / 2) / 2) * math.sqrt((n + m) / (n * m))


def test_random_erasing_area_distribution_matches_torchvision():
    n = 1500
    transform = T.Compose([T.CenterCrop(48), T.ToTensor(), T.Normalize(MEAN, STD),
                           T.RandomErasing(p=0.5)])
    ours = erased_fractions(transform, n)
    torch.manual_seed(0)
    theirs = []
    erasing = tvt.RandomErasing(p=0.5)
    blank = torch.zeros(3, 48, 48)
    for _ in range(n):
        if torch.rand(1) < erasing.p:
            i, j, h, w, _ = erasing.get_params(blank, erasing.scale, erasing.ratio, [0.0])
            theirs.append(0.0 if (h, w) == (48, 48) else h * w / (48 * 48))
        else:
            theirs.append(0.0)
    theirs = np.array(theirs)
    bound = ks_bound(n, n)
    assert ks_statistic(ours, theirs) < bound
    # The bound has the power to see a wrong distribution: a scale range
    # twice as wide is far outside it.
    wrong = erased_fractions(T.Compose([T.CenterCrop(48), T.ToTensor(), T.Normalize(MEAN, STD),
                                        T.RandomErasing(p=0.5, scale=(0.02, 0.66))]), n)
    assert ks_statistic(wrong, theirs) > bound


def test_random_erasing_before_normalize_erases_in_unit_range():
    data = encoded_photo(seed=2, width=64, height=64)
    transform = T.Compose([T.CenterCrop(48), T.ToTensor(), T.RandomErasing(p=1.0, value=0.5),
                           T.Normalize(MEAN, STD)])
    image = T.build_pipeline(transform).run(data, "", 1, 0, 0)
    expected = (0.5 - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    erased = np.all(np.abs(image - expected[:, None, None]) < 1e-6, axis=0)
    assert erased.sum() > 0


def test_color_jitter_factor_ranges_match_torchvision():
    # Brightness alone on a mid-gray image: the output level is
    # trunc(factor * 100), so the factor is known to 1/100; its distribution
    # must be uniform on [0.6, 1.4] like torchvision's draws.
    gray = encode_png(np.full((8, 8, 3), 100, np.uint8))
    pipeline = T.build_pipeline(T.ColorJitter(brightness=0.4))
    n = 2000
    ours = np.array([pipeline.run(gray, "", 5, 0, i)[0, 0, 0] for i in range(n)]) / 100.0
    torch.manual_seed(1)
    jitter = tvt.ColorJitter(brightness=0.4)
    theirs = []
    for _ in range(n):
        _, b, _, _, _ = jitter.get_params(jitter.brightness, None, None, None)
        theirs.append(math.floor(b * 100) / 100.0)
    bound = ks_bound(n, n)
    assert ks_statistic(ours, np.array(theirs)) < bound
    narrow = T.build_pipeline(T.ColorJitter(brightness=0.2))
    wrong = np.array([narrow.run(gray, "", 5, 0, i)[0, 0, 0] for i in range(n)]) / 100.0
    assert ks_statistic(wrong, np.array(theirs)) > bound


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("augment_images")
    assert synth.write_image_folder(root, 16, classes=2, seed=8) == []
    return str(root)


def recipe():
    # torchvision's classification train recipe with --auto-augment ta_wide
    # and --random-erase, plus ColorJitter and value="random".
    return T.Compose([
        T.RandomResizedCrop(40), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
        T.TrivialAugmentWide(), T.RandAugment(), T.AutoAugment(), T.PILToTensor(),
        T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
        T.RandomErasing(p=0.5), T.RandomErasing(p=0.5, value="random"),
    ])


def test_batches_are_the_same_for_any_number_of_workers(folder):
    data = datasets.ImageFolder(folder, transform=recipe())

    def epoch(workers, seed=3):
        loader = feedline.DataLoader(data, batch_size=4, num_workers=workers, seed=seed)
        return np.concatenate([b[0] for b in copied(loader)])

    zero = epoch(0)
    assert zero.shape == (16, 3, 40, 40) and zero.dtype == np.float32
    np.testing.assert_array_equal(epoch(2), zero)
    assert not np.array_equal(epoch(0, seed=4), zero)


@pytest.mark.parametrize(
    "make,argument",
    [
        (lambda: T.ColorJitter(brightness=-0.1), "brightness"),
        (lambda: T.ColorJitter(contrast=(1.5, 0.5)), "contrast"),
        (lambda: T.ColorJitter(saturation="a lot"), "saturation"),
        (lambda: T.ColorJitter(hue=0.7), "hue"),
        (lambda: T.HueTransform(0.6), "hue"),
        (lambda: T.TrivialAugmentWide(num_magnitude_bins=1), "num_magnitude_bins"),
        (lambda: T.TrivialAugmentWide(interpolation="area"), "interpolation"),
        (lambda: T.RandAugment(magnitude=31), "magnitude"),
        (lambda: T.RandAugment(num_ops=-1), "num_ops"),
        (lambda: T.AutoAugment(policy="mnist"), "policy"),
        (lambda: T.AutoAugment(fill=[1, 2]), "fill"),
        (lambda: T.RandomErasing(p=1.5), "p"),
        (lambda: T.RandomErasing(prob=-0.5), "p"),
        (lambda: T.RandomErasing(scale=(0.5, 1.2)), "scale"),
        (lambda: T.RandomErasing(ratio=(0, 3)), "ratio"),
        (lambda: T.RandomErasing(value="noise"), "value"),
        (lambda: T.RandomErasing(value=None), "value"),
        (lambda: T.RandomErasing(value=(1, 2)), "value"),
        (lambda: T.ConvertImageDtype(torch.int32), "dtype"),
    ],
)
def test_invalid_parameters_raise_value_error_naming_the_argument(make, argument):
    with pytest.raises(ValueError, match=argument):
        make()


def test_misplaced_steps_are_refused():
    with pytest.raises(TypeError, match="RandomErasing works on float tensors"):
        T.build_pipeline(T.Compose([T.CenterCrop(8), T.RandomErasing()]))
    with pytest.raises(TypeError, match="TrivialAugmentWide works on uint8 images"):
        T.build_pipeline(T.Compose([T.CenterCrop(8), T.ToTensor(), T.TrivialAugmentWide()]))
    with pytest.raises(TypeError, match="ConvertImageDtype works on tensors"):
        T.build_pipeline(T.Compose([T.CenterCrop(8), T.ConvertImageDtype(torch.float)]))
    with pytest.raises(ValueError, match="geometric steps"):
        T.build_pipeline(T.Compose([T.ColorJitter(0.4), T.CenterCrop(8)]))


def test_paddle_names_are_aliases():
    assert T.BrightnessTransform(0.4).brightness == T.ColorJitter(brightness=0.4).brightness
    assert T.SaturationTransform(0.3).saturation == [0.7, 1.3]
    assert T.RandomErasing(prob=0.25).p == 0.25


def test_a_torchvision_recipe_converts_to_the_same_native_pipeline():
    # The reference script's ClassificationPresetTrain with --auto-augment
    # ta_wide --random-erase 0.25, built from torchvision's classes.
    theirs = tvt.Compose([
        tvt.RandomResizedCrop(176, interpolation=InterpolationMode.BILINEAR),
        tvt.RandomHorizontalFlip(0.5), tvt.TrivialAugmentWide(), tvt.PILToTensor(),
        tvt.ConvertImageDtype(torch.float), tvt.Normalize(MEAN, STD), tvt.RandomErasing(0.25),
    ])
    ours = T.Compose([
        T.RandomResizedCrop(176), T.RandomHorizontalFlip(0.5), T.TrivialAugmentWide(),
        T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
        T.RandomErasing(0.25),
    ])
    assert repr(T.build_pipeline(T.from_torchvision(theirs))) == repr(T.build_pipeline(ours))
    jitter = T.from_torchvision(tvt.ColorJitter(brightness=0.4, hue=0.1))
    assert jitter.brightness == [0.6, 1.4] and jitter.contrast == [1.0, 1.0]
    assert jitter.hue == [-0.1, 0.1]
    policy = T.from_torchvision(tvt.AutoAugment(tvt.AutoAugmentPolicy.CIFAR10))
    assert policy.policy == T.AutoAugmentPolicy.CIFAR10
    with pytest.raises(ValueError, match="GaussianBlur has no native"):
        T.from_torchvision(tvt.Compose([tvt.GaussianBlur(3)]))
