"""Native image datasets: listing, reading, decoding and transforms all run in
C++ worker threads, without the GIL.

Samples are (image, label) like torchvision's: image as the transform makes
it (uint8 [H, W, 3] without ToTensor, float32 [3, H, W] with it), label an
int64. Indexing one (dataset[i]) runs the same code as the loader and returns
numpy arrays.
"""

import os

import numpy as np

from feedline._feedline import storage as _storage
from feedline._feedline import vision as _vision
from feedline import io as _io
from feedline.io import NativeDataset
from feedline.io.arguments import _positive_int, _remote_options, _size_in
from feedline.vision.transforms import build_pipeline
from feedline.vision import transforms as _transforms

__all__ = [
    "COCO_PERSON_KEYPOINT_FLIP",
    "CocoDetection",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_PIXELS",
    "DatasetFolder",
    "DetectionShardDataset",
    "FileList",
    "ImageFolder",
    "IMG_EXTENSIONS",
    "Mosaic",
    "ShardDataset",
    "ShardOrderSampler",
    "VOCDetection",
    "YoloDetection",
    "detection_rows",
    "detection_targets",
    "pack_shards",
]

# What the native listing accepts; decoding goes by content, not name.
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp")

# Pillow's Image.MAX_IMAGE_PIXELS: an image with more pixels is a failed
# sample, refused from its header (decompression bombs).
DEFAULT_MAX_PIXELS = _vision.DEFAULT_MAX_PIXELS
# A larger file is a failed sample, refused before it is read (1 GiB).
DEFAULT_MAX_FILE_BYTES = _vision.DEFAULT_MAX_FILE_BYTES

_INT64_MAX = 2**63 - 1


def _limits(max_pixels, max_file_bytes):
    return (
        _positive_int("max_pixels", max_pixels, DEFAULT_MAX_PIXELS),
        DEFAULT_MAX_FILE_BYTES if max_file_bytes is None
        else _size_in("max_file_bytes", max_file_bytes, 1, _INT64_MAX),
    )


def _unsupported(**arguments):
    for name, value in arguments.items():
        if value is not None:
            raise ValueError(
                f"{name} is not supported: images are read, decoded and labelled in C++; "
                "write a Python Dataset for custom loading (see docs/python.md)"
            )


_TRANSFORM_INPUTS = ("pil", "numpy", "tensor")


def _split_transform(transform, max_pixels, transform_input):
    """(the native pipeline, the Python transform or None). A transform made
    of feedline.vision.transforms runs in C++; any other callable (a
    torchvision transform or preset, a PIL-based function, a lambda) runs in
    Python on the image the C++ pipeline decoded (io.NativeDataset), handed
    over as `transform_input`: "pil" (a PIL image, what torchvision's
    transforms take), "numpy" (uint8 [H, W, 3]) or "tensor" (uint8
    [3, H, W])."""
    if transform_input not in _TRANSFORM_INPUTS:
        raise ValueError(f"transform_input must be one of {_TRANSFORM_INPUTS}, got "
                         f"{transform_input!r}")
    if _has_mosaic(transform):
        raise TypeError("Mosaic combines 4 images of a detection dataset with their objects and "
                        "is not a transform: pass it as YoloDetection(images_dir, transforms, "
                        "mosaic=Mosaic(...))")
    try:
        _transforms._flatten(transform)
    except TypeError:
        if isinstance(transform, (_transforms.Compose, list, tuple)):
            raise TypeError(
                "the transform mixes feedline.vision.transforms with other callables: give "
                "either feedline transforms only (they run in C++) or torchvision / Python ones "
                "only (they run in Python after a native decode); "
                "feedline.vision.transforms.from_torchvision converts a torchvision recipe"
            ) from None
        if not callable(transform):
            raise TypeError(f"transform must be callable, got {type(transform).__name__}") from None
        return build_pipeline(None, max_pixels), transform
    return build_pipeline(transform, max_pixels), None


class _LabeledImages(NativeDataset):
    """What the native labelled image datasets share: the pixel limit and
    the classes and labels, named as torchvision names them."""

    @property
    def max_pixels(self):
        """Images with more pixels are failed samples (SampleError "too_large")."""
        return self._native.max_pixels

    @property
    def classes(self):
        return list(self._native.classes)

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self._native.classes)}

    @property
    def targets(self):
        """The label of every sample, as a list (torchvision)."""
        return self._native.labels.tolist()


class _ImageDataset(_LabeledImages):
    def __init__(self, native, transform):
        super().__init__(native, ("image", "label"))
        self.transform = transform
        self.root = native.root

    @property
    def max_file_bytes(self):
        """Larger files are failed samples (SampleError "too_large"), not read."""
        return self._native.max_file_bytes

    @property
    def samples(self):
        """(path, label) of every sample (torchvision); built on each access."""
        native = self._native
        labels = native.labels.tolist()
        return [(os.path.join(native.root, native.file(i)), labels[i]) for i in range(len(labels))]

    imgs = samples


