"""Image transforms with the parameters and semantics of torchvision.transforms
(and paddle.vision.transforms), run in C++ by the native datasets.

A transform list is compiled into one native pipeline, which decodes only the
pixels the output needs (a crop's box, at a reduced JPEG scale when the output
is smaller) and writes the result straight into the batch. Without ToTensor
the images come out as uint8 [H, W, 3]; ToTensor (or PILToTensor then
ConvertImageDtype(torch.float)) makes them float32 [3, H, W] scaled to
[0, 1], and Normalize then applies (x - mean) / std.

The recipes' augmentations run natively too, with torchvision's parameters,
sampling and arithmetic: ColorJitter, TrivialAugmentWide, RandAugment and
AutoAugment on the uint8 image after the geometric steps, RandomErasing on
the float tensor. Their random numbers come from (seed, epoch, sample
index), so batches are the same for any number of workers. The detection
steps of torchvision's references/detection run natively in the detection
datasets (docs/detection.md): RandomZoomOut, RandomIoUCrop (its crop chosen
from the boxes before decoding), RandomPhotometricDistort,
RandomShortestSize, ScaleJitter and FixedSizeCrop; and YOLO's RandomHSV
(after a mosaic, feedline.vision.datasets.Mosaic). paddle.vision's
names are aliases: BrightnessTransform, ContrastTransform,
SaturationTransform, HueTransform, and RandomErasing(prob=...).

Example::

    train = Compose([RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
                     Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    image = train(open("cat.jpg", "rb").read())   # also callable on one image
"""

import enum
import math
import numbers

import numpy as np

from feedline._feedline import vision as _vision

__all__ = [
    "AutoAugment",
    "AutoAugmentPolicy",
    "BrightnessTransform",
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "ContrastTransform",
    "ConvertImageDtype",
    "FixedSizeCrop",
    "HueTransform",
    "Normalize",
    "PILToTensor",
    "RandAugment",
    "RandomErasing",
    "RandomHorizontalFlip",
    "RandomIoUCrop",
    "RandomHSV",
    "RandomPhotometricDistort",
    "RandomResizedCrop",
    "RandomShortestSize",
    "RandomZoomOut",
    "Resize",
    "SaturationTransform",
    "ScaleJitter",
    "ToTensor",
    "TrivialAugmentWide",
    "from_torchvision",
]

_NATIVE = _vision.Transform


def _interpolation(mode):
    # Accepts "bilinear", "nearest", "area" or a torchvision InterpolationMode.
    return str(getattr(mode, "value", mode)).lower()


def _pair(size, name):
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    size = tuple(int(s) for s in size)
    if len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(f"{name} size must be an int or a (height, width) pair, got {size}")
    return size


def _triple(values, name):
    values = [float(v) for v in np.ravel(values)]
    if len(values) == 1:
        values *= 3
    if len(values) != 3:
        raise ValueError(f"Normalize {name} needs 1 or 3 values (RGB), got {len(values)}")
    return values


class Transform:
    """Base of the native transforms. A transform is also callable on one
    image (encoded bytes, or a uint8 [H, W, 3] array), like Compose([self])."""

    def _native(self):
        raise NotImplementedError

    def __call__(self, image, seed=0, epoch=0, index=0):
        return Compose([self])(image, seed=seed, epoch=epoch, index=index)


