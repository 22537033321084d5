"""Recognizes a framework's own image dataset (torchvision's ImageFolder,
Paddle's DatasetFolder) whose transforms feedline implements natively and
loads it with the native pipeline instead (docs/python.md, "Native
transforms"). Anything it cannot lower is returned unchanged.

lower(dataset, recognizer, enabled, collate_fn=None)
    -> (dataset to load, Lowering or None)

The framework-specific recognition (a Recognizer) lives in
frontends/torch/lowering.py and frontends/paddle/lowering.py, which call
this module; this module walks Subset / ConcatDataset, builds the native
dataset and words the summary, and imports neither.
"""

import logging
import operator
import os
import random
import sys

from feedline import io as _io
from feedline._feedline import vision as _vision
from feedline.vision import datasets as _datasets
from feedline.vision import transforms as _transforms

_LOG = logging.getLogger("feedline")

# What the native decoder reads (by content); a file with another suffix
# (.bmp, .tif, .ppm, .pgm) is decoded by PIL, so its dataset stays in Python.
_NATIVE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")


class Lowering:
    """What was lowered: `summary` is the one-line description logged at the
    first batch and reported in stats()["native_transforms"]."""

    def __init__(self, summary, lowered, kept, native=None, reason=None):
        self.summary = summary
        self.lowered = list(lowered)  # names of the transforms run natively
        self.kept = list(kept)        # names of what stays in Python
        # True when the loader's dataset runs without the interpreter.
        self.native = bool(lowered) and not kept if native is None else bool(native)
        self.reason = reason          # why the dataset stays in Python, or None
        self._logged = False

    def stats(self):
        """The dict stats()["native_transforms"] holds; "text" is the summary."""
        return {"native": self.native, "lowered": list(self.lowered), "kept": list(self.kept),
                "reason": self.reason, "text": self.summary}

    def log_once(self):
        """Logs the summary through the "feedline" logger at INFO, once."""
        if not self._logged:
            self._logged = True
            _LOG.info("%s", self.summary)

    def __repr__(self):
        return f"Lowering({self.summary!r})"


class _Part:
    """The outcome for one dataset of the tree: `dataset` is what to load
    (the native dataset, or the original when not lowered)."""

    def __init__(self, dataset, description, lowered=(), kept=(), reason=None, native=False,
                 fields=None, shape=None):
        self.dataset = dataset
        self.description = description  # "ImageFolder + 4 transforms", "Subset of ..."
        self.lowered = list(lowered)
        self.kept = list(kept)
        self.reason = reason            # None when lowered
        self.native = native            # no Python left in its samples
        self.fields = fields
        self.shape = shape              # the image's fixed shape

    @property
    def ok(self):
        return self.reason is None


class Recognizer:
    """What a framework's recognizer provides (frontends/torch/lowering.py,
    frontends/paddle/lowering.py): its name ("torch", "paddle", as the
    summary says feedline.<name>) and how it finds its framework's Subset,
    ConcatDataset and image folder."""

    name = ""

    def subset_parts(self, dataset):
        """(inner dataset, indices) for the framework's Subset, else None."""
        return None

    def concat_parts(self, dataset):
        """The part list of the framework's ConcatDataset, else None."""
        return None

    def folder(self, dataset):
        """A Folder for the framework's image folder dataset, None for any
        other dataset."""
        return None


class Folder:
    """A recognized image folder: its listing, what its __getitem__ does,
    or why it must stay in Python.

    paths, labels, classes: the dataset's own listing, in its order.
    fields: the sample's fields, ("image", "label").
    steps: the feedline transforms equal to its transform.
    names: the framework's transform names, in order.
    target_transform: a callable kept in Python on the label, or None.
    reason: why it cannot be lowered (then the rest may be unset)."""

    def __init__(self, dataset, reason=None, paths=None, labels=None, classes=None,
                 fields=("image", "label"), steps=None, names=(), target_transform=None):
        self.dataset = dataset
        self.reason = reason
        self.paths = paths
        self.labels = labels
        self.classes = classes
        self.fields = tuple(fields)
        self.steps = steps
        self.names = list(names)
        self.target_transform = target_transform


