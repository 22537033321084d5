"""The one-line swap for torchvision's detection references: the training
set their train.py builds, `coco_utils.get_coco(root, image_set,
DetectionPresetTrain(data_augmentation=...))` with any of its presets (hflip,
ssd, ssdlite, multiscale, lsj) or `DetectionPresetEval()`,
batched by `utils.collate_fn`, loads through feedline.vision.datasets.
CocoDetection, in C++, and comes out as the references' own batches: a tuple
of images and a tuple of target dicts.

The references are scripts a user copies, not a library, so their classes
are recognized by their source: each class or function the dataset's
samples go through must be, line for line, the one in torchvision 0.14.1's
references/detection (a SHA-256 of its source, blank lines and trailing
spaces aside). An edited copy may do anything and stays in Python, and
stats()["native_transforms"] says which part differs. Transforms the
native pipeline does not have yet (SimpleCopyPaste, with its batch-level
collate) keep the dataset in Python, named likewise.

What a batch is (docs/detection.md, "The one-line swap"): per image, the
image float32 [3, H, W] and "boxes", "labels", "masks" (uint8), "image_id"
(int64 [1]) and, where ConvertCocoPolysToMask gives them, "keypoints"
(float32 [n, 17, 3]; the eval and hflip presets only, since the others
leave them unmoved in the references) as views of the padded native
batch; "area" and "iscrowd" as the references' ConvertCocoPolysToMask
makes them, from the dataset's own annotations (one entry per non-crowd
object, including objects whose box it drops: its quirk, kept). With RandomZoomOut or RandomIoUCrop (the ssd and
ssdlite presets) the masks are, as theirs, at the source image's size,
mirrored with the image, one per object before the crop (masks="source").
With RandomShortestSize and ScaleJitter (multiscale, lsj) the references
resize the source-size masks (nearest); feedline draws them from the
polygons at the output size, which differs along the edges.

The random presets draw from feedline's generator, (seed, epoch, index),
not torch's: their batches follow the same distributions as the
references', not the same draws. RandomPhotometricDistort's adjustments are
torchvision's arithmetic on tensors; the references run them on PIL images,
whose rounding differs by a level or so (and whose hue is quantized to 256
steps).
"""

import functools
import hashlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import textwrap
import weakref

from feedline import io as _io
from feedline.frontends import lowering as _lowering
from feedline.vision import datasets as _datasets
from feedline.vision import transforms as _T

# torchvision 0.14.1's references/detection, by name: the fingerprint of
# each piece of code a sample goes through (see _fingerprint).
_REFERENCE_0_14 = {
    "CocoDetection": "c9820b451ca8e470",
    "ConvertCocoPolysToMask": "07aa40c01d0f61e1",
    "convert_coco_poly_to_mask": "557a5d76f0ac4677",
    "Compose": "7260d4e897344f12",
    "RandomHorizontalFlip": "9545db25f7f3f8ee",
    "PILToTensor": "46507360580ee5bd",
    "ConvertImageDtype": "540be03c7917745f",
    "RandomPhotometricDistort": "976726c5b99014b1",
    "RandomZoomOut": "bc0984ec1820b9fe",
    "RandomIoUCrop": "4d2c1f81026a7c1e",
    "RandomShortestSize": "e3bb176353b6a2db",
    "ScaleJitter": "54cef40e45b73fa0",
    "FixedSizeCrop": "b23133c466f2f5c6",
    "DetectionPresetTrain.__call__": "0110baa9d22fef5b",
    "DetectionPresetEval.__call__": "0110baa9d22fef5b",
}

# The references' transforms with no native form yet: named in the reason.
_NOT_YET = ("SimpleCopyPaste",)


# The references' transforms feedline runs natively.
_NATIVE_STEPS = ("RandomHorizontalFlip", "PILToTensor", "ConvertImageDtype",
                 "RandomPhotometricDistort", "RandomZoomOut", "RandomIoUCrop",
                 "RandomShortestSize", "ScaleJitter", "FixedSizeCrop")

# The references' steps that move pixels, and those among them that leave
# the masks as they are (their quirk: the masks stay at the source size).
_GEOMETRIC = ("RandomHorizontalFlip", "RandomZoomOut", "RandomIoUCrop", "RandomShortestSize",
              "ScaleJitter", "FixedSizeCrop")