class Compose(Transform):
    """Several transforms in a row."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, image, seed=0, epoch=0, index=0):
        """Runs the pipeline on one image, with the random parameters a
        dataset would draw for sample `index` of `epoch` under `seed`."""
        if isinstance(image, np.ndarray):
            image = _vision.encode_png(np.ascontiguousarray(image, dtype=np.uint8))
        return build_pipeline(self).run(image, "", seed, epoch, index)

    def __repr__(self):
        lines = "".join(f"\n    {t!r}" for t in self.transforms)
        return f"Compose({lines}\n)"


class Resize(Transform):
    """Resize(size): an int makes the shorter side `size` (the longer one
    int(size * long / short), capped at max_size); (height, width) resizes to
    exactly that. Shrinking by 2x or more averages pixel areas, which plays
    the part of torchvision's antialiasing."""

    def __init__(self, size, interpolation="bilinear", max_size=None, antialias=None):
        self.size = size
        self.interpolation = _interpolation(interpolation)
        self.max_size = max_size

    def _native(self):
        if isinstance(self.size, numbers.Integral) or len(self.size) == 1:
            short = int(self.size) if isinstance(self.size, numbers.Integral) else int(self.size[0])
            return [_NATIVE.resize(short, 0, self.interpolation, int(self.max_size or 0))]
        if self.max_size is not None:
            raise ValueError("max_size applies only when size is an int")
        height, width = _pair(self.size, "Resize")
        return [_NATIVE.resize(height, width, self.interpolation)]

    def __repr__(self):
        return f"Resize(size={self.size}, interpolation={self.interpolation})"


class CenterCrop(Transform):
    """The central (height, width) crop, zero-padded where the image is smaller."""

    def __init__(self, size):
        self.size = _pair(size, "CenterCrop")

    def _native(self):
        return [_NATIVE.center_crop(*self.size)]

    def __repr__(self):
        return f"CenterCrop(size={self.size})"


class RandomResizedCrop(Transform):
    """A crop of random area fraction (scale) and aspect ratio (ratio), resized
    to `size`; torchvision's parameter sampling (10 tries, then the central
    crop). The randomness comes from (seed, epoch, sample index), so it does
    not depend on which worker loads the sample."""

    def __init__(
        self,
        size,
        scale=(0.08, 1.0),
        ratio=(3.0 / 4.0, 4.0 / 3.0),
        interpolation="bilinear",
        antialias=None,
    ):
        self.size = _pair(size, "RandomResizedCrop")
        self.scale = tuple(float(s) for s in scale)
        self.ratio = tuple(float(r) for r in ratio)
        self.interpolation = _interpolation(interpolation)

    def _native(self):
        return [
            _NATIVE.random_resized_crop(
                self.size[0], self.size[1], self.scale, self.ratio, self.interpolation
            )
        ]

    def __repr__(self):
        return (
            f"RandomResizedCrop(size={self.size}, scale={self.scale}, ratio={self.ratio}, "
            f"interpolation={self.interpolation})"
        )


class RandomHorizontalFlip(Transform):
    """Mirrors the image left-right with probability p."""

    def __init__(self, p=0.5):
        self.p = float(p)

    def _native(self):
        return [_NATIVE.random_horizontal_flip(self.p)]

    def __repr__(self):
        return f"RandomHorizontalFlip(p={self.p})"


class ToTensor(Transform):
    """float32 [3, H, W] with values in [0, 1] (torchvision's ToTensor).
    dtype="float16" gives half precision instead."""

    def __init__(self, dtype="float32"):
        dtypes = {"float32": "f32", "float16": "f16"}
        self.dtype = np.dtype(dtype).name
        if self.dtype not in dtypes:
            raise ValueError(f"ToTensor dtype must be float32 or float16, got {dtype}")
        self._dtype = dtypes[self.dtype]

    def _native(self):
        return [_NATIVE.to_chw()]

    def __repr__(self):
        return "ToTensor()" if self.dtype == "float32" else f"ToTensor(dtype={self.dtype})"


class Normalize(Transform):
    """(x - mean) / std per channel, on the [0, 1] values ToTensor gives; it
    must come after ToTensor, as in torchvision."""

    def __init__(self, mean, std, inplace=False):
        self.mean = _triple(mean, "mean")
        self.std = _triple(std, "std")

    def _native(self):
        return [_NATIVE.normalize(self.mean, self.std)]

    def __repr__(self):
        return f"Normalize(mean={self.mean}, std={self.std})"