class DatasetFolder(_ImageDataset):
    """root/<class>/**/<file>: one folder per class, sorted class names give
    labels 0, 1, ...; files in torchvision's order. `extensions` (a tuple of
    suffixes) or `is_valid_file(path)` choose the files; the default is
    IMG_EXTENSIONS, listed natively.

    Bad files are failed samples (feedline.SampleError naming the file),
    handled by the loader's error policy: a FIFO, device, socket or folder
    named like an image ("is a FIFO, not a regular file"), a file over
    `max_file_bytes` (refused before it is read; an int or a size such as
    "64MiB" or "50MB", read as memory_budget is), a file that is no JPEG,
    PNG or WebP (refused from its first bytes) and an image over
    `max_pixels` pixels (refused from its header)."""

    def __init__(
        self,
        root,
        loader=None,
        extensions=None,
        transform=None,
        target_transform=None,
        is_valid_file=None,
        *,
        max_pixels=None,
        max_file_bytes=None,
        transform_input="pil",
    ):
        _unsupported(loader=loader)
        if extensions is not None and is_valid_file is not None:
            raise ValueError("give extensions or is_valid_file, not both")
        max_pixels, max_file_bytes = _limits(max_pixels, max_file_bytes)
        root = os.fspath(root)
        pipeline, python_transform = _split_transform(transform, max_pixels, transform_input)
        if extensions is None and is_valid_file is None:
            native = _vision.ImageFolder(root, pipeline, max_file_bytes)
        else:
            paths, labels, classes = _list_folder(root, extensions, is_valid_file)
            native = _vision.ImageDataset(root, paths, labels, classes, pipeline, max_file_bytes)
        super().__init__(native, transform)
        self.extensions = IMG_EXTENSIONS if extensions is None else extensions
        self._python_transform, self._image_type = python_transform, transform_input
        # torchvision's target_transform runs in Python on the label.
        self.target_transform = self._python_target_transform = target_transform


class ImageFolder(DatasetFolder):
    """torchvision.datasets.ImageFolder: root/<class>/<image>."""

    def __init__(self, root, transform=None, target_transform=None, loader=None,
                 is_valid_file=None, *, max_pixels=None, max_file_bytes=None,
                 transform_input="pil"):
        super().__init__(root, loader=loader, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file,
                         max_pixels=max_pixels, max_file_bytes=max_file_bytes,
                         transform_input=transform_input)


class FileList(_ImageDataset):
    """Samples listed in a text file, one "relative/path label" per line
    (Caffe / PaddleClas list files), read relative to `root`. Bad files and
    the limits `max_pixels` and `max_file_bytes` as for DatasetFolder."""

    def __init__(self, list_file, root, transform=None, *, max_pixels=None, max_file_bytes=None,
                 transform_input="pil"):
        max_pixels, max_file_bytes = _limits(max_pixels, max_file_bytes)
        pipeline, python_transform = _split_transform(transform, max_pixels, transform_input)
        native = _vision.FileList(os.fspath(list_file), os.fspath(root), pipeline, max_file_bytes)
        super().__init__(native, transform)
        self._python_transform, self._image_type = python_transform, transform_input


class Mosaic:
    """YOLO's training mosaic (Ultralytics v8's Mosaic then RandomPerspective
    with its defaults), for YoloDetection(..., mosaic=Mosaic()): each sample
    is its own image and 3 partners drawn uniformly from its batch, each
    resized to a longer side of `size`, placed around a random centre of a
    2 size x 2 size canvas filled with 114, and the canvas scaled by a
    factor in [1 - scale, 1 + scale] about its centre, which lands in
    [0.5 - translate, 0.5 + translate] x size of the size x size output.
    With probability 1 - p a sample is its own image alone, letterboxed and
    moved the same way (Ultralytics' close_mosaic epochs are p=0).

    Partners come from the indices the sampler put in the sample's batch
    (itself included; a sample read alone, data[i], or in a batch of one
    draws them from the whole dataset), and every draw from (seed, epoch, index): batches do not
    depend on the worker count and a resume meets the same mosaics
    (Ultralytics draws partners from its worker's recent images). So a
    batch shows only its own images, and the dataset decodes each once,
    keeping up to `cache_bytes` of decoded images for the batch's other
    samples (and later ones); the cache changes the work, never a sample
    (0 decodes every tile anew). It is a dataset's option, not a transform:
    it needs the dataset's other images. With the dataset's masks=True,
    "masks" is uint8 [n, size, size], each object's mask drawn through its
    tile (cut by the tile's edges) and mirrored with the mosaic.

    mixup: the probability that a sample is blended with a second mosaic
    (Ultralytics' MixUp and its `mixup` hyperparameter): that of a partner
    drawn from the batch as the tiles' are, with draws of its own; the
    pixels are sample x r + partner x (1 - r), truncated to uint8, r from
    Beta(32, 32), and the partner's objects follow the sample's. Its draws
    come from a stream of their own: a sample's mosaic, flip and colours
    are the same whatever mixup is."""

    def __init__(self, size=640, scale=0.5, translate=0.1, p=1.0, cache_bytes=256 << 20,
                 mixup=0.0):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"Mosaic size must be an integer, got {size!r}")
        if not 1 <= int(size) <= 16384:
            raise ValueError(f"Mosaic size must be from 1 to 16384, got {size}")
        self.size = int(size)
        self.scale = self._number("scale", scale, 0, 1, "[0, 1)", high_open=True)
        self.translate = self._number("translate", translate, 0, 0.5, "[0, 0.5]")
        self.p = self._number("p", p, 0, 1, "[0, 1]")
        if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, (int, np.integer)):
            raise TypeError(f"Mosaic cache_bytes must be an integer, got {cache_bytes!r}")
        if cache_bytes < 0:
            raise ValueError(f"Mosaic cache_bytes must be >= 0, got {cache_bytes}")
        self.cache_bytes = int(cache_bytes)
        self.mixup = self._number("mixup", mixup, 0, 1, "[0, 1]")

    @staticmethod
    def _number(name, value, low, high, shown, high_open=False):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"Mosaic {name} must be a number, got {value!r}")
        value = float(value)
        if not (low <= value < high if high_open else low <= value <= high):
            raise ValueError(f"Mosaic {name} must be in {shown}, got {value}")
        return value

    def _native(self):
        return (self.size, self.scale, self.translate, self.p, self.cache_bytes, self.mixup)

    def __call__(self, *args, **kwargs):
        raise TypeError("Mosaic combines 4 images of a detection dataset and cannot run on one "
                        "image: pass it as YoloDetection(images_dir, transforms, mosaic=Mosaic(...))")

    def __repr__(self):
        return (f"Mosaic(size={self.size}, scale={self.scale}, translate={self.translate}, "
                f"p={self.p}, mixup={self.mixup})")


