"""The one-line swap for detection written with torchvision's transforms.v2:
`wrap_dataset_for_transforms_v2(CocoDetection(root, annFile,
transforms=v2.Compose([...])), target_keys=...)` (or a Subset of it, as
the references' get_coco(..., use_v2=True) builds it), batched by
`lambda batch: tuple(zip(*batch))` (the references' utils.collate_fn),
loads through feedline.vision.datasets.CocoDetection, in C++, and comes out
as torch's DataLoader hands it over (detection_v2_batches.py).

torchvision is a library, not a script users copy: its classes are
recognized by type (exactly, no subclass), on the torchvision release the
swap was checked against (0.29), with none of their methods replaced.

What torchvision and feedline do differently decides what is lowered; each
difference that would change a batch keeps the dataset in Python, said in
stats()["native_transforms"]:
- feedline clips boxes to the image and drops objects whose clipped box
  has no width or height, before and after the transforms; transforms.v2
  moves boxes unclipped through flips and resizes and keeps empty ones
  until a SanitizeBoundingBoxes. So boxes reaching outside their image need
  a ClampBoundingBoxes before the first geometric step, boxes with no width
  or height a SanitizeBoundingBoxes, and RandomIoUCrop (which only zeroes
  the boxes it leaves out) a SanitizeBoundingBoxes after it;
  SanitizeBoundingBoxes runs after every geometric step, in Python on the
  batch's boxes, with torchvision's own test.
- feedline converts the pixels to float last: after ToDtype only flips
  (exact either way) and the box steps are taken.
- masks are drawn from the polygons at the output size; transforms.v2
  resizes the source-size masks (nearest), which differs along the edges
  after a resize (flips, crops and zoom-outs give the same masks).
The random steps draw from feedline's generator, (seed, epoch, index):
batches follow torch's distributions, not its draws.
"""

import sys
import weakref

from feedline import io as _io
from feedline.frontends import lowering as _lowering
from feedline.frontends.torch import detection_lowering as _v1
from feedline.frontends.torch.detection_v2_batches import DetectionV2Batches
from feedline.vision import datasets as _datasets
from feedline.vision import transforms as _T

# The torchvision release whose transforms.v2 and dataset wrapper the
# swap was checked against.
_CHECKED_RELEASE = "0.29."

_GEOMETRIC = ("RandomHorizontalFlip", "RandomZoomOut", "RandomIoUCrop", "RandomShortestSize",
              "ScaleJitter", "Resize")
_COLOUR = ("RandomPhotometricDistort",)
_BOXES = ("SanitizeBoundingBoxes", "ClampBoundingBoxes", "ConvertBoundingBoxFormat")
_CONVERSIONS = ("ToImage", "PILToTensor", "ToDtype", "ConvertImageDtype", "ToPureTensor")
_STEPS = _GEOMETRIC + _COLOUR + _BOXES + _CONVERSIONS
# Steps that raise in torchvision on a sample without boxes.
_NEED_BOXES = ("RandomIoUCrop", "SanitizeBoundingBoxes")
# The wrapper's keys made from the annotations, in its order.
_MADE = ("image_id", "boxes", "masks", "labels")


def _wrapped_coco(dataset):
    """The CocoDetection inside torchvision's transforms.v2 wrapper, or None
    for any other dataset."""
    wrapper = sys.modules.get("torchvision.tv_tensors._dataset_wrapper")
    datasets = sys.modules.get("torchvision.datasets")
    base = getattr(wrapper, "VisionDatasetTVTensorWrapper", None)
    if base is None or datasets is None or not isinstance(dataset, base):
        return None
    inner = vars(dataset).get("_dataset")
    return inner if isinstance(inner, datasets.CocoDetection) else None