_MASKS_STAY = ("RandomZoomOut", "RandomIoUCrop")


@functools.lru_cache(maxsize=64)
def _fingerprint(obj):
    """SHA-256 (16 hex digits) of obj's source, dedented, without blank
    lines or trailing spaces; None when the source cannot be read."""
    try:
        lines = textwrap.dedent(inspect.getsource(obj)).splitlines()
    except (OSError, TypeError):
        return None
    text = "\n".join(line.rstrip() for line in lines if line.strip())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _is_reference(obj, name):
    """True when obj (a class or function) is the references' `name`: its
    source, and for a class every method in it, as the references wrote them."""
    if getattr(obj, "__name__", None) != name.rsplit(".", 1)[-1] or \
            _fingerprint(obj) != _REFERENCE_0_14[name]:
        return False
    return not inspect.isclass(obj) or _own_methods(obj)


def _transpose(batch):
    return tuple(zip(*batch))


def _is_transpose(function):
    """True for a function whose code is exactly `return tuple(zip(*batch))`,
    the references' utils.collate_fn (the same bytecode, names and constants)."""
    code = getattr(function, "__code__", None)
    reference = _transpose.__code__
    return (code is not None and code.co_code == reference.co_code
            and code.co_names == reference.co_names and code.co_consts == reference.co_consts
            and code.co_argcount == 1 and not code.co_kwonlyargcount
            and getattr(function, "__defaults__", None) is None
            and getattr(function, "__closure__", None) is None)


class _NotLowered(Exception):
    """Why a recognized references dataset stays in Python."""


def _unwrap_subsets(dataset):
    """(innermost dataset, its indices or None, the Subsets' names)."""
    data = sys.modules.get("torch.utils.data")
    indices, names = None, []
    while data is not None and type(dataset) is data.Subset:
        names.append("Subset")
        inner = [int(i) for i in dataset.indices]
        indices = inner if indices is None else [inner[i] for i in indices]
        dataset = dataset.dataset
    return dataset, indices, names


def _references_dataset(dataset):
    """True for the references' coco_utils.CocoDetection (a torchvision
    CocoDetection whose class is the references', exactly)."""
    datasets = sys.modules.get("torchvision.datasets")
    if datasets is None or not isinstance(dataset, datasets.CocoDetection):
        return False
    return _is_reference(type(dataset), "CocoDetection")


def _leaves(transform, depth=0):
    """The transforms of the references' (nested) Compose and presets, in order."""
    if depth > 32:
        raise _NotLowered("its transforms nest deeper than 32 levels")
    cls = type(transform)
    if _is_reference(cls, "Compose"):
        return [leaf for t in transform.transforms for leaf in _leaves(t, depth + 1)]
    for preset in ("DetectionPresetTrain", "DetectionPresetEval"):
        if cls.__name__ == preset:
            if not _is_reference(cls.__call__, preset + ".__call__"):
                raise _NotLowered(f"its {preset} is not the references' (its __call__ differs)")
            return _leaves(transform.transforms, depth + 1)
    return [transform]


def _replaced_on_instance(obj):
    """The method set on `obj` itself that its class's source does not show
    (nn.Module calls self.forward, found on the instance first), or None."""
    for name in ("forward", "__call__"):
        if name in getattr(obj, "__dict__", {}):
            return name
    return None


def _jitter_range(distort, part, name, identity):
    """The factor range of one of RandomPhotometricDistort's ColorJitters
    (None, torchvision's "off", is the identity range)."""
    import torchvision.transforms

    jitter = getattr(distort, part, None)
    if type(jitter) is not torchvision.transforms.ColorJitter or \
            _replaced_on_instance(jitter) is not None:
        raise _NotLowered(f"its RandomPhotometricDistort's {part} is not torchvision's ColorJitter")
    value = getattr(jitter, name)
    return list(identity) if value is None else [float(v) for v in value]


def _photometric_distort(t):
    return _T.RandomPhotometricDistort(
        contrast=_jitter_range(t, "_contrast", "contrast", (1, 1)),
        saturation=_jitter_range(t, "_saturation", "saturation", (1, 1)),
        hue=_jitter_range(t, "_hue", "hue", (0, 0)),
        brightness=_jitter_range(t, "_brightness", "brightness", (1, 1)), p=float(t.p))