class PILToTensor(Transform):
    """uint8 [3, H, W], the pixels unscaled (torchvision's PILToTensor)."""

    def _native(self):
        return [_NATIVE.to_chw()]

    def __repr__(self):
        return "PILToTensor()"


def _float_dtype_name(dtype):
    # torch.float32 / torch.float, torch.float16 / torch.half, torch.uint8,
    # numpy dtypes and their names.
    name = str(dtype).replace("torch.", "")
    aliases = {"float": "float32", "half": "float16", "float32": "float32",
               "float16": "float16", "uint8": "uint8"}
    if name not in aliases:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    return aliases.get(name)


class ConvertImageDtype(Transform):
    """ConvertImageDtype(torch.float): the uint8 tensor of PILToTensor as
    float32 x / 255 (torch.float16 for half precision), as torchvision's."""

    def __init__(self, dtype):
        self.dtype = _float_dtype_name(dtype)
        if self.dtype is None:
            raise ValueError(
                f"ConvertImageDtype dtype must be torch.float32, torch.float16 or torch.uint8, "
                f"got {dtype}")

    def _native(self):
        return []

    def __repr__(self):
        return f"ConvertImageDtype(dtype={self.dtype})"


def _jitter_range(value, name, center=1.0, bound=(0.0, float("inf")), clip_first_on_zero=True):
    # torchvision's ColorJitter._check_input; every bad value is a ValueError
    # naming the argument.
    if isinstance(value, numbers.Number):
        if not value >= 0:
            raise ValueError(f"ColorJitter {name} must be non negative when a single number, "
                             f"got {value}")
        value = [center - float(value), center + float(value)]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        value = [float(value[0]), float(value[1])]
    else:
        raise ValueError(f"ColorJitter {name} must be a number or a (min, max) pair, got {value!r}")
    if not (bound[0] <= value[0] <= value[1] <= bound[1]) or not all(map(math.isfinite, value)):
        raise ValueError(f"ColorJitter {name} values must satisfy {bound[0]} <= min <= max <= "
                         f"{bound[1]} and be finite, got {value}")
    return value


class ColorJitter(Transform):
    """Random brightness, contrast, saturation and hue, applied in a random
    order (torchvision's ColorJitter): each factor is drawn uniformly from
    [max(0, 1 - v), 1 + v] for a number v (hue: [-v, v], at most 0.5), or
    from a (min, max) pair. Runs on the uint8 image, with torchvision's
    arithmetic (docs/vision.md gives the agreement)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0.0, bound=(-0.5, 0.5),
                                 clip_first_on_zero=False)

    def _native(self):
        return [_NATIVE.color_jitter(self.brightness, self.contrast, self.saturation, self.hue)]

    def __repr__(self):
        return (f"ColorJitter(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class BrightnessTransform(ColorJitter):
    """paddle.vision.transforms.BrightnessTransform(value): ColorJitter(brightness=value)."""

    def __init__(self, value):
        super().__init__(brightness=value)


class ContrastTransform(ColorJitter):
    """paddle.vision.transforms.ContrastTransform(value): ColorJitter(contrast=value)."""

    def __init__(self, value):
        super().__init__(contrast=value)


class SaturationTransform(ColorJitter):
    """paddle.vision.transforms.SaturationTransform(value): ColorJitter(saturation=value)."""

    def __init__(self, value):
        super().__init__(saturation=value)


class HueTransform(ColorJitter):
    """paddle.vision.transforms.HueTransform(value): ColorJitter(hue=value)."""

    def __init__(self, value):
        super().__init__(hue=value)


class AutoAugmentPolicy(enum.Enum):
    """The AutoAugment policies (torchvision's AutoAugmentPolicy values)."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


def _fill(fill, name):
    # None, a number or 1 or 3 numbers (0-255), as torchvision's fill.
    if fill is None:
        return [0.0, 0.0, 0.0]
    values = [float(v) for v in np.ravel(fill)]
    if len(values) == 1:
        values *= 3
    if len(values) != 3 or not all(map(math.isfinite, values)):
        raise ValueError(f"{name} fill must be a number or 3 finite numbers, got {fill!r}")
    return values


def _augment_interpolation(mode, name):
    mode = _interpolation(mode)
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"{name} interpolation must be nearest or bilinear, got {mode}")
    return mode