def _check_torchvision(dataset, inner):
    """The wrapper and the dataset are torchvision's, as released."""
    import torchvision
    import torchvision.datasets
    from torchvision.tv_tensors import _dataset_wrapper

    if not torchvision.__version__.startswith(_CHECKED_RELEASE):
        raise _v1._NotLowered(f"torchvision {torchvision.__version__} is not the release its "
                              f"swap was checked against ({_CHECKED_RELEASE}x)")
    if type(inner) is not torchvision.datasets.CocoDetection:
        raise _v1._NotLowered(f"its dataset is {type(inner).__name__}, a subclass of "
                              "torchvision's CocoDetection")
    cls = type(dataset)
    if cls.__bases__ != (_dataset_wrapper.VisionDatasetTVTensorWrapper,
                         torchvision.datasets.CocoDetection) or \
            any(callable(v) for k, v in vars(cls).items() if not k.startswith("__")) or \
            not _v1._own_methods(_dataset_wrapper.VisionDatasetTVTensorWrapper):
        raise _v1._NotLowered("its wrapper is not torchvision's wrap_dataset_for_transforms_v2")
    factory = _dataset_wrapper.WRAPPER_FACTORIES.get(torchvision.datasets.CocoDetection)
    function = vars(dataset).get("_wrapper")
    if factory is not _dataset_wrapper.coco_dectection_wrapper_factory or \
            getattr(function, "__code__", None) not in factory.__code__.co_consts:
        raise _v1._NotLowered("its wrapper function is not torchvision's for CocoDetection")
    for name in ("__getitem__", "__len__"):
        if name in vars(dataset):
            raise _v1._NotLowered(f"the dataset's {name} is replaced")
    _v1._check_methods(inner)
    cells = dict(zip(function.__code__.co_freevars, function.__closure__))
    if cells["dataset"].cell_contents is not inner:
        raise _v1._NotLowered("its wrapper reads another dataset than it wraps")
    return cells["target_keys"].cell_contents


def _leaves(transform, depth=0):
    """The steps of (nested) v2.Compose and the references' presets."""
    from torchvision.transforms import v2

    if depth > 32:
        raise _v1._NotLowered("its transforms nest deeper than 32 levels")
    if type(transform) is v2.Compose and _v1._replaced_on_instance(transform) is None:
        return [leaf for t in transform.transforms for leaf in _leaves(t, depth + 1)]
    for preset in ("DetectionPresetTrain", "DetectionPresetEval"):
        # The references' presets (use_v2=True): their __call__ only calls
        # the Compose they hold, as in every release since 0.14.
        if type(transform).__name__ == preset and \
                _v1._is_reference(type(transform).__call__, preset + ".__call__"):
            return _leaves(transform.transforms, depth + 1)
    return [transform]


def _step_class(t):
    """t's transforms.v2 class name, or _NotLowered."""
    from torchvision.transforms import v2

    name = type(t).__name__
    if name not in _STEPS or type(t) is not getattr(v2, name, None):
        raise _v1._NotLowered(f"{name} is not one of the transforms.v2 steps feedline runs "
                              "natively")
    if _v1._replaced_on_instance(t) is not None:
        raise _v1._NotLowered(f"its {name}'s {_v1._replaced_on_instance(t)} is replaced")
    for cls in type(t).__mro__:
        if cls.__module__.startswith("torchvision.transforms.v2") and not _v1._own_methods(cls):
            raise _v1._NotLowered(f"torchvision's {cls.__name__} has a method replaced")
    return name


def _fill(t, kind):
    """The fill RandomZoomOut pads `kind` with, as torchvision picks it, as
    3 whole levels (None pads with 0)."""
    from torchvision.transforms.v2._utils import _get_fill

    value = _get_fill(t._fill, kind)
    values = [0.0] if value is None else [value] if isinstance(value, (int, float)) \
        else list(value)
    if len(values) == 1:
        values = values * 3
    if len(values) != 3 or any(float(v) != int(v) or not 0 <= v <= 255 for v in values):
        raise _v1._NotLowered(f"its RandomZoomOut's fill {value!r} is not 1 or 3 whole levels")
    return [float(v) for v in values]


def _resize_options(t, name):
    if t.antialias is not True:
        raise _v1._NotLowered(f"its {name} has antialias={t.antialias} (natively it is on)")
    return _v1._interpolation(t.interpolation)


class _Plan:
    """The native steps of a transforms.v2 list and what the batches need."""

    def __init__(self):
        self.steps, self.names = [], []
        self.image_type = None      # "pil", "image" (ToImage) or "tensor" (PILToTensor)
        self.float = False
        self.pure = False           # after ToPureTensor
        self.sanitize = None        # (min_size, min_area)
        self.box_format = None      # the last ConvertBoundingBoxFormat's
        self.clamped_first = False  # a ClampBoundingBoxes before any geometric step
        self.geometric_seen = False
        self.masks_fill_zero = True
        self.float_masks = False    # masks as float32 (ConvertImageDtype)