def _has_mosaic(transforms):
    """Whether a Mosaic is among `transforms` (a Compose, a list or one)."""
    if isinstance(transforms, Mosaic):
        return True
    steps = transforms.transforms if isinstance(transforms, _transforms.Compose) else transforms
    return isinstance(steps, (list, tuple)) and any(_has_mosaic(t) for t in steps)


def _mosaic_argument(mosaic):
    if mosaic is None or mosaic is False:
        return None
    if mosaic is True:
        return Mosaic()._native()
    if not isinstance(mosaic, Mosaic):
        raise TypeError(f"mosaic must be a feedline.vision.datasets.Mosaic, True or None, "
                        f"got {type(mosaic).__name__}")
    return mosaic._native()


def _detection_pipeline(dataset, transforms, max_pixels):
    """The native pipeline of a detection dataset's transforms, which must
    all be feedline's: they run in C++ and move the objects with the pixels."""
    if _has_mosaic(transforms):
        raise TypeError(f"{dataset}: Mosaic is not a transform (it needs the dataset's other "
                        f"images); pass it as {dataset}(..., mosaic=Mosaic(...))")
    try:
        _transforms._flatten(transforms)
    except TypeError:
        raise TypeError(f"{dataset}'s transforms run in C++ with the boxes and masks: "
                        "give feedline.vision.transforms only (a Compose or a list)") from None
    return build_pipeline(transforms, max_pixels)


def _size_divisibility(value):
    return _size_in("size_divisibility", value, 1, 65536)


def _annotation_index_dir(annotation_index):
    if annotation_index is True:
        return _vision.default_annotation_index_dir()
    if annotation_index is False or annotation_index is None:
        return ""
    if isinstance(annotation_index, (str, os.PathLike)):
        return os.fspath(annotation_index)
    raise TypeError("annotation_index must be True, False or a folder, got "
                    f"{type(annotation_index).__name__}")


# COCO's 17 person keypoints (nose, left eye, right eye, left ear, ...):
# each one's mirror image, as torchvision's detection references flip them.
COCO_PERSON_KEYPOINT_FLIP = (0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15)


def _keypoint_flip(flip, keypoints, dataset="CocoDetection"):
    """keypoint_flip as the native dataset takes it: a list of ints."""
    if flip is None:
        return []
    if not keypoints:
        raise ValueError(f"{dataset} keypoint_flip needs keypoints")
    try:
        values = [int(k) for k in flip]
    except (TypeError, ValueError):
        raise TypeError(f"{dataset} keypoint_flip must be a sequence of ints, got {flip!r}") \
            from None
    if any(v != k for v, k in zip(values, flip)):
        raise TypeError(f"{dataset} keypoint_flip must be a sequence of ints, got {flip!r}")
    return values


def _keypoint_shape(shape):
    """YoloDetection's keypoints=(K, dims) as (K, dims); None: (0, 3)."""
    if shape is None:
        return 0, 3
    try:
        count, dims = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise TypeError("YoloDetection keypoints must be (K, dims), Ultralytics' kpt_shape, "
                        f"got {shape!r}") from None
    return count, dims


