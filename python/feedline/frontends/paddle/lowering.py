"""Paddle's side of native lowering (frontends/lowering.py):
paddle.vision.datasets.DatasetFolder / ImageFolder, paddle.vision.transforms and paddle.io's Subset /
ConcatDataset. Only paddle's own transform classes count, and datasets
whose per-sample methods are paddle's: a look-alike, or a subclass with its
own __getitem__, may do anything, so it stays in Python."""

import numbers
import os
import sys

from feedline.frontends import lowering as _lowering
from feedline.vision import transforms as _T

_FOLDER_METHODS = ("__getitem__", "__len__", "_find_classes")
_WRAPPER_METHODS = ("__getitem__", "__len__")


class NotNative(Exception):
    """A transform with no native equivalent; the message says which and why."""


def _overridden(cls, base, names):
    for name in names:
        if getattr(cls, name, None) is not getattr(base, name, None):
            return name
    return None


def _paddle_transforms():
    return sys.modules.get("paddle.vision.transforms")


def _exact(obj):
    """True when obj's class is the one paddle.vision.transforms exports."""
    module = _paddle_transforms()
    cls = type(obj)
    return module is not None and getattr(module, cls.__name__, None) is cls


def _leaves(transform, depth=0):
    if depth <= 32 and _exact(transform) and type(transform).__name__ == "Compose":
        return [leaf for t in transform.transforms for leaf in _leaves(t, depth + 1)]
    return [transform]


def _three(values, name, owner):
    if isinstance(values, numbers.Number):
        return [float(values)] * 3
    values = [float(v) for v in values]
    if len(values) == 1:
        values *= 3
    if len(values) != 3:
        raise NotNative(f"{owner} {name} needs 1 or 3 values, got {len(values)}")
    return values


def _jitter(value, center):
    # paddle's checked range ([min, max] or None) as feedline's ColorJitter takes it.
    return (center, center) if value is None else (float(value[0]), float(value[1]))


# What the image is at each step under paddle's transforms with the PIL
# backend: "image" (a PIL image, HWC uint8), "uint8_chw" (a numpy array
# after Transpose), "hwc_normalized" (float32 HWC numpy, Normalize before
# Transpose), "tensor" (float32 CHW, after ToTensor or Normalize of a CHW array).
def from_paddle(transform):
    """(feedline steps, paddle names) equal to a paddle.vision.transforms
    object (a Compose or one transform) applied to a PIL image, or
    NotNative naming the first transform that has none. The ops: Resize,
    RandomResizedCrop, CenterCrop, RandomHorizontalFlip, ColorJitter and
    Brightness/Contrast/Saturation/HueTransform (before any conversion),
    ToTensor (CHW), Transpose((2, 0, 1)), Normalize (to_rgb=False; in 0-255
    units before ToTensor, as paddle computes it) and RandomErasing (on the
    tensor)."""
    if transform is None:
        raise NotNative("it has no transform: its samples are PIL images")
    leaves = _leaves(transform)
    names = [type(t).__name__ for t in leaves]
    steps, state, pending = [], "image", None
    for t, name in zip(leaves, names):
        try:
            if not _exact(t):
                raise NotNative(f"{name} has no native transform")
            keys = getattr(t, "keys", ("image",))
            if tuple(keys) != ("image",):
                raise NotNative(f"{name} has keys {tuple(keys)}: only the image is lowered")
            geometric_or_color = name in (
                "Resize", "RandomResizedCrop", "CenterCrop", "RandomHorizontalFlip",
                "ColorJitter", "BrightnessTransform", "ContrastTransform",
                "SaturationTransform", "HueTransform")
            if geometric_or_color and state != "image":
                raise NotNative(f"{name} after {'Transpose' if state != 'tensor' else 'ToTensor'}"
                                " works on an array, not a PIL image")
            if name == "Resize":
                size = t.size if isinstance(t.size, numbers.Integral) else tuple(t.size)
                steps.append(_T.Resize(size, t.interpolation))
            elif name == "RandomResizedCrop":
                steps.append(_T.RandomResizedCrop(tuple(t.size), tuple(t.scale), tuple(t.ratio),
                                                  t.interpolation))
            elif name == "CenterCrop":
                steps.append(_T.CenterCrop(t.size))
            elif name == "RandomHorizontalFlip":
                steps.append(_T.RandomHorizontalFlip(t.prob))
            elif name == "ColorJitter":
                steps.append(_T.ColorJitter(t.brightness, t.contrast, t.saturation, t.hue))
            elif name in ("BrightnessTransform", "ContrastTransform", "SaturationTransform"):
                if t.value is not None:
                    which = name[: -len("Transform")].lower()
                    steps.append(_T.ColorJitter(**{which: _jitter(t.value, 1.0)}))
            elif name == "HueTransform":
                if t.value is not None:
                    steps.append(_T.ColorJitter(hue=_jitter(t.value, 0.0)))
            elif name == "ToTensor":
                if state != "image":
                    raise NotNative("ToTensor after Transpose or Normalize")
                if t.data_format != "CHW":
                    raise NotNative(f"ToTensor(data_format={t.data_format!r}) gives HWC tensors")
                steps.append(_T.ToTensor())
                state = "tensor"
            elif name == "Transpose":
                if tuple(t.order) != (2, 0, 1) or state not in ("image", "hwc_normalized"):
                    raise NotNative(f"Transpose(order={tuple(t.order)}) here is not HWC to CHW")
                steps.append(_T.PILToTensor())
                if state == "hwc_normalized":
                    steps.extend(pending)
                    state = "tensor"
                else:
                    state = "uint8_chw"
            elif name == "Normalize":
                if t.to_rgb:
                    raise NotNative("Normalize(to_rgb=True) swaps the channels of an RGB image")
                mean = _three(t.mean, "mean", name)
                std = _three(t.std, "std", name)
                if state == "tensor" and t.data_format == "CHW":
                    steps.append(_T.Normalize(mean, std))
                elif state in ("image", "uint8_chw"):
                    # paddle normalizes the 0-255 values: (x - mean) / std is
                    # Normalize(mean / 255, std / 255) of the [0, 1] tensor.
                    expected = "HWC" if state == "image" else "CHW"
                    if t.data_format != expected:
                        raise NotNative(f"Normalize(data_format={t.data_format!r}) on an "
                                        f"{expected} image")
                    scaled = [_T.ConvertImageDtype("float32"),
                              _T.Normalize([m / 255 for m in mean], [s / 255 for s in std])]
                    if state == "image":
                        pending, state = scaled, "hwc_normalized"
                    else:
                        steps.extend(scaled)
                        state = "tensor"
                else:
                    raise NotNative(f"Normalize(data_format={t.data_format!r}) here has no "
                                    "native form")
            elif name == "RandomErasing":
                if state != "tensor":
                    raise NotNative("RandomErasing before ToTensor erases in 0-255 units")
                steps.append(_T.RandomErasing(prob=t.prob, scale=tuple(t.scale),
                                              ratio=tuple(t.ratio), value=t.value))
            else:
                raise NotNative(f"{name} has no native transform")
        except NotNative as e:
            raise NotNative(str(e), names) from None
        except (ValueError, TypeError, AttributeError) as e:
            raise NotNative(f"{name} has no native transform ({e})", names) from None
    if state == "image":
        raise NotNative("its transform does not end in an array or tensor (no ToTensor or "
                        "Transpose)", names)
    if state == "hwc_normalized":
        raise NotNative("its images come out HWC (Normalize without Transpose)", names)
    return steps, names


