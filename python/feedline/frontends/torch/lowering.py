"""torch's side of native lowering (frontends/lowering.py): torchvision's
DatasetFolder / ImageFolder, torchvision.transforms (and transforms.v2) and torch's Subset /
ConcatDataset. Only torchvision's own transform classes count, and datasets
whose per-sample methods are torchvision's: a look-alike, or a subclass with
its own __getitem__, may do anything, so it stays in Python."""

import os
import sys

from feedline.frontends import lowering as _lowering
from feedline.vision import transforms as _T

# Methods whose override changes what a sample is: such a subclass stays in
# Python. (The listing methods are in too: a subclass that overrides them
# is not the dataset this module was written against.)
_FOLDER_METHODS = ("__getitem__", "__getitems__", "__len__", "find_classes", "make_dataset")
_WRAPPER_METHODS = ("__getitem__", "__getitems__", "__len__")

# What feedline.vision.transforms.from_torchvision converts.
_NATIVE_NAMES = frozenset((
    "Resize", "CenterCrop", "RandomResizedCrop", "RandomHorizontalFlip", "ToTensor",
    "PILToTensor", "ConvertImageDtype", "Normalize", "ColorJitter", "TrivialAugmentWide",
    "RandAugment", "AutoAugment", "RandomErasing"))


class NotNative(Exception):
    """A transform with no native equivalent; the message says which and why."""


def _overridden(cls, base, names):
    for name in names:
        if getattr(cls, name, None) is not getattr(base, name, None):
            return name
    return None


def _exact(obj, module_name):
    """True when obj's class is the one `module_name` exports under its name."""
    module = sys.modules.get(module_name)
    cls = type(obj)
    return module is not None and getattr(module, cls.__name__, None) is cls


def _forwarding_call(self, image):
    return self.transforms(image)


def _forwards_to_transforms(transform):
    """True for an object whose class's __call__ is exactly `return
    self.transforms(image)` (the same bytecode, names and constants), such
    as the classification presets of torchvision's reference scripts
    (ClassificationPresetTrain / ClassificationPresetEval): it is its
    .transforms."""
    call = getattr(type(transform), "__call__", None)
    code = getattr(call, "__code__", None)
    reference = _forwarding_call.__code__
    return (code is not None and code.co_code == reference.co_code
            and code.co_names == reference.co_names and code.co_consts == reference.co_consts
            and code.co_argcount == 2 and not code.co_kwonlyargcount
            and call.__defaults__ is None and call.__closure__ is None
            and "transforms" in getattr(transform, "__dict__", {}))


def _leaves(transform, depth=0):
    """The transforms of a (nested) Compose, in order."""
    if depth > 32:
        return [transform]  # a Compose inside itself: not a recipe
    if (_exact(transform, "torchvision.transforms")
            or _exact(transform, "torchvision.transforms.v2")) \
            and type(transform).__name__ == "Compose":
        return [leaf for t in transform.transforms for leaf in _leaves(t, depth + 1)]
    if _forwards_to_transforms(transform):
        return _leaves(transform.transforms, depth + 1)
    return [transform]


def _from_v2(t):
    """The feedline steps for a torchvision.transforms.v2 transform."""
    import torch

    name = type(t).__name__
    if name in ("PILToTensor", "ToImage"):
        return [_T.PILToTensor()]
    if name == "ToPureTensor":
        return []  # only the tensor's Python type changes
    if name == "ToDtype":
        if not isinstance(t.dtype, torch.dtype) or not t.scale:
            raise NotNative("ToDtype runs natively only with one dtype and scale=True "
                            "(ConvertImageDtype)")
        return [_T.ConvertImageDtype(t.dtype)]
    if name == "RandomErasing":
        # v2 keeps "random" as None and a number as a one-element list.
        value = "random" if t.value is None else t.value
        return [_T.RandomErasing(t.p, t.scale, t.ratio, value)]
    v1_class = getattr(type(t), "_v1_transform_cls", None)
    if v1_class is None or v1_class.__name__ not in _NATIVE_NAMES:
        raise NotNative(f"{name} (transforms.v2) has no native transform")
    # The v1 transform with the same parameters (what torchvision's own
    # scripting path builds), converted as v1 is.
    return [_T.from_torchvision(v1_class(**t._extract_params_for_v1_transform()))]