class CocoDetection(NativeDataset):
    """COCO-format object detection and instance segmentation, read in C++:
    the annotation file parsed once (simdjson; an error names the file and
    the image or annotation), each image decoded and transformed by the
    native pipeline, and its objects moved with the pixels: flips, resizes
    and crops move the boxes, and masks are drawn from their polygons once,
    at the output size (or sampled from their run-length encoding).

    `transforms`: feedline.vision.transforms only (RandomHorizontalFlip,
    Resize, CenterCrop, RandomResizedCrop, RandomZoomOut, RandomIoUCrop,
    RandomShortestSize, ScaleJitter, FixedSizeCrop, ColorJitter,
    RandomPhotometricDistort, RandomErasing, PILToTensor,
    ConvertImageDtype, ToTensor, Normalize), as a Compose or a list;
    RandomIoUCrop keeps only the objects centred in its crop, as the
    references'; the AutoAugment family is refused (its shears and rotations would
    leave the boxes behind). An object without a segmentation gets its box
    as its mask.

    A sample is a dict, as torchvision's detection references build a
    target, its pixels and boxes in output pixels: "image" (uint8 [H, W, 3],
    or [3, H, W] float after ToTensor), "boxes" float32 [n, 4] (x0, y0, x1,
    y1), "labels" int64 [n] (category ids), "masks" uint8 [n, H, W] (with
    masks=True), "image_id", "area" float32 [n] (as the file gives it, in
    its source pixels, as the references keep it), "iscrowd" int64 [n] and
    "image_size" int64 [2] (H, W). Crowd objects are dropped unless
    keep_crowd, and so are objects whose box, clipped to the image, has no
    width or height, before or after the transforms (as the references'
    ConvertCocoPolysToMask). skip_empty leaves out images without a box over
    1 pixel wide and high, as the references' training set does.

    A loader batches samples by padding: images to the batch's largest, the
    objects to the batch's most with "<name>_lengths"; detection_targets()
    turns such a batch into torchvision's (images, targets) lists, as views.
    Bad files are failed samples naming the file (the loader's error
    policy), as with ImageFolder.

    size_divisibility: a loader pads a batch's images to its largest, rounded
    up to a multiple of this (32 for most detection models; torchvision's
    GeneralizedRCNNTransform, DETR and YOLO pad so); 1 rounds nothing.
    Samples keep their own size ("image_size").

    annotation_index: where the parsed annotation file is kept so that the
    next start loads it instead of parsing the JSON again (True: the user's
    cache, $XDG_CACHE_HOME or ~/.cache/feedline/annotation-index; a path: that
    folder; False: nothing kept). An index is used only for the file (path,
    size, inode, modification and change times) it was made from, and is
    rewritten otherwise or when damaged.

    masks="source" draws the masks at the source image's size, mirrored when
    the image is, one for every object the transforms started with, with
    "masks_size" int64 [2]: what torchvision's references' ssd and ssdlite
    presets hand out (their RandomZoomOut and RandomIoUCrop leave the masks
    as they are); the one-line swap uses it for them.

    mosaic=Mosaic(size=640): each sample YOLO's training mosaic of its
    image and 3 partners drawn from the dataset's samples, as
    YoloDetection's (see Mosaic); "image_id" is its own image's id.

    keypoints=True adds "keypoints" float32 [n, K, 3] (COCO's person
    keypoints: x, y in output pixels, moved by every geometric step as the
    boxes are, and the visibility as the file gives it; an unlabelled one,
    visibility 0, is (0, 0, 0)), K the most any annotation lists.
    keypoint_flip: for each of the K keypoints, the one that takes its place
    when the image is mirrored (COCO_PERSON_KEYPOINT_FLIP for COCO's people,
    whose left and right swap); None: none changes place. With mosaic they
    move through the tiles, as YoloDetection's (a keypoint outside its
    tile's part of the output is unlabelled there)."""

    def __init__(self, root, annFile, transforms=None, *, masks=False, keep_crowd=False,
                 skip_empty=False, max_pixels=None, max_file_bytes=None, annotation_index=True,
                 size_divisibility=1, mosaic=None, keypoints=False, keypoint_flip=None):
        max_pixels, max_file_bytes = _limits(max_pixels, max_file_bytes)
        pipeline = _detection_pipeline("CocoDetection", transforms, max_pixels)
        if isinstance(masks, str) and masks != "source":
            raise ValueError(f"CocoDetection masks must be True, False or 'source', got {masks!r}")
        native = _vision.CocoDetection(os.fspath(root), os.fspath(annFile), pipeline,
                                       masks=bool(masks), source_masks=masks == "source",
                                       keep_crowd=bool(keep_crowd),
                                       skip_empty=bool(skip_empty), max_file_bytes=max_file_bytes,
                                       index_dir=_annotation_index_dir(annotation_index),
                                       size_divisibility=_size_divisibility(size_divisibility),
                                       mosaic=_mosaic_argument(mosaic),
                                       keypoints=bool(keypoints),
                                       keypoint_flip=_keypoint_flip(keypoint_flip, keypoints))
        super().__init__(native)
        self.root = native.root
        self.transforms = transforms
        self.mosaic = mosaic

    @property
    def image_sizes(self):
        """(heights, widths) of the samples' images, as the annotation file
        lists them (no image is read): what io.aspect_ratio_groups groups by."""
        return self._native.image_sizes

    @property
    def ids(self):
        """The image id of every sample, in order (torchvision's `ids`)."""
        return self._native.image_ids.tolist()

    @property
    def categories(self):
        """{category id: name}, as the annotation file lists them."""
        return dict(self._native.categories)

    @property
    def max_pixels(self):
        return self._native.max_pixels