class _Paddle(_lowering.Recognizer):
    name = "paddle"

    def subset_parts(self, dataset):
        io = sys.modules.get("paddle.io")
        if io is None or not isinstance(dataset, io.Subset):
            return None
        if _overridden(type(dataset), io.Subset, _WRAPPER_METHODS):
            return None
        return dataset.dataset, dataset.indices

    def concat_parts(self, dataset):
        io = sys.modules.get("paddle.io")
        if io is None or not isinstance(dataset, getattr(io, "ConcatDataset", ())):
            return None
        if _overridden(type(dataset), io.ConcatDataset, _WRAPPER_METHODS):
            return None
        return list(dataset.datasets)

    def folder(self, dataset):
        folder = sys.modules.get("paddle.vision.datasets.folder")
        if folder is None or not isinstance(dataset, (folder.DatasetFolder, folder.ImageFolder)):
            return None
        name = type(dataset).__name__
        labelled = isinstance(dataset, folder.DatasetFolder)
        base = folder.DatasetFolder if labelled else folder.ImageFolder
        method = _overridden(type(dataset), base, _FOLDER_METHODS)
        if method is not None:
            return _lowering.Folder(dataset, reason=f"{name} overrides {method}")
        loader = getattr(dataset, "loader", None)
        if loader is folder.default_loader:
            from paddle.vision import get_image_backend

            if get_image_backend() != "pil":
                return _lowering.Folder(dataset, reason=f"paddle's image backend is {get_image_backend()}, "
                                               "not pil")
        elif loader is not folder.pil_loader:
            return _lowering.Folder(dataset, reason="its loader is not paddle's default_loader")
        try:
            steps, names = from_paddle(dataset.transform)
        except NotNative as e:
            names = e.args[1] if len(e.args) > 1 else []
            return _lowering.Folder(dataset, reason=e.args[0], names=names)
        if not labelled:
            # Its samples are [image]; the native datasets deliver (image,
            # label), and a batch with an extra field is not paddle's.
            return _lowering.Folder(dataset, reason="its samples have no label, and the native image "
                                           "datasets always deliver one", names=names)
        samples = dataset.samples
        paths = [os.fspath(path) for path, _ in samples]
        labels = [int(label) for _, label in samples]
        classes, fields = list(dataset.classes), ("image", "label")
        return _lowering.Folder(dataset, paths=paths, labels=labels, classes=classes, fields=fields,
                       steps=steps, names=names)


RECOGNIZER = _Paddle()


def lower(dataset, enabled=True, collate_fn=None):
    """frontends.lowering.lower with paddle's recognizer: the dataset to load
    and a Lowering, or (dataset, None) when it holds no image folder of
    paddle.vision's."""
    return _lowering.lower(dataset, RECOGNIZER, enabled, collate_fn)
