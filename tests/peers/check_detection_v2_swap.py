"""The one-line swap on detection written with torchvision's transforms.v2
(torch 2.14 + torchvision 0.29): feedline.torch.DataLoader over
wrap_dataset_for_transforms_v2(CocoDetection(root, annFile,
transforms=v2.Compose([...])), target_keys=...), batched by
`lambda batch: tuple(zip(*batch))`, loads natively
(stats()["native_transforms"]) and gives torch's DataLoader's batches.

Data: check_coco_detection.py's COCO-format images (polygons in one or two
parts, crowds as compressed run-length masks, a box with no height, boxes
reaching past the image's edge, an image with no object) as "raw", and the
same with every box inside its image and none empty as "clean".

Must hold:
- deterministic pipelines (flips with p 0 and 1, ToImage or PILToTensor,
  ToDtype(float32, scale=True), ClampBoundingBoxes,
  SanitizeBoundingBoxes, ConvertBoundingBoxFormat, ToPureTensor; the
  wrapper's default keys and every key it has): every batch equal to
  torch's DataLoader's, value for value, with the same types
  (tv_tensors.Image, BoundingBoxes with their format, canvas size and
  clamping mode, Mask; plain tensors after ToPureTensor), dtypes, shapes
  and key order, the file's own lists ("area", "iscrowd", "bbox",
  "category_id", "segmentation") equal, an image without annotations
  {"image_id": id}; for 0 and 2 workers, on "raw" (a ClampBoundingBoxes
  first) and "clean", whole and as a Subset;
- Resize (deterministic too): boxes within 1e-3 pixel of torch's (float
  rounding of the scale), pixels within 6 levels on average (feedline's
  resampling against PIL's antialiased filter, as docs/python.md
  measures it), under 20% of the masks' pixels different (feedline draws
  the polygon at the output size, torch resizes the source-size mask);
- random pipelines (an SSD-style one: RandomPhotometricDistort,
  RandomZoomOut, RandomIoUCrop, RandomHorizontalFlip, SanitizeBoundingBoxes;
  a multi-scale one: RandomShortestSize, RandomHorizontalFlip; ScaleJitter;
  torchvision 0.29's references' v2 ssd preset written out, on PIL images
  and ending in ToPureTensor), lowered:
  every target well formed (keys, types, masks of the output's size one
  per box, boxes inside the image, labels a subsequence of the image's),
  and over 5 epochs the output's size against the source's, the share of
  objects kept, the images' mean value, spread and red less blue mean
  (two-sample Kolmogorov-Smirnov, alpha 0.001) those of torch's DataLoader;
- what cannot be lowered loads in Python, torch's batches, and stats()
  says why: boxes outside the image without a ClampBoundingBoxes first,
  RandomIoUCrop without SanitizeBoundingBoxes, empty boxes without it,
  a step feedline lacks, another collate_fn, native_transforms=False, a
  subclass of CocoDetection, a method replaced on the instance.

Usage: .venv/peer-torchvision/bin/python tests/peers/check_detection_v2_swap.py
       --pythonpath build/python --out build/peer-tests/detection-v2-swap
"""
import argparse
import collections
import contextlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_coco_detection import write_dataset  # noqa: E402
from check_detection_swap import compare_distributions  # noqa: E402