def _int_arg(value, name, owner):
    if not isinstance(value, numbers.Integral):
        raise ValueError(f"{owner} {name} must be an int, got {value!r}")
    return int(value)


class TrivialAugmentWide(Transform):
    """One of 14 ops (Identity, ShearX/Y, TranslateX/Y, Rotate, Brightness,
    Color, Contrast, Sharpness, Posterize, Solarize, AutoContrast, Equalize)
    at a random magnitude bin, as torchvision's TrivialAugmentWide."""

    def __init__(self, num_magnitude_bins=31, interpolation="nearest", fill=None):
        self.num_magnitude_bins = _int_arg(num_magnitude_bins, "num_magnitude_bins",
                                           "TrivialAugmentWide")
        if self.num_magnitude_bins < 2:
            raise ValueError("TrivialAugmentWide num_magnitude_bins must be >= 2, "
                             f"got {num_magnitude_bins}")
        self.interpolation = _augment_interpolation(interpolation, "TrivialAugmentWide")
        self.fill = _fill(fill, "TrivialAugmentWide")

    def _native(self):
        return [_NATIVE.trivial_augment_wide(self.num_magnitude_bins, self.interpolation,
                                             self.fill)]

    def __repr__(self):
        return (f"TrivialAugmentWide(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


class RandAugment(Transform):
    """num_ops random ops of TrivialAugmentWide's list at magnitude bin
    `magnitude` of num_magnitude_bins, as torchvision's RandAugment."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation="nearest",
                 fill=None):
        self.num_ops = _int_arg(num_ops, "num_ops", "RandAugment")
        self.magnitude = _int_arg(magnitude, "magnitude", "RandAugment")
        self.num_magnitude_bins = _int_arg(num_magnitude_bins, "num_magnitude_bins",
                                           "RandAugment")
        if self.num_ops < 0:
            raise ValueError(f"RandAugment num_ops must be >= 0, got {num_ops}")
        if self.num_magnitude_bins < 2:
            raise ValueError(f"RandAugment num_magnitude_bins must be >= 2, got {num_magnitude_bins}")
        if not 0 <= self.magnitude < self.num_magnitude_bins:
            raise ValueError(f"RandAugment magnitude must be in [0, num_magnitude_bins - 1], "
                             f"got {magnitude}")
        self.interpolation = _augment_interpolation(interpolation, "RandAugment")
        self.fill = _fill(fill, "RandAugment")

    def _native(self):
        return [_NATIVE.rand_augment(self.num_ops, self.magnitude, self.num_magnitude_bins,
                                     self.interpolation, self.fill)]

    def __repr__(self):
        return (f"RandAugment(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


class AutoAugment(Transform):
    """One of the policy's 25 sub-policies, each op with its probability and
    magnitude, as torchvision's AutoAugment (ImageNet policy by default)."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation="nearest", fill=None):
        name = str(getattr(policy, "value", policy)).lower()
        if name not in ("imagenet", "cifar10", "svhn"):
            raise ValueError(f"AutoAugment policy must be imagenet, cifar10 or svhn, got {policy!r}")
        self.policy = AutoAugmentPolicy(name)
        self.interpolation = _augment_interpolation(interpolation, "AutoAugment")
        self.fill = _fill(fill, "AutoAugment")

    def _native(self):
        return [_NATIVE.auto_augment(self.policy.value, self.interpolation, self.fill)]

    def __repr__(self):
        return f"AutoAugment(policy={self.policy}, fill={self.fill})"


class RandomErasing(Transform):
    """With probability p, a random rectangle of the float tensor (area
    fraction in `scale`, aspect ratio in `ratio`) set to `value`: a number,
    one per channel, or "random" for standard normal noise; torchvision's
    RandomErasing and its get_params. paddle's name for p, prob, is accepted
    too. Put it after ToTensor (and Normalize, as the recipes do: the value
    is in the units of the tensor where it is listed)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False,
                 prob=None):
        if prob is not None:
            p = prob
        if not isinstance(p, numbers.Number) or not 0 <= p <= 1:
            raise ValueError(f"RandomErasing p must be in [0, 1], got {p!r}")
        try:
            self.scale = tuple(float(s) for s in scale)
            self.ratio = tuple(float(r) for r in ratio)
        except TypeError:
            raise ValueError(f"RandomErasing scale and ratio must be (min, max) pairs, got "
                             f"{scale!r}, {ratio!r}") from None
        if len(self.scale) != 2 or not 0 <= self.scale[0] <= self.scale[1] <= 1:
            raise ValueError(f"RandomErasing scale must satisfy 0 <= min <= max <= 1, got {scale!r}")
        if len(self.ratio) != 2 or not (0 < self.ratio[0] <= self.ratio[1] < float("inf")):
            raise ValueError(f"RandomErasing ratio must satisfy 0 < min <= max, got {ratio!r}")
        self.p = float(p)
        self.random = isinstance(value, str)
        if value is None:
            raise ValueError("RandomErasing value must be a number, a sequence or 'random', "
                             "got None")
        if self.random and value != "random":
            raise ValueError(f"RandomErasing value must be a number, a sequence or 'random', "
                             f"got {value!r}")
        self.value = value
        self._values = [0.0, 0.0, 0.0] if self.random else _fill(value, "RandomErasing value")
        self.inplace = inplace

    def _native(self):
        return [_NATIVE.random_erasing(self.p, self.scale, self.ratio, self._values, self.random)]

    def __repr__(self):
        return (f"RandomErasing(p={self.p}, scale={self.scale}, ratio={self.ratio}, "
                f"value={self.value!r})")


def _range(value, name, owner):
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{owner} {name} must be a (min, max) pair, got {value!r}") from None
    return [low, high]


class RandomZoomOut(Transform):
    """torchvision's references/detection RandomZoomOut: with probability
    p, the image is placed at a random spot of a canvas side_range times
    its size (the factor drawn uniformly), the rest filled with `fill`
    (0-255 per channel, whole levels as PIL pads). Boxes and masks move
    with it. In a detection dataset, or on its own image."""

    def __init__(self, fill=None, side_range=(1.0, 4.0), p=0.5):
        self.fill = [0.0, 0.0, 0.0] if fill is None else _fill(fill, "RandomZoomOut")
        self.side_range = _range(side_range, "side_range", "RandomZoomOut")
        if not 1.0 <= self.side_range[0] <= self.side_range[1]:
            raise ValueError(f"Invalid canvas side range provided {tuple(side_range)}.")
        self.p = float(p)
        self._native()  # checks the arguments now, naming the bad one

    def _native(self):
        return [_NATIVE.random_zoom_out(self.fill, self.side_range, self.p)]

    def __repr__(self):
        return f"RandomZoomOut(fill={self.fill}, side_range={self.side_range}, p={self.p})"


class RandomIoUCrop(Transform):
    """torchvision's references/detection RandomIoUCrop (SSD's sampling):
    a crop whose width and height fractions are in [min_scale, max_scale]
    and aspect ratio in [min_aspect_ratio, max_aspect_ratio], such that some
    object centred in it overlaps it by one of `sampler_options` IoU or
    more (1: the image as it is). Only objects centred in the crop are
    kept. The crop is chosen from the boxes before decoding, so only it is
    decoded. Detection datasets only: it needs the image's objects."""

    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                 sampler_options=None, trials=40):
        self.scale = [float(min_scale), float(max_scale)]
        self.ratio = [float(min_aspect_ratio), float(max_aspect_ratio)]
        self.options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] if sampler_options is None else \
            [float(v) for v in sampler_options]
        self.trials = int(trials)
        self._native()  # checks the arguments now, naming the bad one

    def _native(self):
        return [_NATIVE.random_iou_crop(self.scale, self.ratio, self.options, self.trials)]

    def __repr__(self):
        return (f"RandomIoUCrop(scale={self.scale}, aspect_ratio={self.ratio}, "
                f"sampler_options={self.options}, trials={self.trials})")