def _interpolation(mode):
    """A references' transform's InterpolationMode, if feedline has it."""
    name = str(getattr(mode, "value", mode)).lower()
    if name not in ("bilinear", "nearest"):
        raise _NotLowered(f"its {name} interpolation has no native form")
    return name


def _check_masks_follow(names):
    """With masks="source" the masks stay at the source size; the
    references' RandomShortestSize, ScaleJitter and FixedSizeCrop would
    still resize or crop them after a RandomZoomOut or RandomIoUCrop."""
    stay = [i for i, name in enumerate(names) if name in _MASKS_STAY]
    for i, name in enumerate(names):
        if stay and i > stay[0] and name in ("RandomShortestSize", "ScaleJitter",
                                             "FixedSizeCrop"):
            raise _NotLowered(f"its {name} comes after {names[stay[0]]}, and would resize the "
                              "masks that one leaves at the source size")


def _check_distort_order(names):
    """A RandomPhotometricDistort runs natively on the whole image when it
    comes before every geometric step, or on the output after all of them:
    between two, the native pipeline would not see what the references'
    sees (a zoom-out's fill, a crop's mean)."""
    geometric = [i for i, name in enumerate(names) if name in _GEOMETRIC]
    for i, name in enumerate(names):
        if name == "RandomPhotometricDistort" and geometric and \
                geometric[0] < i < geometric[-1]:
            raise _NotLowered("its RandomPhotometricDistort comes between geometric steps")


def _native_step(name, t):
    """The feedline transform equal to the references' geometric or
    photometric step `t`, or None for the tensor conversions. Raises
    ValueError or TypeError for parameters feedline refuses or that would
    make torch's loader fail (a fill of one value, a float trials)."""
    if name == "RandomHorizontalFlip":
        return _T.RandomHorizontalFlip(float(t.p))
    if name == "RandomPhotometricDistort":
        return _photometric_distort(t)
    if name == "RandomZoomOut":
        if len(t.fill) != 3:  # PIL's pad takes one per channel
            raise ValueError(f"fill has {len(t.fill)} values, not 3")
        return _T.RandomZoomOut(fill=[float(v) for v in t.fill], side_range=tuple(t.side_range),
                                p=float(t.p))
    if name == "RandomIoUCrop":
        if not isinstance(t.trials, int):  # range(trials) in theirs
            raise TypeError(f"trials is {type(t.trials).__name__}, not int")
        return _T.RandomIoUCrop(t.min_scale, t.max_scale, t.min_aspect_ratio,
                                t.max_aspect_ratio, list(t.options), t.trials)
    if name == "RandomShortestSize":
        return _T.RandomShortestSize(list(t.min_size), t.max_size,
                                     _interpolation(t.interpolation))
    if name == "ScaleJitter":
        return _T.ScaleJitter(tuple(t.target_size), tuple(t.scale_range),
                              _interpolation(t.interpolation))
    if name == "FixedSizeCrop":
        if t.padding_mode != "constant":
            raise ValueError(f"padding_mode {t.padding_mode!r} (natively only 'constant')")
        return _T.FixedSizeCrop((t.crop_height, t.crop_width), fill=t.fill)
    return None


def _native_steps(leaves):
    """The feedline transforms equal to the references' `leaves` (after
    ConvertCocoPolysToMask), and their names."""
    import torch

    steps, names, tensor = [], [], False
    for t in leaves:
        name = type(t).__name__
        names.append(name)
        if name in _NOT_YET:
            raise _NotLowered(f"{name} has no native form yet")
        if _replaced_on_instance(t) is not None:
            raise _NotLowered(f"its {name}'s {_replaced_on_instance(t)} is replaced")
        if name not in _NATIVE_STEPS or not _is_reference(type(t), name):
            raise _NotLowered(f"{name} is not one of torchvision's references' transforms "
                              "(or its source differs from theirs)")
        try:
            native = _native_step(name, t)
            if native is not None:
                native._native()  # feedline's checks, here rather than in the dataset
        except (ValueError, TypeError) as e:  # torch's loader may take it, or fail its own way
            raise _NotLowered(f"its {name}'s parameters have no native form: {e}") from None
        if native is not None:
            steps.append(native)
        if name == "PILToTensor":
            steps.append(_T.PILToTensor())
            tensor = True
        elif name == "ConvertImageDtype":
            if t.dtype is not torch.float32:
                raise _NotLowered(f"ConvertImageDtype({t.dtype}) runs natively only to float32")
            if not tensor:
                raise _NotLowered("ConvertImageDtype comes before PILToTensor")
            steps.append(_T.ConvertImageDtype("float32"))
    if not tensor:
        raise _NotLowered("its images stay PIL images (no PILToTensor)")
    _check_distort_order(names)
    _check_masks_follow(names)
    return steps, names