def quiet(function, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools' "loading annotations..."
        return function(*args, **kwargs)


def collate(batch):
    return tuple(zip(*batch))


def write_clean(root):
    """instances_clean.json: the raw file with every box clipped inside its
    image (half a pixel in, so that float32's x + w stays inside) and the
    boxes with no width or height left out."""
    with open(os.path.join(root, "annotations", "instances_train2017.json")) as f:
        doc = json.load(f)
    sizes = {im["id"]: (im["width"], im["height"]) for im in doc["images"]}
    kept = []
    for ann in doc["annotations"]:
        w, h = sizes[ann["image_id"]]
        x, y, bw, bh = ann["bbox"]
        x0, y0 = max(x, 0.0), max(y, 0.0)
        x1, y1 = min(x + bw, w - 0.5), min(y + bh, h - 0.5)
        if x1 - x0 < 1 or y1 - y0 < 1:
            continue
        ann["bbox"] = [x0, y0, x1 - x0, y1 - y0]
        kept.append(ann)
    doc["annotations"] = kept
    with open(os.path.join(root, "annotations", "instances_clean.json"), "w") as f:
        json.dump(doc, f)


def dataset(root, which, transforms, target_keys=None, nonempty=False, cls=None):
    import torch.utils.data as tud
    import torchvision.datasets as tvd

    cls = cls or tvd.CocoDetection
    ds = quiet(cls, os.path.join(root, "train2017"),
               os.path.join(root, "annotations",
                            "instances_train2017.json" if which == "raw" else
                            f"instances_{which}.json"),
               transforms=transforms)
    ds = tvd.wrap_dataset_for_transforms_v2(ds, target_keys=target_keys)
    if nonempty:  # as the references' _coco_remove_images_without_annotations
        keep = [i for i, image_id in enumerate(ds.ids)
                if ds.coco.getAnnIds(imgIds=image_id)]
        ds = tud.Subset(ds, keep)
    return ds


def describe(value):
    import torch

    if isinstance(value, torch.Tensor):
        extra = ""
        if hasattr(value, "format"):
            extra = f" {value.format} {tuple(value.canvas_size)} {value.clamping_mode}"
        return f"{type(value).__name__} {value.dtype} {tuple(value.shape)}{extra}"
    return f"{type(value).__name__}"


def same_value(x, y, tolerance):
    """(equal, how far apart) for two target or image values."""
    import torch

    if type(x) is not type(y):
        return False, "types differ"
    if not isinstance(x, torch.Tensor):
        return x == y, "values differ"
    if x.dtype != y.dtype or x.shape != y.shape or describe(x) != describe(y):
        return False, "types, dtypes or shapes differ"
    if tolerance is None or not x.is_floating_point():
        return torch.equal(x, y), "values differ"
    difference = float((x.double() - y.double()).abs().max()) if x.numel() else 0.0
    return difference <= tolerance, f"largest difference {difference}"


def same_batches(ours, theirs, where, failures, box_tolerance=None):
    if len(ours) != len(theirs):
        failures.append(f"{where}: {len(ours)} batches, torch's {len(theirs)}")
        return
    for b, ((images, targets), (their_images, their_targets)) in enumerate(zip(ours, theirs)):
        if not (isinstance(images, tuple) and isinstance(targets, tuple)):
            failures.append(f"{where}: batch {b} is not a tuple of tuples")
            return
        for i, (a, t) in enumerate(zip(images, their_images)):
            ok, why = same_value(a, t, None)
            if not ok:
                failures.append(f"{where}: batch {b} image {i}: {describe(a)}, torch's "
                                f"{describe(t)}: {why}")
        for i, (a, t) in enumerate(zip(targets, their_targets)):
            if list(a) != list(t):
                failures.append(f"{where}: batch {b} target {i} keys {list(a)}, torch's {list(t)}")
                continue
            for key in a:
                ok, why = same_value(a[key], t[key], box_tolerance if key == "boxes" else None)
                if not ok:
                    failures.append(f"{where}: batch {b} target {i} {key}: {describe(a[key])}, "
                                    f"torch's {describe(t[key])}: {why}")


def native_text(loader):
    stats = loader.stats()["native_transforms"]
    return (stats["native"], stats["text"]) if stats else (False, "None")


def loaders(ds, **kwargs):
    import torch.utils.data as tud
    import feedline.torch

    kwargs.setdefault("collate_fn", collate)
    ours = feedline.torch.DataLoader(ds, **kwargs)
    kwargs.pop("native_transforms", None)
    return ours, tud.DataLoader(ds, **kwargs)


def check_exact(root, failures):
    import torch
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    every = ["image_id", "boxes", "masks", "labels", "area", "iscrowd", "bbox", "category_id",
             "segmentation"]
    f32 = dict(dtype=torch.float32, scale=True)
    cases = [
        ("flip p=0, default keys", "clean", [v2.ToImage(), v2.RandomHorizontalFlip(0.0),
                                             v2.ToDtype(**f32)], None, False),
        ("flip p=1, every key", "clean", [v2.RandomHorizontalFlip(1.0), v2.ToImage(),
                                          v2.ToDtype(**f32)], every, False),
        ("clamp, flip p=1, sanitize", "raw", [v2.ClampBoundingBoxes(), v2.RandomHorizontalFlip(1.0),
                                              v2.ToImage(), v2.ToDtype(**f32),
                                              v2.SanitizeBoundingBoxes()],
         ["boxes", "labels", "masks", "image_id", "area"], True),
        ("PILToTensor, XYWH, ToPureTensor", "clean",
         [v2.PILToTensor(), v2.RandomHorizontalFlip(1.0), v2.ConvertImageDtype(torch.float32),
          v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYWH),
          v2.SanitizeBoundingBoxes(min_size=3), v2.ToPureTensor()],
         ["boxes", "labels", "masks", "image_id"], True),
        ("uint8 images, CXCYWH", "clean",
         [v2.ToImage(), v2.ConvertBoundingBoxFormat("CXCYWH")], ["boxes", "masks"], False),
    ]
    checked = 0
    for name, which, steps, keys, nonempty in cases:
        ds = dataset(root, which, v2.Compose(steps), keys, nonempty)
        for workers in (0, 2):
            where = f"{name}, {which}, {workers} workers"
            ours, theirs = loaders(ds, batch_size=4, num_workers=workers)
            native, text = native_text(ours)
            if not native:
                failures.append(f"{where}: not lowered: {text}")
            same_batches(list(ours), list(theirs), where, failures)
            checked += 1
    return checked