class YoloDetection(NativeDataset):
    """The YOLO layout (Ultralytics, YOLOv5): every image under `images_dir`
    (a folder with an "images" part in its path), its labels in the file at
    the same path with "labels" for "images" and ".txt" for its extension,
    one object a line: "class cx cy w h" normalized to the image, or a class
    and a polygon of 3 or more normalized x y points (its bounds are the
    box; masks=True draws it). An image without a label file has no
    objects. Samples, transforms and batches are CocoDetection's, with
    "image_id" the sample's index. A malformed label line is a failed sample
    (feedline.SampleError naming the label file and the line).

    mosaic=Mosaic(size=640) makes each sample YOLO's training mosaic of
    its image and 3 partners, size x size (see Mosaic); the transforms then
    list only what follows it: RandomHorizontalFlip (the whole mosaic),
    colour steps, RandomErasing and the output's dtype and layout; masks
    are drawn through the tiles. "area" stays each object's own, in its
    source pixels.

    keypoints=(K, dims), Ultralytics' kpt_shape for its pose datasets: each
    line is "class cx cy w h" and K points of `dims` normalized numbers (2:
    x y, unlabelled when one is negative; 3: x y visibility, 0, 1 or 2), and
    a sample has "keypoints" float32 [n, K, 3], x and y in output pixels
    moved with the pixels (through the tiles in a mosaic, unlabelled where
    a keypoint falls outside its tile), the visibility (1 for a labelled
    point of 2 numbers); an unlabelled one is (0, 0, 0). keypoint_flip:
    Ultralytics' flip_idx, the keypoint that takes each one's place in a
    mirrored image."""

    def __init__(self, images_dir, transforms=None, *, masks=False, max_pixels=None,
                 max_file_bytes=None, size_divisibility=1, mosaic=None, keypoints=None,
                 keypoint_flip=None):
        max_pixels, max_file_bytes = _limits(max_pixels, max_file_bytes)
        pipeline = _detection_pipeline("YoloDetection", transforms, max_pixels)
        count, dims = _keypoint_shape(keypoints)
        native = _vision.YoloDetection(os.fspath(images_dir), pipeline, masks=bool(masks),
                                       max_file_bytes=max_file_bytes,
                                       size_divisibility=_size_divisibility(size_divisibility),
                                       mosaic=_mosaic_argument(mosaic), keypoints=count,
                                       keypoint_dims=dims,
                                       keypoint_flip=_keypoint_flip(keypoint_flip, count,
                                                                    "YoloDetection"))
        super().__init__(native)
        self.images_dir = native.images_dir
        self.transforms = transforms
        self.mosaic = mosaic

    def label_file(self, index):
        """Where sample `index`'s labels are read from."""
        return self._native.label_file(int(index))

    @property
    def max_pixels(self):
        return self._native.max_pixels


class VOCDetection(NativeDataset):
    """Pascal VOC detection (torchvision.datasets.VOCDetection's layout),
    read in C++: root/VOCdevkit/VOC<year>/ImageSets/Main/<image_set>.txt
    lists the images, each read from JPEGImages/<id>.jpg, and its objects
    from Annotations/<id>.xml, all parsed once when the dataset is made
    (pugixml; an error names the file and the object).

    Samples, transforms and batches are CocoDetection's, with "labels" the
    index of an object's <name> in `classes` (VOC's 20 in their usual
    order, VOCDetection.CLASSES, unless given; a name not in it is an error
    naming the file), "image_id" the sample's index, "area" the box's in
    source pixels, and no masks (VOC's detection annotations have no
    polygons). An image set's line is an id up to its first space (the
    per-class lists add a flag after it). <difficult> is 0, 1, true or false
    (another value is an error); image_sizes come from each file's <size>
    (0 where it has none). Boxes are pixel edges counted
    from 0: a <bndbox> counts pixels from 1 and includes its max, so
    xmin=1, xmax=10 is the box (0, 10). Objects marked difficult are left
    out unless keep_difficult, which keeps them with iscrowd 1: VOC's
    evaluation neither credits nor penalizes them, and COCO's evaluation
    treats a crowd the same way.

    mosaic=Mosaic(size=640) makes each sample YOLO's training mosaic of its
    image and 3 partners, as YoloDetection's (see Mosaic)."""

    CLASSES = tuple(_vision.VOC_CLASSES)

    def __init__(self, root, year="2012", image_set="train", transforms=None, *,
                 keep_difficult=False, classes=None, max_pixels=None, max_file_bytes=None,
                 size_divisibility=1, mosaic=None):
        max_pixels, max_file_bytes = _limits(max_pixels, max_file_bytes)
        pipeline = _detection_pipeline("VOCDetection", transforms, max_pixels)
        if not isinstance(year, str) or not year:
            raise ValueError(f"year must be a string such as '2012', got {year!r}")
        if not isinstance(image_set, str) or not image_set or "/" in image_set:
            raise ValueError(f"image_set must name a list under ImageSets/Main (such as "
                             f"'train', 'val', 'trainval', 'test'), got {image_set!r}")
        if classes is not None:
            if isinstance(classes, (str, bytes)):
                raise TypeError("classes must be a list of class names, got a string")
            classes = [str(c) for c in classes]
            if not classes:
                raise ValueError("classes must name at least one class")
            if len(set(classes)) != len(classes):
                raise ValueError(f"classes names a class twice: {classes}")
        voc_root = os.path.join(os.fspath(root), "VOCdevkit", "VOC" + year)
        native = _vision.VocDetection(voc_root, image_set, pipeline,
                                      keep_difficult=bool(keep_difficult), classes=classes or [],
                                      max_file_bytes=max_file_bytes,
                                      size_divisibility=_size_divisibility(size_divisibility),
                                      mosaic=_mosaic_argument(mosaic))
        super().__init__(native)
        self.root = os.fspath(root)
        self.year = year
        self.image_set = image_set
        self.transforms = transforms
        self.mosaic = mosaic

    @property
    def classes(self):
        """The class names; a label is an index in this list."""
        return list(self._native.classes)

    @property
    def ids(self):
        """Each sample's image id, as its image set lists it."""
        return list(self._native.image_ids)

    @property
    def image_sizes(self):
        """(heights, widths) of the samples' images, as their annotations give them."""
        return self._native.image_sizes

    @property
    def max_pixels(self):
        return self._native.max_pixels