class RandomPhotometricDistort(Transform):
    """torchvision's references/detection RandomPhotometricDistort:
    brightness, then contrast before or after saturation and hue, each with
    probability p and a factor drawn from its range, then with probability
    p a random order of the channels; ColorJitter's arithmetic. Listed
    before the geometric steps, as the references list it, it works on the
    whole decoded image."""

    def __init__(self, contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05),
                 brightness=(0.875, 1.125), p=0.5):
        owner = "RandomPhotometricDistort"
        self.contrast = _range(contrast, "contrast", owner)
        self.saturation = _range(saturation, "saturation", owner)
        self.hue = _range(hue, "hue", owner)
        self.brightness = _range(brightness, "brightness", owner)
        self.p = float(p)
        self._native()  # checks the arguments now, naming the bad one

    def _native(self):
        return [_NATIVE.random_photometric_distort(self.contrast, self.saturation, self.hue,
                                                   self.brightness, self.p)]

    def __repr__(self):
        return (f"RandomPhotometricDistort(contrast={self.contrast}, saturation="
                f"{self.saturation}, hue={self.hue}, brightness={self.brightness}, p={self.p})")


class RandomHSV(Transform):
    """YOLO's HSV augmentation (Ultralytics' RandomHSV; hsv_h, hsv_s, hsv_v;
    as in 8.3.79 and later): the image in OpenCV's 8-bit HSV, hue shifted by
    hgain * u of a turn (hgain * u * 180 levels, modulo 180), saturation and
    value multiplied by 1 + sgain * u and 1 + vgain * u clipped to 255 (u
    uniform in [-1, 1), one for each), back to RGB; one pass over the
    pixels with OpenCV's arithmetic (include/feedline/vision/random_hsv.h
    says where its bytes can differ from OpenCV's: by a level, rarely).
    Gains in [0, 1];
    the defaults are YOLO's training defaults. It runs on the uint8 image
    after the geometric steps (after a mosaic: on the whole mosaic, fill
    included, as theirs)."""

    def __init__(self, hgain=0.015, sgain=0.7, vgain=0.4):
        self.hgain, self.sgain, self.vgain = float(hgain), float(sgain), float(vgain)
        self._native()  # checks the arguments now, naming the bad one

    def _native(self):
        return [_NATIVE.random_hsv(self.hgain, self.sgain, self.vgain)]

    def __repr__(self):
        return f"RandomHSV(hgain={self.hgain}, sgain={self.sgain}, vgain={self.vgain})"