def _plan(leaves, keys):
    import PIL.Image
    import torch
    from torchvision import tv_tensors

    plan = _Plan()
    for t in leaves:
        name = _step_class(t)
        plan.names.append(name)
        if plan.pure and name not in ("ToDtype", "ConvertImageDtype"):
            raise _v1._NotLowered(f"its {name} comes after ToPureTensor, which leaves it the "
                                  "image alone")
        if plan.float and name in _GEOMETRIC + _COLOUR and name != "RandomHorizontalFlip":
            raise _v1._NotLowered(f"its {name} comes after ToDtype, on float pixels "
                                  "(feedline converts them last)")
        if plan.sanitize is not None and name in _GEOMETRIC:
            raise _v1._NotLowered(f"its {name} comes after SanitizeBoundingBoxes")
        native = None
        if name in _GEOMETRIC + _COLOUR:
            if name != "RandomPhotometricDistort":
                plan.geometric_seen = True
            if plan.box_format is not None:
                raise _v1._NotLowered(f"its {name} comes after ConvertBoundingBoxFormat")
            native = _native_step(name, t, plan, keys, PIL.Image, tv_tensors)
        elif name == "SanitizeBoundingBoxes":
            if t.labels_getter != "default":
                raise _v1._NotLowered("its SanitizeBoundingBoxes has its own labels_getter")
            plan.sanitize = (float(t.min_size), float(t.min_area))
        elif name == "ClampBoundingBoxes":
            # clamping_mode None leaves the boxes as they are
            if not plan.geometric_seen and getattr(t, "clamping_mode", "auto") is not None:
                plan.clamped_first = True
        elif name == "ConvertBoundingBoxFormat":
            fmt = t.format
            fmt = tv_tensors.BoundingBoxFormat[fmt.upper()] if isinstance(fmt, str) else fmt
            if fmt.name not in ("XYXY", "XYWH", "CXCYWH"):
                raise _v1._NotLowered(f"its ConvertBoundingBoxFormat to {fmt.name}")
            plan.box_format = fmt
        elif name in ("ToImage", "PILToTensor"):
            if plan.image_type is not None:
                raise _v1._NotLowered(f"its {name} comes after {plan.image_type}")
            plan.image_type = "image" if name == "ToImage" else "tensor"
        elif name in ("ToDtype", "ConvertImageDtype"):
            scale = True if name == "ConvertImageDtype" else t.scale
            # (ToDtype with one dtype converts images only; the deprecated
            # ConvertImageDtype converts the masks too, to 0.0 and 1.0.)
            plan.float_masks = plan.float_masks or name == "ConvertImageDtype"
            if t.dtype is not torch.float32 or not scale:
                raise _v1._NotLowered(f"its {name}({t.dtype}, scale={scale}) runs natively "
                                      "only as (torch.float32, scale=True)")
            if plan.image_type is None:
                raise _v1._NotLowered(f"its {name} comes before ToImage, on a PIL image it "
                                      "leaves as it is")
            plan.float = True
        elif name == "ToPureTensor":
            plan.pure = True
        if native is not None:
            try:
                native._native()  # feedline's checks, here rather than in the dataset
            except (ValueError, TypeError) as e:
                raise _v1._NotLowered(f"its {name}'s parameters have no native form: {e}") \
                    from None
            plan.steps.append(native)
    if plan.image_type is None:
        raise _v1._NotLowered("its images stay PIL images (no ToImage nor PILToTensor)")
    if "RandomIoUCrop" in plan.names and plan.sanitize is None:
        raise _v1._NotLowered("its RandomIoUCrop has no SanitizeBoundingBoxes after it, and "
                              "keeps the boxes it leaves out as zeros")
    if "masks" in keys and not plan.masks_fill_zero:
        raise _v1._NotLowered("its RandomZoomOut pads the masks with a fill other than 0")
    if any(n in plan.names for n in _NEED_BOXES) and "boxes" not in keys:
        raise _v1._NotLowered("its target_keys leave out \"boxes\", which its "
                              f"{[n for n in plan.names if n in _NEED_BOXES][0]} needs")
    colour = [i for i, n in enumerate(plan.names) if n in _COLOUR]
    geometric = [i for i, n in enumerate(plan.names) if n in _GEOMETRIC]
    if any(geometric and geometric[0] < i < geometric[-1] for i in colour):
        raise _v1._NotLowered("its RandomPhotometricDistort comes between geometric steps")
    plan.steps.append(_T.PILToTensor())
    if plan.float:
        # transforms.v2 scales by multiplying with float32(1 / 255), where
        # ConvertImageDtype divides by 255 (1 ulp apart for some levels); the
        # native Normalize computes x * (1 / (255 * std)) + mean / std in one
        # rounding, which for mean 0 and std 1 is v2's product, bit for bit.
        plan.steps += [_T.ConvertImageDtype("float32"), _T.Normalize([0.0] * 3, [1.0] * 3)]
    return plan