class DetectionShardDataset(NativeDataset):
    """A detection pack (`feedline pack` or pack_shards of a COCO instances
    file, a VOC image set or a YOLO images folder: each record an image and
    its annotations) read as the dataset it was packed from: the samples of
    CocoDetection, VOCDetection or YoloDetection with the same transforms
    and options, bit for bit (YOLO with RandomIoUCrop aside: YoloDetection
    chooses the crop from its boxes as fractions of the image, a pack keeps
    them in pixels, so the crops may differ in the last bits).

    `path_or_glob` and `remote` as ShardDataset's: the pack's folder, a glob
    or brace list of shards, or the http(s):// or s3:// URL of a pack, with
    the node's cache (remote={"cache_dir": ...}). Each sample is one read of
    the image and its annotations, both checked against the index's
    CRC-32C: a damaged record, or annotations that do not decode, is a
    failed sample (feedline.SampleError naming the shard and the key) for
    the loader's error policy. A pack of images alone is refused here, with
    a ValueError naming the shard and the record.

    masks, keep_crowd (VOC: keeps the difficult objects, as keep_difficult),
    skip_empty, size_divisibility and mosaic as CocoDetection's."""

    def __init__(self, path_or_glob, transforms=None, *, masks=False, keep_crowd=False,
                 skip_empty=False, max_pixels=None, size_divisibility=1, mosaic=None,
                 remote=None):
        max_pixels = _positive_int("max_pixels", max_pixels, DEFAULT_MAX_PIXELS)
        pipeline = _detection_pipeline("DetectionShardDataset", transforms, max_pixels)
        if isinstance(masks, str) and masks != "source":
            raise ValueError(f"DetectionShardDataset masks must be True, False or 'source', "
                             f"got {masks!r}")
        native = _vision.DetectionShardDataset(
            [os.fspath(path_or_glob)], pipeline, masks=bool(masks),
            source_masks=masks == "source", keep_crowd=bool(keep_crowd),
            skip_empty=bool(skip_empty), size_divisibility=_size_divisibility(size_divisibility),
            mosaic=_mosaic_argument(mosaic), remote=_remote_options(remote))
        super().__init__(native)
        self.transforms = transforms
        self.mosaic = mosaic

    @property
    def shards(self):
        """The tar files, in record order."""
        return list(self._native.shards)

    def key(self, index):
        """Sample `index`'s record key: its image's position in the packed
        dataset."""
        return self._native.key(int(index))

    @property
    def image_sizes(self):
        """(heights, widths) of the samples' images as the source listed them
        (the packed CocoDetection's or VOCDetection's image_sizes; a YOLO
        image's header), read from the index, not the images: what
        feedline.io.aspect_ratio_groups groups by. A pack written before the
        index kept sizes raises ValueError naming the shard."""
        return self._native.image_sizes

    @property
    def max_pixels(self):
        return self._native.max_pixels


def detection_targets(batch):
    """A padded detection batch (CocoDetection's, from a loader) as
    torchvision's detection models take it: (images, targets), a list of
    each image at its own size and a list of one dict per image with its
    "boxes", "labels", "masks" and "keypoints" (when the batch has them),
    "image_id", "area" and "iscrowd". Every array is a view of the batch,
    not a copy."""
    images, sizes = batch["image"], batch["image_size"]
    counts = batch["boxes_lengths"] if "boxes_lengths" in batch else None
    # [B, H, W, 3] (no ToTensor) or [B, 3, H, W]: told by the sizes, so that
    # images 3 pixels high are not taken for channels.
    tallest, widest = (int(v) for v in np.asarray(sizes).max(axis=0))
    chw = not (images.shape[-1] == 3 and images.shape[1] >= tallest and images.shape[2] >= widest)
    out_images, targets = [], []
    for i in range(len(sizes)):
        h, w = (int(v) for v in sizes[i])
        out_images.append(images[i, :, :h, :w] if chw else images[i, :h, :w])
        n = int(counts[i]) if counts is not None else batch["boxes"].shape[1]
        target = {"boxes": batch["boxes"][i, :n], "labels": batch["labels"][i, :n],
                  "image_id": batch["image_id"][i], "area": batch["area"][i, :n],
                  "iscrowd": batch["iscrowd"][i, :n]}
        if "masks_size" in batch:  # masks="source": their own count and size
            mh, mw = (int(v) for v in batch["masks_size"][i])
            target["masks"] = batch["masks"][i, :int(batch["masks_lengths"][i]), :mh, :mw]
        elif "masks" in batch:
            target["masks"] = batch["masks"][i, :n, :h, :w]
        if "keypoints" in batch:
            target["keypoints"] = batch["keypoints"][i, :n]
        targets.append(target)
    return out_images, targets