class RandomShortestSize(Transform):
    """torchvision's references/detection RandomShortestSize (their
    multiscale preset): a short side drawn from `min_size`, the long side
    at most `max_size`; each side truncated to whole pixels as theirs."""

    def __init__(self, min_size, max_size, interpolation="bilinear"):
        self.min_size = [int(min_size)] if isinstance(min_size, numbers.Integral) else \
            [int(v) for v in min_size]
        self.max_size = int(max_size)
        self.interpolation = _interpolation(interpolation)
        self._native()  # checks the arguments now, naming the bad one

    def _native(self):
        return [_NATIVE.random_shortest_size(self.min_size, self.max_size, self.interpolation)]

    def __repr__(self):
        return (f"RandomShortestSize(min_size={self.min_size}, max_size={self.max_size}, "
                f"interpolation={self.interpolation})")


class ScaleJitter(Transform):
    """torchvision's references/detection ScaleJitter (large-scale jitter):
    the image scaled to fit `target_size` (height, width) times a factor
    drawn from `scale_range`, with the references' own pairing of sides
    (min(target_size[1] / height, target_size[0] / width): the usual fit
    for their square target)."""

    def __init__(self, target_size, scale_range=(0.1, 2.0), interpolation="bilinear"):
        self.target_size = _pair(target_size, "ScaleJitter")
        self.scale_range = _range(scale_range, "scale_range", "ScaleJitter")
        self.interpolation = _interpolation(interpolation)
        self._native()  # checks the arguments now, naming the bad one

    def _native(self):
        height, width = self.target_size
        return [_NATIVE.scale_jitter(height, width, self.scale_range, self.interpolation)]

    def __repr__(self):
        return (f"ScaleJitter(target_size={self.target_size}, scale_range={self.scale_range}, "
                f"interpolation={self.interpolation})")