def _native_step(name, t, plan, keys, pil_image, tv_tensors):
    """The feedline transform equal to transforms.v2's `t`."""
    import torch

    if name == "RandomHorizontalFlip":
        return _T.RandomHorizontalFlip(float(t.p))
    if name == "RandomPhotometricDistort":
        return _T.RandomPhotometricDistort(
            contrast=[float(v) for v in t.contrast], saturation=[float(v) for v in t.saturation],
            hue=[float(v) for v in t.hue], brightness=[float(v) for v in t.brightness],
            p=float(t.p))
    if name == "RandomZoomOut":
        # The fill torchvision picks for the image as it is at this step.
        kind = {None: pil_image.Image, "image": tv_tensors.Image}.get(plan.image_type,
                                                                      torch.Tensor)
        fill = _fill(t, kind)
        if "masks" in keys and _fill(t, tv_tensors.Mask) != [0.0] * 3:
            plan.masks_fill_zero = False
        return _T.RandomZoomOut(fill=fill, side_range=tuple(float(v) for v in t.side_range),
                                p=float(t.p))
    if name == "RandomIoUCrop":
        if not isinstance(t.trials, int):
            raise _v1._NotLowered(f"its RandomIoUCrop's trials is {type(t.trials).__name__}")
        return _T.RandomIoUCrop(t.min_scale, t.max_scale, t.min_aspect_ratio,
                                t.max_aspect_ratio, list(t.options), t.trials)
    if name == "RandomShortestSize":
        if t.max_size is None:
            raise _v1._NotLowered("its RandomShortestSize has no max_size")
        return _T.RandomShortestSize(list(t.min_size), t.max_size, _resize_options(t, name))
    if name == "ScaleJitter":
        return _T.ScaleJitter(tuple(t.target_size), tuple(t.scale_range),
                              _resize_options(t, name))
    if name == "Resize":
        if t.size is None:
            raise _v1._NotLowered("its Resize has no size (max_size alone)")
        size = list(t.size) if isinstance(t.size, (list, tuple)) else [int(t.size)]
        return _T.Resize(size[0] if len(size) == 1 else size, _resize_options(t, name),
                         max_size=t.max_size)
    raise AssertionError(name)


def _annotations(inner, indices, keys, plan):
    """The annotations each loaded image gets, as the wrapper reads them
    (coco.loadAnns(coco.getAnnIds(id))), checked against what feedline does
    differently: (images, annotations, raw lists by image id)."""
    import torch

    coco = inner.coco
    raw_keys = [k for k in keys if k not in _MADE]
    loaded = set(range(len(inner.ids)) if indices is None else indices)
    images, annotations, raw = [], [], {}
    empty = degenerate = outside = 0
    for position, image_id in enumerate(inner.ids):
        image = coco.loadImgs(image_id)[0]
        anns = coco.loadAnns(coco.getAnnIds(image_id))
        images.append(image)
        annotations.extend(anns)
        if position not in loaded:
            continue
        if not anns:
            empty += 1
            raw[int(image_id)] = None
            continue
        if "masks" in keys and any("segmentation" not in a for a in anns):
            raise _v1._NotLowered(f"image {image_id} has an object without a segmentation, "
                                  "for which the wrapper has no mask")
        raw[int(image_id)] = {k: [a[k] for a in anns] for k in raw_keys}
        # As the wrapper makes them: float32, x1 = x0 + w.
        boxes = torch.tensor([a["bbox"] for a in anns], dtype=torch.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]
        w, h = float(image["width"]), float(image["height"])
        clipped = torch.stack([boxes[:, 0].clamp(0, w), boxes[:, 1].clamp(0, h),
                               boxes[:, 2].clamp(0, w), boxes[:, 3].clamp(0, h)], 1)
        degenerate += int(((clipped[:, 2] <= clipped[:, 0]) |
                           (clipped[:, 3] <= clipped[:, 1])).sum())
        outside += int(((boxes[:, 0] < 0) | (boxes[:, 1] < 0) | (boxes[:, 2] > w) |
                        (boxes[:, 3] > h)).sum())
    needing = [n for n in plan.names if n in _NEED_BOXES]
    if empty and needing:
        raise _v1._NotLowered(f"{empty} of its images have no annotation, on which "
                              f"torchvision's {needing[0]} raises")
    if degenerate and plan.sanitize is None:
        raise _v1._NotLowered(f"{degenerate} of its boxes have no width or height, which "
                              "transforms.v2 keeps without a SanitizeBoundingBoxes (feedline "
                              "drops them)")
    if outside and "boxes" in keys and not plan.clamped_first:
        raise _v1._NotLowered(f"{outside} of its boxes reach outside their image, which "
                              "transforms.v2 moves unclipped (feedline clips them); a "
                              "ClampBoundingBoxes first would lower it")
    return images, annotations, raw