def detection_rows(batch):
    """A padded detection batch's objects as one table, the layout YOLO
    trainers take (Ultralytics' "batch_idx", "cls", "bboxes"): "batch_idx"
    int64 [N] (the image of each object), "labels" int64 [N], "boxes"
    float32 [N, 4] (x0, y0, x1, y1 in pixels) and "boxes_cxcywh" float32
    [N, 4] (centre and size normalized to each image's size), N the batch's
    objects, in image order. Copies (N rows), not views; numpy arrays,
    whether the batch holds numpy arrays or torch tensors."""
    batch = {k: np.asarray(batch[k]) for k in ("boxes", "boxes_lengths", "labels", "image_size")}
    counts = batch["boxes_lengths"]
    index = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    keep = np.arange(batch["boxes"].shape[1])[None, :] < counts[:, None]
    boxes = batch["boxes"][keep]
    size = batch["image_size"][index].astype(np.float32)  # (H, W) per row
    wh = boxes[:, 2:] - boxes[:, :2]
    centre = boxes[:, :2] + wh / 2
    scale = size[:, ::-1]
    normalized = np.concatenate([centre / scale, wh / scale], axis=1).astype(np.float32)
    return {"batch_idx": index, "labels": batch["labels"][keep], "boxes": boxes,
            "boxes_cxcywh": normalized}


class ShardDataset(_LabeledImages):
    """Images packed by `feedline pack` (or pack_shards): tar shards in the
    WebDataset layout with an index each. `path_or_glob` is the pack's
    folder, a glob pattern of shards ("out/shard-00001*.tar") or one .tar or
    .idx file. Samples are (image, label) as for ImageFolder, through the
    same transforms; each is one positioned read, checked against the
    index's CRC-32C: a damaged record is a failed sample
    (feedline.SampleError naming the shard, key and offset) handled by the
    loader's error policy. A damaged or truncated index or shard is refused
    here, with a ValueError naming the file.

    `path_or_glob` may also be the http:// or https:// URL of a pack folder
    that a web server serves (or of one shard's .tar or .idx): records are
    read by ranged GETs, checked the same way, with no disk
    (docs/storage.md, "Packs served over HTTP(S)"). `remote` sets the
    retries and timeouts of its requests and the node's shard cache: a dict
    of max_attempts (5), retry_budget_s (60), connect_timeout_s (10),
    stall_timeout_s (15), backoff_s (0.1), cache_dir (a local folder shared
    by every process on the node: each shard downloaded once, whole and
    checked; default none, records read by ranged GETs), cache_limit (its
    byte budget: an int or a size such as "20GiB"; 0, the default: none),
    prefetch_bytes and prefetch_requests (with a cache, shards are fetched
    ahead in the order the loader's epoch needs them: at most this many
    bytes ahead of the delivered batches, "2GiB" by default, 0: none; and
    this many downloads at once, 4), download_part_bytes and download_parts
    (a shard downloaded into the cache is requested in parts of this size,
    "4MiB", this many at once, 4: several connections share a long or lossy
    path) and ca_file (HTTPS: a PEM file of the
    authorities to trust; default $SSL_CERT_FILE, else the system's).
    A failed request is a SampleError naming the URL.

    A WebDataset-style brace list names shards, local or remote
    ("https://host/train/shard-{000000..000099}.tar"), in its order; a tar
    without its .idx beside it (KEY.jpg/.png/.webp with KEY.cls per sample)
    is indexed when the dataset is built, by reading it once (with a
    cache_dir, that read is its download into the cache, and the index is
    kept there); docs/storage.md, "Shards without an index"."""

    def __init__(self, path_or_glob, transform=None, *, max_pixels=None, transform_input="pil",
                 remote=None):
        max_pixels = _positive_int("max_pixels", max_pixels, DEFAULT_MAX_PIXELS)
        pipeline, python_transform = _split_transform(transform, max_pixels, transform_input)
        native = _vision.ShardDataset(os.fspath(path_or_glob), pipeline, _remote_options(remote))
        super().__init__(native, ("image", "label"))
        self.transform = transform
        self._python_transform, self._image_type = python_transform, transform_input

    @property
    def shards(self):
        """The tar files, in record order."""
        return list(self._native.shards)

    def key(self, index):
        """The record's key: its position in the packed source listing."""
        return self._native.key(int(index))