def convert(transform):
    """(feedline steps, torchvision names) for a torchvision transform, or
    NotNative naming the first transform that has no native equivalent."""
    if transform is None:
        raise NotNative("it has no transform: its samples are PIL images")
    leaves = _leaves(transform)
    names = [type(t).__name__ for t in leaves]
    steps, tensor = [], False
    for t, name in zip(leaves, names):
        try:
            if _exact(t, "torchvision.transforms") and name in _NATIVE_NAMES:
                step = [_T.from_torchvision(t)]
            elif _exact(t, "torchvision.transforms.v2"):
                step = _from_v2(t)
            else:
                raise NotNative(f"{name} has no native transform")
        except NotNative as e:
            raise NotNative(str(e), names) from None
        except (ValueError, TypeError, AttributeError) as e:
            raise NotNative(f"{name} has no native transform ({e})", names) from None
        if name in ("ToTensor", "PILToTensor", "ToImage"):
            tensor = True
        steps.extend(step)
    if not tensor:
        # torch's collate cannot batch PIL images: the transform must make a tensor.
        raise NotNative("its transform does not end in a tensor (no ToTensor or PILToTensor)",
                        names)
    return steps, names


class _Torchvision(_lowering.Recognizer):
    name = "torch"

    def subset_parts(self, dataset):
        data = sys.modules.get("torch.utils.data")
        if data is None or not isinstance(dataset, data.Subset):
            return None
        if _overridden(type(dataset), data.Subset, _WRAPPER_METHODS):
            return None
        return dataset.dataset, dataset.indices

    def concat_parts(self, dataset):
        data = sys.modules.get("torch.utils.data")
        if data is None or not isinstance(dataset, data.ConcatDataset):
            return None
        if _overridden(type(dataset), data.ConcatDataset, _WRAPPER_METHODS):
            return None
        return list(dataset.datasets)

    def folder(self, dataset):
        folder = sys.modules.get("torchvision.datasets.folder")
        if folder is None or not isinstance(dataset, folder.DatasetFolder):
            return None
        name = type(dataset).__name__
        base = folder.ImageFolder if isinstance(dataset, folder.ImageFolder) else \
            folder.DatasetFolder
        method = _overridden(type(dataset), base, _FOLDER_METHODS)
        if method is not None:
            return _lowering.Folder(dataset, reason=f"{name} overrides {method}")
        loader = getattr(dataset, "loader", None)
        if loader is folder.default_loader:
            import torchvision

            if torchvision.get_image_backend() != "PIL":
                return _lowering.Folder(dataset, reason="torchvision's image backend is "
                                               f"{torchvision.get_image_backend()}, not PIL")
        elif loader is not folder.pil_loader:
            return _lowering.Folder(dataset, reason="its loader is not torchvision's default_loader")
        try:
            steps, names = convert(dataset.transform)
        except NotNative as e:
            names = e.args[1] if len(e.args) > 1 else []
            return _lowering.Folder(dataset, reason=e.args[0], names=names)
        samples = dataset.samples
        return _lowering.Folder(
            dataset,
            paths=[os.fspath(path) for path, _ in samples],
            labels=[int(label) for _, label in samples],
            classes=list(dataset.classes),
            steps=steps,
            names=names,
            target_transform=dataset.target_transform,
        )


RECOGNIZER = _Torchvision()


def lower(dataset, enabled=True, collate_fn=None):
    """frontends.lowering.lower with torch's recognizer: the dataset to load
    and a Lowering, or (dataset, None) when it holds no image folder of
    torchvision's."""
    return _lowering.lower(dataset, RECOGNIZER, enabled, collate_fn)