class _LoweredFolder(_datasets._ImageDataset):
    """A framework's image folder loaded natively: its files, labels and
    classes, with the native equivalent of its transform. `source` is the
    framework's dataset it stands for; `transform` is that dataset's
    transform, as given."""

    def __init__(self, native, folder):
        _io.NativeDataset.__init__(self, native, folder.fields)
        self.source = folder.dataset
        self.transform = getattr(folder.dataset, "transform", None)
        self.root = getattr(folder.dataset, "root", native.root)
        # Runs in Python on the label, as the framework's dataset runs it.
        self.target_transform = self._python_target_transform = folder.target_transform

    def __getitem__(self, index):
        # Called when the sample is loaded in Python: with a target_transform,
        # inside a ConcatDataset with such a part, or by the user. As in the
        # framework's dataset, each call draws new random parameters: from
        # `random`, which the loader seeds per sample from (seed, epoch,
        # index) (a native dataset's own __getitem__ would draw seed 0's).
        index = operator.index(index)
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of range for a dataset of {n} samples")
        sample = self._native.get(index % n, 0, random.getrandbits(63))
        label = int(sample["label"])
        if self._python_target_transform is not None:
            label = self._python_target_transform(label)
        return sample["image"], label


def _pil_pixel_limit():
    # PIL refuses an image over twice Image.MAX_IMAGE_PIXELS (it only warns
    # between one and two times): the native limit is set where PIL's error
    # is, so the same files fail. None (PIL's check off) lifts it.
    limit = getattr(sys.modules.get("PIL.Image"), "MAX_IMAGE_PIXELS",
                    _datasets.DEFAULT_MAX_PIXELS)
    if limit is None:
        return 2**63 - 1
    return min(2 * int(limit), 2**63 - 1)


def _describe(name, count):
    return f"{name} + {count} transform{'s' if count != 1 else ''}"


def _lower_folder(folder, build):
    """The _Part for a recognized Folder; without `build`, only its name."""
    ds = folder.dataset
    name = type(ds).__name__
    if folder.reason is not None:
        return _Part(ds, name, kept=folder.names or [name], reason=folder.reason)
    if not build:
        return _Part(ds, name, kept=folder.names, reason="native_transforms=False")
    others = [p for p in folder.paths if not p.lower().endswith(_NATIVE_SUFFIXES)]
    if others:
        return _Part(ds, name, kept=folder.names or [name],
                     reason=f"{len(others)} of its files are not JPEG, PNG or WebP by name "
                            f"(e.g. {os.path.basename(others[0])}), which PIL decodes")
    try:
        pipeline = _transforms.build_pipeline(_transforms.Compose(folder.steps),
                                              _pil_pixel_limit())
    except Exception as e:  # an order or value the native pipeline refuses
        return _Part(ds, name, kept=folder.names, reason=f"its transform has no native form: {e}")
    shape = pipeline.fixed_shape()
    if shape is None:
        # The framework's collate would stack images of different sizes
        # (and fail); the native loader would pad them instead.
        return _Part(ds, name, kept=folder.names,
                     reason="its images come out in different sizes (no crop to a fixed size)")
    try:
        native = _vision.ImageDataset("", list(folder.paths), list(folder.labels),
                                      list(folder.classes), pipeline,
                                      _datasets.DEFAULT_MAX_FILE_BYTES)
    except Exception as e:
        return _Part(ds, name, kept=folder.names, reason=f"its listing has no native form: {e}")
    lowered = _LoweredFolder(native, folder)
    kept = []
    description = _describe(name, len(folder.names))
    if folder.target_transform is not None:
        kept = ["target_transform"]
    return _Part(lowered, description, lowered=folder.names, kept=kept,
                 native=folder.target_transform is None, fields=folder.fields,
                 shape=tuple(shape))