def _annotation_snapshot(dataset):
    """What the dataset's samples are made of, as torchvision's CocoDetection
    reads it when a sample is loaded (`coco.loadImgs(id)`, and
    `coco.loadAnns(coco.getAnnIds(id))`, for each of `ids`, in that order),
    written as a COCO instances file into a folder of its own: (path,
    folder, {image id: (areas, crowd flags) of its non-crowd objects}). torchvision keeps the parsed file, not its path, and a script
    may have edited it (relabelled, filtered) since: the snapshot is what
    the references would load now, whatever file it came from."""
    coco = dataset.coco
    images, annotations, counted = [], [], {}
    keypoints = Keypoints()
    for image_id in dataset.ids:
        images.append(coco.loadImgs(image_id)[0])
        anns = coco.loadAnns(coco.getAnnIds(image_id))
        annotations.extend(anns)
        # ConvertCocoPolysToMask's area and iscrowd: every non-crowd object.
        kept = [ann for ann in anns if ann["iscrowd"] == 0]
        counted[int(image_id)] = ([ann["area"] for ann in kept], [ann["iscrowd"] for ann in kept])
        keypoints.add(int(image_id), anns, kept)
    path, folder = write_snapshot(images, annotations)
    return path, folder, counted, keypoints


class Keypoints:
    """Which images' targets have "keypoints", as ConvertCocoPolysToMask
    decides it (those whose first non-crowd object lists them), and how many
    each object lists; _NotLowered where feedline's would differ from its:
    an image whose objects do not all list as many (torch cannot stack
    them), counts that differ between images (feedline pads to the most),
    or an unlabelled keypoint (visibility 0) at a position other than (0,
    0), which feedline writes as (0, 0, 0) and the references keep unless
    they flip it."""

    def __init__(self):
        self.images, self.count = set(), None

    def add(self, image_id, anns, kept):
        listed = [ann["keypoints"] for ann in anns if "keypoints" in ann]
        for points in listed:
            if not isinstance(points, list) or len(points) % 3 != 0:
                raise _NotLowered("an annotation's keypoints are not a list of x, y, visibility "
                                  "triples")
            if self.count is None:
                self.count = len(points) // 3
            if len(points) != 3 * self.count:
                raise _NotLowered("its annotations list different numbers of keypoints")
            if any(v == 0 and (x != 0 or y != 0)
                   for x, y, v in zip(points[0::3], points[1::3], points[2::3])):
                raise _NotLowered("a keypoint with visibility 0 has a position, which the "
                                  "references keep and feedline writes as (0, 0, 0)")
        if kept and "keypoints" in kept[0]:
            if any("keypoints" not in ann for ann in kept):
                raise _NotLowered(f"image {image_id}'s objects do not all list keypoints, which "
                                  "the references' ConvertCocoPolysToMask stacks")
            self.images.add(image_id)


def write_snapshot(images, annotations):
    """`images` and `annotations` written as a COCO instances file into a
    folder of its own: (path, folder), or _NotLowered when JSON cannot hold
    them."""
    folder = tempfile.mkdtemp(prefix="feedline-detection-swap-")
    path = os.path.join(folder, "instances.json")
    try:
        # One dumps (json's C encoder) and one write: json.dump to a file
        # encodes in Python, 2-3 times slower.
        text = json.dumps({"images": images, "annotations": annotations}, allow_nan=False)
        with open(path, "w") as f:
            f.write(text)
    except (TypeError, ValueError) as e:  # a value JSON cannot hold
        shutil.rmtree(folder, ignore_errors=True)
        raise _NotLowered(f"its annotations have no JSON form: {e}") from None
    return path, folder