def check_resize(root, failures):
    import torch
    from torchvision.transforms import v2

    ds = dataset(root, "clean", v2.Compose([v2.Resize(100, max_size=150), v2.ToImage(),
                                            v2.ToDtype(torch.float32, scale=True)]),
                 ["boxes", "labels", "masks", "image_id"])
    ours, theirs = loaders(ds, batch_size=4, num_workers=2)
    if not native_text(ours)[0]:
        failures.append(f"Resize: not lowered: {native_text(ours)[1]}")
    worst_box, worst_pixel, differing, covered = 0.0, 0.0, 0, 0
    for (images, targets), (their_images, their_targets) in zip(ours, theirs):
        for a, t, ta, tt in zip(images, their_images, targets, their_targets):
            if a.shape != t.shape or list(ta) != list(tt):
                failures.append(f"Resize: {tuple(a.shape)} {list(ta)}, torch's "
                                f"{tuple(t.shape)} {list(tt)}")
                continue
            worst_pixel = max(worst_pixel, float((a - t).abs().mean()) * 255)
            if "boxes" not in ta:
                continue
            if ta["boxes"].shape != tt["boxes"].shape or describe(ta["boxes"]) != \
                    describe(tt["boxes"]):
                failures.append(f"Resize: boxes {describe(ta['boxes'])}, torch's "
                                f"{describe(tt['boxes'])}")
                continue
            if len(ta["boxes"]):
                worst_box = max(worst_box, float((ta["boxes"] - tt["boxes"]).abs().max()))
            for m, n in zip(ta["masks"], tt["masks"]):
                differing += int((m.bool() ^ n.bool()).sum())
                covered += int((m.bool() | n.bool()).sum())
    share = differing / max(covered, 1)
    print(f"Resize: boxes within {worst_box:.2e}, mean pixel difference at most "
          f"{worst_pixel:.2f} levels, {100 * share:.1f}% of the masks' pixels differ")
    # Resampling differs from PIL's antialiased filter by 4-6 levels on
    # average (docs/python.md); masks differ along their edges.
    if worst_box > 1e-3 or worst_pixel > 6 or share > 0.2:
        failures.append(f"Resize: boxes {worst_box}, pixels {worst_pixel}, masks {share:.3f}")
    return 1