class ShardOrderSampler(_io.Sampler):
    """A shuffled order that reads a dataset's shards nearly sequentially,
    for disks and network storage where random reads are slow: each epoch
    the shards in a random order, their records streamed through a shuffle
    buffer of `window` records. Records of one shard stay close together in
    the epoch; a record is emitted on average `window` draws after it enters
    the buffer. A window of len(data_source) or more is a full shuffle.
    `generator` / `seed` as for RandomSampler. docs/storage.md says more
    about its randomness.

    data_source: a ShardDataset (its shards; default window: the mean
    records per shard), or a feedline.io.ParquetDataset (its files; default
    window: the mean rows per row group, so that about two row groups are
    read from at a time and each is read once an epoch, and a node cache
    holding a few files downloads each file once an epoch; docs/text.md)."""

    def __init__(self, data_source, window=None, generator=None, seed=None):
        if isinstance(data_source, ShardDataset):
            starts = data_source._native.shard_starts.tolist()
            default_window = len(data_source) // max(1, len(starts))
        elif isinstance(data_source, _io.ParquetDataset):
            # Files without rows are no shards.
            starts = sorted({int(x) for x in data_source.file_starts if x < len(data_source)})
            if not starts:
                raise ValueError("ShardOrderSampler: the ParquetDataset has no rows")
            group_rows = data_source.row_group_rows
            default_window = int(group_rows.mean()) if len(group_rows) else 1
        else:
            raise TypeError("ShardOrderSampler needs a ShardDataset or a ParquetDataset, got "
                            f"{type(data_source).__name__}")
        super().__init__(data_source)
        if window is None:
            window = max(1, default_window)
        window = _positive_int("window", window, None)
        self.seed = _io._seed_from(generator, seed)
        self._native = _vision.ShardOrderSampler(starts, len(data_source), window, self.seed)
        self._epoch = 0

    @property
    def window(self):
        return self._native.window


def _int_in(name, value, low, high):
    """`value` checked as an integer in [low, high], the message naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"pack_shards: {name} must be an integer, got {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise ValueError(f"pack_shards: {name} must be between {low} and {high}, got {value}")
    return value


def _flag(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"pack_shards: {name} must be True or False, got {value!r}")
    return bool(value)


def pack_shards(source, out, shard_bytes=256 << 20, *, skip_broken=False, restart=False,
                max_file_bytes=None, jpeg_restart_mcus=4, jpeg_restart_rows=1,
                keep_progressive=False, threads=None):
    """Packs an image folder or file list into shards in `out`, as
    `feedline pack SOURCE OUT` does (resuming an interrupted pack unless
    `restart`). Detection data (a COCO instances file, a VOC image set
    VOC<year>/ImageSets/Main/<set>.txt, or a YOLO images folder) is packed
    with each image's annotations in its record, for DetectionShardDataset.

    JPEGs are rewritten losslessly with restart markers (the same pixels) so
    that a crop decodes only the MCUs around it (docs/storage.md): one every
    `jpeg_restart_mcus` MCUs (0 to 1024, the nearest divisor of a row's MCUs;
    0: whole rows), or with that 0 one every `jpeg_restart_rows` MCU rows
    (0 to 64; 0 stores every file unchanged). Progressive JPEGs are written
    as baseline ones unless `keep_progressive`. `threads` read and rewrite
    files (None or 0: one per core; the shards are the same bytes whatever
    the number). `out` may not be `source` or lie inside it (for a file
    list: not the list's folder or one holding listed files); a second pack
    into `out` while one runs fails at once (ValueError naming the folder).
    `shard_bytes` (the largest shard) and `max_file_bytes` are ints or size
    strings read as `--shard-size` reads them: "256M", "2GiB" (K, M, G, T,
    KiB, MiB, ...: 1024-based), "1.5GB", "512MB" (KB, MB, GB, TB:
    1000-based).

    Returns a dict: records, shards, reused_shards, bytes, skipped ((path,
    reason) of each file left out with skip_broken), rewritten_jpegs,
    rewritten_bytes_before, rewritten_bytes_after, progressive_converted,
    progressive_bytes_before, progressive_bytes_after."""
    # The bounds of `feedline pack --shard-size`; sizes as it reads them.
    shard_bytes = _size_in("pack_shards: shard_bytes", shard_bytes, 2048, 1 << 50)
    max_file_bytes = (DEFAULT_MAX_FILE_BYTES if max_file_bytes is None
                      else _size_in("pack_shards: max_file_bytes", max_file_bytes, 1, _INT64_MAX))
    jpeg_restart_mcus = _int_in("jpeg_restart_mcus", jpeg_restart_mcus, 0, 1024)
    jpeg_restart_rows = _int_in("jpeg_restart_rows", jpeg_restart_rows, 0, 64)
    threads = 0 if threads is None else _int_in("threads", threads, 0, 1024)
    return _storage.pack_shards(os.fspath(source), os.fspath(out), shard_bytes,
                                _flag("skip_broken", skip_broken), _flag("restart", restart),
                                max_file_bytes, jpeg_restart_mcus, jpeg_restart_rows,
                                _flag("keep_progressive", keep_progressive), threads)


def _list_folder(root, extensions, is_valid_file):
    # torchvision's make_dataset, in its order.
    if not os.path.isdir(root):
        raise ValueError(f"{root}: not a directory")
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    if not classes:
        raise ValueError(f"{root}: no class folders")
    if extensions is not None:
        suffixes = tuple(e.lower() for e in ((extensions,) if isinstance(extensions, str)
                                             else extensions))
        is_valid_file = lambda path: path.lower().endswith(suffixes)  # noqa: E731
    paths, labels = [], []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for directory, _, files in sorted(os.walk(folder, followlinks=True)):
            for file in sorted(files):
                path = os.path.join(directory, file)
                if is_valid_file(path):
                    paths.append(os.path.relpath(path, root))
                    labels.append(label)
    if not paths:
        raise ValueError(f"{root}: no files found")
    return paths, np.asarray(labels, dtype=np.int64).tolist(), classes