def _check_methods(dataset):
    """The methods a sample goes through are the ones whose source was
    checked: none replaced on the class (its functions are its own, by
    their qualified names), nor on torchvision's CocoDetection, nor set on
    the dataset itself."""
    import torchvision.datasets

    base = torchvision.datasets.CocoDetection
    for name in ("__getitem__", "__len__", "_load_image", "_load_target"):
        function = getattr(base, name, None)
        if getattr(function, "__qualname__", None) != f"CocoDetection.{name}" or \
                getattr(function, "__module__", None) != base.__module__:
            raise _NotLowered(f"torchvision's CocoDetection.{name} is replaced")
        if name in vars(dataset):
            raise _NotLowered(f"the dataset's {name} is replaced")


def _own_methods(cls):
    """True when every function in the class's namespace was defined in
    its body (a method assigned to the class later is not what its source
    shows)."""
    for name, value in vars(cls).items():
        function = getattr(value, "__func__", value)
        if inspect.isfunction(function) and (
                function.__qualname__ != f"{cls.__qualname__}.{name}"
                or function.__module__ != cls.__module__):
            return False
    return True


class DetectionBatches:
    """Turns a native CocoDetection batch (tensors, padded) into the
    references' batch: (images, targets), tuples of one entry per image.
    `counted`: by image id, the areas and crowd flags ConvertCocoPolysToMask
    gives (every non-crowd object, the ones whose box it drops included);
    `keypoints`: the ids of the images whose targets have "keypoints"."""

    def __init__(self, counted, keypoints=frozenset()):
        self._counted = counted
        self._keypoints = keypoints

    def __call__(self, batch):
        import torch

        images, sizes, counts = batch["image"], batch["image_size"], batch["boxes_lengths"]
        source_masks = "masks_size" in batch
        out_images, targets = [], []
        for i in range(len(sizes)):
            h, w = (int(v) for v in sizes[i])
            n = int(counts[i])
            areas, crowds = self._counted[int(batch["image_id"][i])]
            out_images.append(images[i, :, :h, :w])
            if source_masks:  # the ssd presets' masks: source size, every object
                mh, mw = (int(v) for v in batch["masks_size"][i])
                masks = batch["masks"][i, :int(batch["masks_lengths"][i]), :mh, :mw]
            else:
                masks = batch["masks"][i, :n, :h, :w]
            target = {
                "boxes": batch["boxes"][i, :n],
                "labels": batch["labels"][i, :n],
                "masks": masks,
                "image_id": batch["image_id"][i:i + 1],
            }
            if int(batch["image_id"][i]) in self._keypoints:
                target["keypoints"] = batch["keypoints"][i, :n]
            target["area"] = torch.tensor(areas)  # as torch.tensor makes them from the lists
            target["iscrowd"] = torch.tensor(crowds)
            targets.append(target)
        return tuple(out_images), tuple(targets)


class Lowered:
    """A recognized references dataset: `dataset` is what to load (native,
    or the user's when it stays in Python), `lowering` the Lowering that
    stats() reports, `batches` the DetectionBatches turning a native batch
    into the references' (None when it stays in Python)."""

    def __init__(self, dataset, lowering, batches=None):
        self.dataset = dataset
        self.lowering = lowering
        self.batches = batches


def lower(dataset, enabled, collate_fn, batched):
    """A Lowered for torchvision's detection references' dataset (with
    `collate_fn` the references' utils.collate_fn and `batched` True), or
    None for any other dataset."""
    inner, indices, wrappers = _unwrap_subsets(dataset)
    try:
        recognized = _references_dataset(inner)
    except Exception:  # a class whose source cannot be read is not theirs
        recognized = False
    if not recognized:
        return None
    description = " of ".join(wrappers + ["CocoDetection (torchvision's detection references)"])
    try:
        native, names, (counted, keypoints) = _build(inner, indices, enabled, collate_fn,
                                                     batched)
    except _NotLowered as e:
        reason = str(e)
        summary = f"feedline.torch: {description} runs in Python: {reason}"
        return Lowered(dataset, _lowering.Lowering(summary, [], ["CocoDetection"], native=False,
                                                   reason=reason))
    summary = (f"feedline.torch: {description} + ConvertCocoPolysToMask + "
               f"{len(names)} transform{'s' if len(names) != 1 else ''} run natively")
    lowering = _lowering.Lowering(summary, ["ConvertCocoPolysToMask"] + names, [], native=True)
    return Lowered(native, lowering, DetectionBatches(counted, keypoints))