def random_statistics(loader, plain, epochs, where, failures, pure=False):
    """(output area / source area, share of objects kept, mean, spread,
    red - blue mean, None) of each sample, checking its target on the way;
    `plain`: each image's (image, target) untransformed, by image id;
    `pure`: plain tensors (ToPureTensor) rather than tv_tensors."""
    import torch
    from torchvision import tv_tensors

    types = (torch.Tensor,) * 3 if pure else (tv_tensors.Image, tv_tensors.BoundingBoxes,
                                              tv_tensors.Mask)
    stats = []
    for _ in range(epochs):
        for images, targets in loader:
            for image, target in zip(images, targets):
                source, reference = plain[target["image_id"]]
                if list(target) != ["image_id", "boxes", "masks", "labels"] or \
                        (type(image), type(target["boxes"]), type(target["masks"])) != types or \
                        image.dtype != torch.float32:
                    failures.append(f"{where}: {describe(image)}, target "
                                    f"{ {k: describe(v) for k, v in target.items()} }")
                    continue
                h, w = image.shape[-2:]
                boxes, labels = target["boxes"], target["labels"].tolist()
                if tuple(getattr(boxes, "canvas_size", (h, w))) != (h, w) or \
                        tuple(target["masks"].shape) != (len(labels), h, w):
                    failures.append(f"{where}: canvas {boxes.canvas_size}, masks "
                                    f"{tuple(target['masks'].shape)}, {len(labels)} labels, "
                                    f"image {w}x{h}")
                it = iter(reference["labels"].tolist())
                if not all(label in it for label in labels):
                    failures.append(f"{where}: labels {labels} not a subsequence of "
                                    f"{reference['labels'].tolist()}")
                if len(boxes) and not (
                        (boxes[:, :2] >= -1e-3).all() and (boxes[:, 2] <= w + 1e-3).all()
                        and (boxes[:, 3] <= h + 1e-3).all() and (boxes[:, 2] > boxes[:, 0]).all()
                        and (boxes[:, 3] > boxes[:, 1]).all()):
                    failures.append(f"{where}: boxes outside the {w}x{h} image: {boxes.tolist()}")
                stats.append((h * w / (source.shape[-2] * source.shape[-1]),
                              len(labels) / max(len(reference["labels"]), 1),
                              float(image.mean()), float(image.std()),
                              float(image[0].mean() - image[2].mean()), None))
    return stats


def check_random(root, failures):
    import torch
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    keys = ["boxes", "labels", "masks", "image_id"]
    plain_ds = dataset(root, "clean", v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32,
                                                                             scale=True)]),
                       keys, nonempty=True)
    plain = {t["image_id"]: (image, t) for image, t in (plain_ds[i] for i in range(len(plain_ds)))}
    f32 = v2.ToDtype(torch.float32, scale=True)
    fill = {tv_tensors.Image: (123, 117, 104), "others": 0}
    # torchvision 0.29's references' ssd preset with use_v2=True, written
    # out: on PIL images, its fill a defaultdict that torchvision's
    # _get_fill does not call, so the canvas is black, not the mean.
    references_fill = collections.defaultdict(lambda: (123, 117, 104), {tv_tensors.Mask: 0})
    pipelines = [
        ("ssd", [v2.ToImage(), v2.RandomPhotometricDistort(p=1.0), v2.RandomZoomOut(fill=fill),
                 v2.RandomIoUCrop(), v2.RandomHorizontalFlip(), f32, v2.SanitizeBoundingBoxes()]),
        ("the references' v2 ssd", [
            v2.RandomPhotometricDistort(), v2.RandomZoomOut(fill=references_fill),
            v2.RandomIoUCrop(), v2.RandomHorizontalFlip(), v2.ToImage(), f32,
            v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
            v2.SanitizeBoundingBoxes(), v2.ToPureTensor()]),
        # The references' sizes enlarge COCO's photos or shrink them a
        # little; so do these, for images of 60-200 pixels, and the scale
        # jitter's enlarges them. (Shrinking by 1.2-2x, feedline's bilinear
        # is sharper than torchvision's antialiased filter: the spread of
        # these noisy images then differs, KS 0.27 for a jitter of
        # 0.64-1.3x, 2026-12-07.)
        ("multiscale", [v2.RandomShortestSize(min_size=[160, 192, 224, 256], max_size=400),
                        v2.RandomHorizontalFlip(), v2.ToImage(), f32,
                        v2.SanitizeBoundingBoxes()]),
        ("scale jitter", [v2.ToImage(), v2.ScaleJitter(target_size=(240, 240),
                                                       scale_range=(1.0, 2.0)),
                          v2.RandomHorizontalFlip(), f32, v2.SanitizeBoundingBoxes()]),
    ]
    for name, steps in pipelines:
        ds = dataset(root, "clean", v2.Compose(steps), keys, nonempty=True)
        torch.manual_seed(0)
        ours, theirs = loaders(ds, batch_size=4, num_workers=2)
        native, text = native_text(ours)
        if not native:
            failures.append(f"{name}: not lowered: {text}")
        pure = name.startswith("the references'")
        ours_stats = random_statistics(ours, plain, 5, f"{name} (feedline)", failures, pure)
        their_stats = random_statistics(theirs, plain, 5, f"{name} (torch)", failures, pure)
        compare_distributions(ours_stats, their_stats, name, failures)
    return len(pipelines)