class FixedSizeCrop(Transform):
    """torchvision's references/detection FixedSizeCrop: a window of at
    most `size` (height, width) at a random offset, then padded at the
    right and bottom with `fill` to exactly `size`; objects left without
    area are dropped. Only padding_mode="constant"."""

    def __init__(self, size, fill=0, padding_mode="constant"):
        if padding_mode != "constant":
            raise ValueError(f"FixedSizeCrop padding_mode must be 'constant' natively, got "
                             f"{padding_mode!r}")
        self.size = _pair(size, "FixedSizeCrop")
        self.fill = _fill(fill, "FixedSizeCrop")
        self._native()  # checks the arguments now, naming the bad one

    def _native(self):
        return [_NATIVE.fixed_size_crop(self.size[0], self.size[1], self.fill)]

    def __repr__(self):
        return f"FixedSizeCrop(size={self.size}, fill={self.fill})"


def _flatten(transform):
    if transform is None:
        return []
    if isinstance(transform, Compose):
        return [step for t in transform.transforms for step in _flatten(t)]
    if isinstance(transform, (list, tuple)):
        return [step for t in transform for step in _flatten(t)]
    if not isinstance(transform, Transform):
        raise TypeError(
            "native datasets run their transforms in C++ and take feedline.vision.transforms "
            f"only, got {type(transform).__name__}; for Python transforms write a Python "
            "Dataset (see docs/python.md)"
        )
    return [transform]