def _build(dataset, indices, enabled, collate_fn, batched):
    """(native dataset, transform names, the objects' areas and crowd flags
    by image id), or _NotLowered saying why not."""
    if not enabled:
        raise _NotLowered("native_transforms=False")
    if not batched:
        raise _NotLowered("it is loaded without batching (batch_size=None)")
    if collate_fn is None or not _is_transpose(collate_fn):
        raise _NotLowered("its collate_fn is not the references' utils.collate_fn")
    for attribute in ("transform", "target_transform", "transforms"):
        if getattr(dataset, attribute, None) is not None:
            raise _NotLowered(f"its {attribute} is set (the references set _transforms only)")
    transforms = getattr(dataset, "_transforms", None)
    leaves = [] if transforms is None else _leaves(transforms)
    if not leaves or not _is_reference(type(leaves[0]), "ConvertCocoPolysToMask") or \
            _replaced_on_instance(leaves[0]) is not None:
        raise _NotLowered("its transforms do not start with the references' "
                          "ConvertCocoPolysToMask")
    module = sys.modules.get(type(leaves[0]).__module__)
    if not _is_reference(getattr(module, "convert_coco_poly_to_mask", None),
                         "convert_coco_poly_to_mask"):
        raise _NotLowered("its convert_coco_poly_to_mask is not the references'")
    steps, names = _native_steps(leaves[1:])
    _check_methods(dataset)
    files = [img["file_name"] for img in dataset.coco.loadImgs(dataset.ids)]
    others = [f for f in files if not f.lower().endswith(_lowering._NATIVE_SUFFIXES)]
    if others:
        raise _NotLowered(f"{len(others)} of its images are not JPEG, PNG or WebP by name "
                          f"(e.g. {others[0]}), which PIL decodes")
    path, folder, counted, keypoints = _annotation_snapshot(dataset)
    if keypoints.images:
        _check_keypoints_follow(names, keypoints.count)
    try:
        masks = "source" if any(name in _MASKS_STAY for name in names) else True
        native = _datasets.CocoDetection(
            dataset.root, path, steps, masks=masks, max_pixels=_lowering._pil_pixel_limit(),
            annotation_index=False, keypoints=bool(keypoints.images),
            keypoint_flip=_datasets.COCO_PERSON_KEYPOINT_FLIP
            if keypoints.images and keypoints.count == 17 else None)
    except Exception as e:  # the annotations as feedline reads them, refused
        shutil.rmtree(folder, ignore_errors=True)
        raise _NotLowered(f"feedline could not read its annotations: {e}") from None
    # Kept while the dataset lives (a spawned worker reads it again).
    weakref.finalize(native, shutil.rmtree, folder, True)
    if [int(i) for i in native.ids] != [int(i) for i in dataset.ids]:
        raise _NotLowered("feedline read other images than the dataset lists")
    if indices is not None:
        try:
            native = _io.Subset(native, indices)
        except Exception as e:  # an index out of range: torch's loader raises it
            raise _NotLowered(f"its Subset's indices have no native form: {e}") from None
    return native, names, (counted, keypoints.images)


def _check_keypoints_follow(names, count):
    """The references move keypoints only in RandomHorizontalFlip, and flip
    COCO's 17; feedline moves them with every step."""
    for name in names:
        if name in _GEOMETRIC and name != "RandomHorizontalFlip":
            raise _NotLowered(f"its annotations have keypoints, which the references' {name} "
                              "leaves where they are (feedline moves them with the pixels)")
    if "RandomHorizontalFlip" in names and count != 17:
        raise _NotLowered(f"its objects list {count} keypoints; the references' "
                          "RandomHorizontalFlip swaps COCO's 17")