def check_kept(root, failures):
    """What stays in Python says why, and gives torch's batches."""
    import torch
    import torchvision.datasets as tvd
    from torchvision.transforms import v2

    f32 = v2.ToDtype(torch.float32, scale=True)
    keys = ["boxes", "labels", "image_id"]

    class MyCoco(tvd.CocoDetection):
        pass

    flip = v2.RandomHorizontalFlip(1.0)
    flip.forward = lambda *inputs: inputs if len(inputs) > 1 else inputs[0]
    cases = [
        ("boxes outside the image",
         dataset(root, "raw", v2.Compose([v2.ToImage(), f32, v2.SanitizeBoundingBoxes()]), keys,
                 nonempty=True), {}, "reach outside their image", True),
        ("an image without annotations and SanitizeBoundingBoxes",
         dataset(root, "clean", v2.Compose([v2.ToImage(), f32, v2.SanitizeBoundingBoxes()]),
                 keys), {}, "have no annotation", False),
        ("RandomIoUCrop without SanitizeBoundingBoxes",
         dataset(root, "clean", v2.Compose([v2.ToImage(), v2.RandomIoUCrop(), f32]), keys,
                 nonempty=True), {}, "RandomIoUCrop has no SanitizeBoundingBoxes", False),
        ("empty boxes without SanitizeBoundingBoxes",
         dataset(root, "raw", v2.Compose([v2.ClampBoundingBoxes(), v2.ToImage(), f32]), keys),
         {}, "have no width or height", True),
        ("a step feedline lacks",
         dataset(root, "clean", v2.Compose([v2.ToImage(), v2.RandomVerticalFlip(1.0), f32]),
                 keys), {}, "RandomVerticalFlip is not one of", True),
        ("another collate_fn", dataset(root, "clean", v2.Compose([v2.ToImage(), f32]), keys),
         dict(collate_fn=lambda batch: list(zip(*batch))), "collate_fn is not", True),
        ("native_transforms=False",
         dataset(root, "clean", v2.Compose([v2.ToImage(), f32]), keys),
         dict(native_transforms=False), "native_transforms=False", True),
        ("a subclass of CocoDetection",
         dataset(root, "clean", v2.Compose([v2.ToImage(), f32]), keys, cls=MyCoco), {},
         "a subclass of torchvision's CocoDetection", True),
        ("a forward replaced on the instance",
         dataset(root, "clean", v2.Compose([v2.ToImage(), flip, f32]), keys), {},
         "its RandomHorizontalFlip's forward is replaced", True),
    ]
    for name, ds, kwargs, reason, compare in cases:
        torch.manual_seed(1)
        ours, theirs = loaders(ds, batch_size=4, num_workers=2, **kwargs)
        native, text = native_text(ours)
        if native or reason not in text:
            failures.append(f"{name}: stats() says {text!r}, not why it runs in Python "
                            f"({reason!r})")
        if compare:
            same_batches(list(ours), list(theirs), name, failures)
            continue
        # Random or failing in torchvision: the same number of batches, or
        # an error from both.
        counts = []
        for loader in (ours, theirs):
            try:
                counts.append(len(list(loader)))
            except Exception as e:  # torchvision's own error, from a worker
                counts.append(type(e).__name__)
        if counts[0] != counts[1] and not all(isinstance(c, str) for c in counts):
            failures.append(f"{name}: {counts[0]} in Python, torch's {counts[1]}")
    return len(cases)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pythonpath", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--images", type=int, default=60)
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.pythonpath))
    import torchvision

    root = os.path.abspath(args.out)
    write_dataset(root, args.images)
    write_clean(root)
    failures, checked = [], 0
    for check in (check_exact, check_resize, check_random, check_kept):
        checked += check(root, failures)
    for failure in failures[:40]:
        print("FAILED:", failure)
    kinds = sorted({failure.split(":")[0] for failure in failures})
    if kinds:
        print("failed checks:", "; ".join(kinds))
    print(f"check_detection_v2_swap: torchvision {torchvision.__version__}, {checked} checks "
          f"on {args.images} images, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