def _lower_tree(dataset, recognizer, build=True):
    """The _Part for `dataset`, or None when nothing in it is a framework
    image folder. Without `build` nothing native is made (the opt-out)."""
    parts = recognizer.subset_parts(dataset)
    if parts is not None:
        inner, indices = parts
        part = _lower_tree(inner, recognizer, build)
        if part is None:
            return None
        name = type(dataset).__name__
        if not part.ok:
            return _Part(dataset, f"{name} of {part.description}", kept=part.kept,
                         reason=part.reason)
        try:
            indices = [int(i) for i in indices]
            lowered = _io.Subset(part.dataset, indices)
        except Exception as e:  # an index out of range: the framework's loader raises it
            return _Part(dataset, f"{name} of {part.description}", kept=part.lowered,
                         reason=f"its indices have no native form: {e}")
        return _Part(lowered, f"{name} of {part.description}", part.lowered, part.kept,
                     native=part.native, fields=part.fields, shape=part.shape)
    datasets = recognizer.concat_parts(dataset)
    if datasets is not None:
        results = [_lower_tree(d, recognizer, build) for d in datasets]
        if all(r is None for r in results):
            return None
        name = type(dataset).__name__
        described = ", ".join("another dataset" if r is None else r.description
                              for r in results)
        description = f"{name} of {described}"
        lowered_names = [n for r in results if r is not None for n in r.lowered]
        kept_names = [n for r in results if r is not None for n in r.kept]
        # All parts or none: a part left in Python would hand out the
        # framework's tensors next to the native parts' arrays.
        for i, r in enumerate(results):
            if r is None:
                return _Part(dataset, description, kept=kept_names or [name],
                             reason=f"part {i} ({type(datasets[i]).__name__}) is not an image "
                                    "folder feedline lowers")
            if not r.ok:
                return _Part(dataset, description, kept=kept_names + r.lowered,
                             reason=f"part {i}: {r.reason}")
        if len({(r.fields, r.shape) for r in results}) > 1:
            return _Part(dataset, description, kept=lowered_names,
                         reason="its parts give samples of different structure or image size")
        lowered = _io.ConcatDataset([r.dataset for r in results])
        return _Part(lowered, description, lowered_names, kept_names,
                     native=all(r.native for r in results), fields=results[0].fields,
                     shape=results[0].shape)
    folder = recognizer.folder(dataset)
    if folder is None:
        return None
    return _lower_folder(folder, build)


def _summary(framework_name, part):
    prefix = f"feedline.{framework_name}: "
    if not part.ok:
        return prefix + f"{part.description} runs in Python: {part.reason}"
    text = prefix + f"{part.description} run natively"
    if part.kept:
        text += "; the target_transform runs in Python on the label"
    return text


def lower(dataset, recognizer, enabled=True, collate_fn=None):
    """The dataset to load and a Lowering, or (dataset, None) when the
    dataset holds no image folder of the framework's (then nothing is
    logged). `recognizer` is the framework's Recognizer. With `enabled` False the
    dataset is returned unchanged, and a recognized image folder is reported
    as staying in Python. A `collate_fn` keeps it in Python too: it would be
    handed the native samples (numpy arrays and numpy integers) where the
    framework's dataset returns tensors and ints."""
    if not isinstance(enabled, bool):
        raise TypeError(f"native_transforms must be True or False, got {enabled!r}")
    build = enabled and collate_fn is None
    try:
        part = _lower_tree(dataset, recognizer, build=build)
    except Exception as e:  # a dataset this module misreads still loads, as it is
        summary = (f"feedline.{recognizer.name}: {type(dataset).__name__} runs in Python: "
                   f"inspecting it raised {type(e).__name__}: {e}")
        return dataset, Lowering(summary, [], [type(dataset).__name__], native=False,
                                 reason=f"inspecting it raised {type(e).__name__}: {e}")
    if part is None:
        return dataset, None
    if not build:
        reason = ("native_transforms=False" if not enabled else
                  "a collate_fn is given, and it would receive numpy arrays, not tensors")
        part = _Part(dataset, part.description, kept=part.kept, reason=reason)
    summary = _summary(recognizer.name, part)
    if not part.ok:
        return dataset, Lowering(summary, [], part.kept, native=False, reason=part.reason)
    return part.dataset, Lowering(summary, part.lowered, part.kept, native=part.native)