def lower(dataset, enabled, collate_fn, batched):
    """A Lowered for a (Subset of a) CocoDetection wrapped for
    transforms.v2, or None for any other dataset."""
    inner_wrapped, indices, wrappers = _v1._unwrap_subsets(dataset)
    try:
        inner = _wrapped_coco(inner_wrapped)
    except Exception:  # anything unexpected about it: not recognized
        inner = None
    if inner is None:
        return None
    description = " of ".join(wrappers + ["CocoDetection wrapped for transforms.v2"])
    try:
        native, plan, batches = _build(inner_wrapped, inner, indices, enabled, collate_fn,
                                       batched)
    except _v1._NotLowered as e:
        reason = str(e)
        summary = f"feedline.torch: {description} runs in Python: {reason}"
        return _v1.Lowered(dataset, _lowering.Lowering(summary, [], ["CocoDetection"],
                                                       native=False, reason=reason))
    summary = (f"feedline.torch: {description} + {len(plan.names)} "
               f"step{'s' if len(plan.names) != 1 else ''} run natively")
    lowering = _lowering.Lowering(summary, ["wrap_dataset_for_transforms_v2"] + plan.names, [],
                                  native=True)
    return _v1.Lowered(native, lowering, batches)


def _build(dataset, inner, indices, enabled, collate_fn, batched):
    if not enabled:
        raise _v1._NotLowered("native_transforms=False")
    if not batched:
        raise _v1._NotLowered("it is loaded without batching (batch_size=None)")
    if collate_fn is None or not _v1._is_transpose(collate_fn):
        raise _v1._NotLowered("its collate_fn is not `lambda batch: tuple(zip(*batch))` "
                              "(the references' utils.collate_fn)")
    keys = _check_torchvision(dataset, inner)
    if dataset.transform is not None or dataset.target_transform is not None:
        raise _v1._NotLowered("it has a transform or target_transform, not transforms=")
    if dataset.transforms is None:
        raise _v1._NotLowered("it has no transforms (its images stay PIL images)")
    # The wrapper's order: its own keys, then a set difference's (the same
    # expression, so the same order in this process and in forked workers).
    order = [k for k in _MADE if k in keys] + list(keys - {"image_id", "boxes", "masks",
                                                           "labels"})
    unknown = [k for k in order if k not in _MADE + ("area", "iscrowd", "bbox", "category_id",
                                                      "segmentation")]
    if unknown:
        raise _v1._NotLowered(f"its target_keys ask for {unknown[0]!r}")
    plan = _plan(_leaves(dataset.transforms), keys)
    files = [img["file_name"] for img in inner.coco.loadImgs(inner.ids)]
    others = [f for f in files if not f.lower().endswith(_lowering._NATIVE_SUFFIXES)]
    if others:
        raise _v1._NotLowered(f"{len(others)} of its images are not JPEG, PNG or WebP by name "
                              f"(e.g. {others[0]}), which PIL decodes")
    images, annotations, raw = _annotations(inner, indices, keys, plan)
    path, folder = _v1.write_snapshot(images, annotations)
    try:
        native = _datasets.CocoDetection(inner.root, path, plan.steps, masks="masks" in keys,
                                         keep_crowd=True, max_pixels=_lowering._pil_pixel_limit(),
                                         annotation_index=False)
    except Exception as e:  # the annotations or the steps as feedline takes them, refused
        _v1.shutil.rmtree(folder, ignore_errors=True)
        raise _v1._NotLowered(f"feedline could not take it: {e}") from None
    weakref.finalize(native, _v1.shutil.rmtree, folder, True)  # a spawned worker reads it
    if [int(i) for i in native.ids] != [int(i) for i in inner.ids]:
        raise _v1._NotLowered("feedline read other images than the dataset lists")
    if indices is not None:
        try:
            native = _io.Subset(native, indices)
        except Exception as e:  # an index out of range: torch's loader raises it
            raise _v1._NotLowered(f"its Subset's indices have no native form: {e}") from None
    from torchvision import tv_tensors
    batches = DetectionV2Batches(order, raw, plan.sanitize,
                                 plan.box_format or tv_tensors.BoundingBoxFormat.XYXY,
                                 tv_tensors=not plan.pure, image_tv=plan.image_type == "image",
                                 float_masks=plan.float_masks)
    return native, plan, batches
