"""Image transforms with the parameters and semantics of torchvision.transforms
(and paddle.vision.transforms), run in C++ by the native datasets.

A transform list is compiled into one native pipeline, which decodes only the
pixels the output needs (a crop's box, at a reduced JPEG scale when the output
is smaller) and writes the result straight into the batch. Without ToTensor
the images come out as uint8 [H, W, 3]; ToTensor makes them float32
[3, H, W] scaled to [0, 1], and Normalize then applies (x - mean) / std.

Example::

    train = Compose([RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
                     Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    image = train(open("cat.jpg", "rb").read())   # also callable on one image
"""

import numbers

import numpy as np

from feedline._feedline import vision as _vision

__all__ = [
    "CenterCrop",
    "Compose",
    "Normalize",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "Resize",
    "ToTensor",
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
    natives, dtype = [], "u8"
    for step in steps:
        if isinstance(step, ToTensor):
            if dtype != "u8":
                raise ValueError("ToTensor is listed twice")
            dtype = step._dtype
        elif isinstance(step, Normalize) and dtype == "u8":
            raise TypeError("Normalize works on tensors: put ToTensor() before it")
        natives.extend(step._native())
    if max_pixels is None:
        return _vision.Pipeline(natives, dtype)
    return _vision.Pipeline(natives, dtype, max_pixels=max_pixels)