def build_pipeline(transform, max_pixels=None):
    """The native pipeline for a transform (or Compose, or None); images with
    more than `max_pixels` pixels (default: Pillow's MAX_IMAGE_PIXELS) are
    refused from their header."""
    steps = _flatten(transform)
    # What the image is at each step, as in torchvision: "image" (uint8
    # [H, W, 3], a PIL image there), "uint8" (after PILToTensor), "float"
    # (after ToTensor or ConvertImageDtype), "normalized".
    natives, dtype, state = [], "u8", "image"
    for step in steps:
        name = type(step).__name__
        if isinstance(step, (ToTensor, PILToTensor)):
            if state != "image":
                raise ValueError(f"{name} comes after ToTensor or PILToTensor: the image is "
                                 "already a tensor")
            if isinstance(step, ToTensor):
                dtype, state = step._dtype, "float"
            else:
                state = "uint8"
        elif isinstance(step, ConvertImageDtype):
            if state == "image":
                raise TypeError("ConvertImageDtype works on tensors: put PILToTensor() before it")
            if step.dtype == "uint8":
                if state != "uint8":
                    raise ValueError("ConvertImageDtype(torch.uint8) of a float tensor is not "
                                     "supported: the native pipeline converts to float once")
            else:
                dtype = {"float32": "f32", "float16": "f16"}[step.dtype]
                state = "float" if state == "uint8" else state
        elif isinstance(step, Normalize):
            if state not in ("float",):
                raise TypeError("Normalize works on float tensors: put ToTensor() (or "
                                "PILToTensor() and ConvertImageDtype(torch.float)) before it"
                                if state != "normalized" else "Normalize is listed twice")
            state = "normalized"
        elif isinstance(step, RandomErasing):
            if state not in ("float", "normalized"):
                raise TypeError("RandomErasing works on float tensors: put ToTensor() (or "
                                "PILToTensor() and ConvertImageDtype(torch.float)) before it")
        elif isinstance(step, (ColorJitter, RandomPhotometricDistort, RandomHSV)):
            if state == "normalized":
                raise TypeError(f"{name} works on images: put it before Normalize")
        elif isinstance(step, (TrivialAugmentWide, RandAugment, AutoAugment)):
            if state not in ("image", "uint8"):
                raise TypeError(f"{name} works on uint8 images: put it before ToTensor / "
                                "ConvertImageDtype")
        natives.extend(step._native())
    if max_pixels is None:
        return _vision.Pipeline(natives, dtype)
    return _vision.Pipeline(natives, dtype, max_pixels=max_pixels)


def _torchvision_size(size):
    return size[0] if isinstance(size, (list, tuple)) and len(size) == 1 else size


def from_torchvision(transform):
    """The feedline transforms equal to a torchvision.transforms object (a
    Compose, a list, or one transform), so that a torchvision recipe (such
    as the reference scripts' ClassificationPresetTrain(...).transforms)
    runs natively. Raises ValueError naming a transform it has no native
    equivalent for."""
    if isinstance(transform, Transform):
        return transform
    if isinstance(transform, (list, tuple)):
        return Compose([from_torchvision(t) for t in transform])
    name = type(transform).__name__
    t = transform
    if name == "Compose":
        return Compose([from_torchvision(step) for step in t.transforms])
    if name == "RandomResizedCrop":
        return RandomResizedCrop(t.size, t.scale, t.ratio, t.interpolation)
    if name == "RandomHorizontalFlip":
        return RandomHorizontalFlip(t.p)
    if name == "Resize":
        return Resize(_torchvision_size(t.size), t.interpolation, t.max_size)
    if name == "CenterCrop":
        return CenterCrop(t.size)
    if name == "ToTensor":
        return ToTensor()
    if name == "PILToTensor":
        return PILToTensor()
    if name == "ConvertImageDtype":
        return ConvertImageDtype(t.dtype)
    if name == "Normalize":
        return Normalize(t.mean, t.std)
    if name == "TrivialAugmentWide":
        return TrivialAugmentWide(t.num_magnitude_bins, t.interpolation, t.fill)
    if name == "RandAugment":
        return RandAugment(t.num_ops, t.magnitude, t.num_magnitude_bins, t.interpolation, t.fill)
    if name == "AutoAugment":
        return AutoAugment(t.policy, t.interpolation, t.fill)
    if name == "ColorJitter":
        def jitter_range(value, center):
            return (center, center) if value is None else tuple(value)
        return ColorJitter(jitter_range(t.brightness, 1.0), jitter_range(t.contrast, 1.0),
                           jitter_range(t.saturation, 1.0), jitter_range(t.hue, 0.0))
    if name == "RandomErasing":
        return RandomErasing(t.p, t.scale, t.ratio, t.value, t.inplace)
    raise ValueError(f"from_torchvision: {name} has no native feedline transform; the native "
                     "ones are Compose, Resize, CenterCrop, RandomResizedCrop, "
                     "RandomHorizontalFlip, ToTensor, PILToTensor, ConvertImageDtype, Normalize, "
                     "ColorJitter, TrivialAugmentWide, RandAugment, AutoAugment, RandomErasing")
