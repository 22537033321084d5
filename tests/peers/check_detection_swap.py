"""The one-line swap on torchvision's detection references (torchvision
0.14.1's references/detection, fetched from Debian's source package at test
time, never committed): feedline.torch.DataLoader over what their train.py
builds, coco_utils.get_coco(root, image_set, preset) with utils.collate_fn,
loads natively (stats()["native_transforms"]) and gives torch's
DataLoader's batches.

Data: check_coco_detection.py's COCO-format images (polygons in one or two
parts, crowds as compressed run-length masks, a box with no height whose
object the references drop but count in "area", an image with no object),
as train2017 and, for get_coco(..., "val"), as val2017 too.

Must hold:
- DetectionPresetEval, and DetectionPresetTrain("hflip") with hflip_prob 0
  and 1 (no random draw left): every batch equal to torch's DataLoader's,
  tensor for tensor (images, boxes, labels, masks, image_id, area,
  iscrowd, their dtypes and shapes, the dict's key order), for 0 workers
  and 2 worker processes, train (the Subset without empty images) and val
  (every image), and with the references' GroupedBatchSampler;
- the same for COCO's person keypoints (get_coco(..., mode=
  "person_keypoints"), as get_coco_kp reads them) with the eval and hflip
  presets, "keypoints" included (mirrored with the references' left-right
  swap); with the ssd preset, whose zoom-out and crop leave the keypoints
  where they are, it stays in Python and says why;
- hflip_prob 0.5: each image equal to torch's unflipped one or its mirror,
  each mirrored about half the time over 6 epochs;
- the random presets (ssd, ssdlite, multiscale, lsj), lowered: every
  target has torch's keys, dtypes and the references' quirks (ssd and
  ssdlite: masks at the source size, one per object before the crop, equal
  to ConvertCocoPolysToMask's or their mirror; the others: masks of the
  output's size, one per box, inside it; area, iscrowd and image_id
  unchanged; the labels a subsequence of the image's; the boxes inside the
  image), and over 5 epochs (3 for multiscale and lsj) the
  output's size against the source's, the share of objects kept, the
  images' mean value, their spread and their red mean less their blue
  mean (two-sample Kolmogorov-Smirnov, alpha 0.001) and the share mirrored
  are those of torch's DataLoader on the same dataset;
- loader.dataset is the references' dataset, so their evaluation finds its
  .coco;
- the annotations the dataset holds are what loads: val's file lists its
  images out of id order, get_coco(..., mode="relabelled") reads another
  file, and labels edited in memory before the loader is made; a dataset
  that changes length after the loader is made raises an error saying so;
- what cannot be lowered loads in Python, torch's batches, and stats() says
  why: a preset edited past what feedline takes, another collate_fn, an edited copy of a reference
  class, native_transforms=False, and methods replaced at run time (on the
  dataset, on torchvision's CocoDetection, on ConvertCocoPolysToMask).

Usage: .venv/detection-bench/bin/python tests/peers/check_detection_swap.py
       --references build/peer-tests/references/detection
       --pythonpath build/python --out build/peer-tests/detection-swap
"""
import contextlib
import io
import json
import os
import random
import sys


def quiet(function, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools' "loading annotations..."
        return function(*args, **kwargs)


def same_batches(ours, theirs, where, failures):
    import torch

    if len(ours) != len(theirs):
        failures.append(f"{where}: {len(ours)} batches, torch's {len(theirs)}")
        return
    for b, ((images, targets), (their_images, their_targets)) in enumerate(zip(ours, theirs)):
        if not (isinstance(images, tuple) and isinstance(targets, tuple)):
            failures.append(f"{where}: batch {b} is not a tuple of tuples")
            return
        for i, (a, t) in enumerate(zip(images, their_images)):
            if a.dtype != t.dtype or a.shape != t.shape or not torch.equal(a, t):
                failures.append(f"{where}: batch {b} image {i}: {a.dtype} {tuple(a.shape)}, "
                                f"torch's {t.dtype} {tuple(t.shape)}"
                                + ("" if a.shape != t.shape else
                                   f", largest difference {float((a - t).abs().max())}"))
        for i, (a, t) in enumerate(zip(targets, their_targets)):
            if list(a) != list(t):
                failures.append(f"{where}: batch {b} target {i} keys {list(a)}, torch's {list(t)}")
                continue
            for key in a:
                x, y = a[key], t[key]
                if x.dtype != y.dtype or x.shape != y.shape or not torch.equal(x, y):
                    failures.append(f"{where}: batch {b} target {i} {key}: {x.dtype} "
                                    f"{tuple(x.shape)} {x.flatten()[:8].tolist()}, torch's "
                                    f"{y.dtype} {tuple(y.shape)} {y.flatten()[:8].tolist()}")


def ks_statistic(a, b):
    """The two-sample Kolmogorov-Smirnov statistic of samples a and b."""
    a, b = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    while i < len(a) and j < len(b):
        x = min(a[i], b[j])
        while i < len(a) and a[i] <= x:
            i += 1
        while j < len(b) and b[j] <= x:
            j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    return d


def random_preset_statistics(loader, plain, epochs, source_masks, where, failures):
    """Each sample's (area ratio, share of objects kept, mean value, standard
    deviation, red mean - blue mean, mirrored), checking its target on the
    way: with `source_masks` (ssd, ssdlite) the references' masks or their
    mirror (mirrored then says which), else masks of the output's size, one
    per box, each inside its box (mirrored is then None). `plain`: (image,
    target) of each image under DetectionPresetEval, in dataset order (the
    loader is sequential)."""
    import torch

    stats = []
    for _ in range(epochs):
        index = 0
        for images, targets in loader:
            for image, target in zip(images, targets):
                reference_image, reference = plain[index]
                index += 1
                keys = ["boxes", "labels", "masks", "image_id", "area", "iscrowd"]
                if list(target) != keys:
                    failures.append(f"{where}: keys {list(target)}")
                    continue
                dtypes = [target[k].dtype for k in keys]
                if dtypes != [reference[k].dtype for k in keys] or image.dtype != torch.float32:
                    failures.append(f"{where}: dtypes {dtypes}, image {image.dtype}")
                    continue
                for key in ("image_id", "area", "iscrowd"):
                    if not torch.equal(target[key], reference[key]):
                        failures.append(f"{where}: {key} {target[key]}, {reference[key]}")
                labels, boxes = target["labels"].tolist(), target["boxes"]
                h, w = image.shape[-2:]
                masks = target["masks"]
                if source_masks:
                    mirrored = not torch.equal(masks, reference["masks"])
                    if mirrored and not torch.equal(masks, reference["masks"].flip(-1)):
                        failures.append(f"{where}: image {index - 1}'s masks are neither the "
                                        "references' nor their mirror")
                else:
                    mirrored = None
                    if tuple(masks.shape) != (len(labels), h, w):
                        failures.append(f"{where}: masks {tuple(masks.shape)} for {len(labels)} "
                                        f"boxes of a {w}x{h} image")
                    else:
                        # Within a source pixel (torch resizes source-size
                        # masks) and one output pixel of its box.
                        slack = 1 + max(h / reference_image.shape[-2],
                                        w / reference_image.shape[-1])
                        for mask, box in zip(masks, boxes.tolist()):
                            ys, xs = torch.nonzero(mask, as_tuple=True)
                            if len(xs) and (xs.min() < box[0] - slack or xs.max() > box[2] + slack
                                            or ys.min() < box[1] - slack
                                            or ys.max() > box[3] + slack):
                                failures.append(f"{where}: a mask outside its box {box}")
                it = iter(reference["labels"].tolist())
                if not all(label in it for label in labels):
                    failures.append(f"{where}: labels {labels} not a subsequence of "
                                    f"{reference['labels'].tolist()}")
                # (torch's resized boxes may pass the edge by a float's rounding)
                if len(boxes) and not (
                        (boxes[:, 0] >= -1e-3).all() and (boxes[:, 1] >= -1e-3).all()
                        and (boxes[:, 2] <= w + 1e-3).all() and (boxes[:, 3] <= h + 1e-3).all()
                        and (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all()):
                    failures.append(f"{where}: boxes outside the {w}x{h} image: {boxes.tolist()}")
                source = reference_image.shape[-2] * reference_image.shape[-1]
                stats.append((h * w / source, len(labels) / max(len(reference["labels"]), 1),
                              float(image.mean()), float(image.std()),
                              float(image[0].mean() - image[2].mean()), mirrored))
    return stats


def compare_distributions(ours, theirs, where, failures):
    """Each statistic of random_preset_statistics, ours against torch's."""
    import math

    n, m = len(ours), len(theirs)
    bound = 1.95 * math.sqrt((n + m) / (n * m))  # KS at alpha 0.001
    statistics = []
    for k, name in enumerate(("output size / source size", "share of objects kept",
                              "mean value", "standard deviation of the values",
                              "red mean - blue mean")):
        d = ks_statistic([s[k] for s in ours], [s[k] for s in theirs])
        statistics.append(f"{d:.3f}")
        if d > bound:
            failures.append(f"{where}: {name}: KS statistic {d:.3f} over {bound:.3f} "
                            f"(means {sum(s[k] for s in ours) / n:.3f}, torch's "
                            f"{sum(s[k] for s in theirs) / m:.3f})")
    print(f"{where}: {n} samples, torch's {m}; KS statistics {', '.join(statistics)} "
          f"(bound {bound:.3f})")
    if ours[0][5] is None:
        return
    a, b = sum(s[5] for s in ours) / n, sum(s[5] for s in theirs) / m
    if abs(a - b) > 4 * math.sqrt(0.25 * (1 / n + 1 / m)):
        failures.append(f"{where}: mirrored {a:.2f} of the time, torch's {b:.2f}")


def native_text(loader):
    stats = loader.stats()["native_transforms"]
    return stats["native"], stats["text"]


def write_keypoints(root, seed=2):
    """annotations/person_keypoints_train2017.json: the instances file's
    images and objects, each non-crowd object with COCO's 17 person
    keypoints inside its box (about 3 in 10 unlabelled: 0, 0, 0), each crowd
    with 17 unlabelled ones, as COCO's own file lists them."""
    rng = random.Random(seed)
    with open(os.path.join(root, "annotations", "instances_train2017.json")) as f:
        doc = json.load(f)
    for ann in doc["annotations"]:
        x, y, w, h = ann["bbox"]
        points = []
        for _ in range(17):
            if ann["iscrowd"] or rng.random() < 0.3:
                points += [0, 0, 0]
            else:
                points += [round(x + rng.random() * w, 2), round(y + rng.random() * h, 2),
                           rng.choice([1, 2])]
        ann["keypoints"] = points
        ann["num_keypoints"] = sum(1 for v in points[2::3] if v)
    path = os.path.join(root, "annotations", "person_keypoints_train2017.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def main():
    from check_coco_detection import parse_arguments, write_dataset

    args = parse_arguments(__doc__)
    import torch
    import torch.utils.data as tud

    import coco_utils
    import group_by_aspect_ratio
    import presets
    import utils
    import feedline.torch

    root = os.path.abspath(args.out)
    write_dataset(root, args.images)
    if not os.path.exists(os.path.join(root, "val2017")):
        os.symlink("train2017", os.path.join(root, "val2017"))
    with open(os.path.join(root, "annotations", "instances_train2017.json")) as f:
        doc = json.load(f)
    # val: the images and objects listed out of id order, as COCO's own files
    # list them (torchvision's CocoDetection sorts its ids).
    random.Random(0).shuffle(doc["images"])
    random.Random(1).shuffle(doc["annotations"])
    with open(os.path.join(root, "annotations", "instances_val2017.json"), "w") as f:
        json.dump(doc, f)
    # get_coco(..., mode="relabelled") reads relabelled_train2017.json: the
    # same images, other labels.
    for ann in doc["annotations"]:
        ann["category_id"] = 100 + ann["category_id"]
    with open(os.path.join(root, "annotations", "relabelled_train2017.json"), "w") as f:
        json.dump(doc, f)
    failures, checked = [], 0

    def loaders(dataset, **kwargs):
        kwargs.setdefault("collate_fn", utils.collate_fn)
        ours = feedline.torch.DataLoader(dataset, **kwargs)
        kwargs.pop("worker_mode", None)
        kwargs.pop("timeout", None)
        return ours, tud.DataLoader(dataset, **kwargs)

    exact = [("eval", "train", presets.DetectionPresetEval()),
             ("eval", "val", presets.DetectionPresetEval()),
             ("hflip p=0", "train", presets.DetectionPresetTrain(data_augmentation="hflip",
                                                                 hflip_prob=0.0)),
             ("hflip p=1", "train", presets.DetectionPresetTrain(data_augmentation="hflip",
                                                                 hflip_prob=1.0))]
    for name, image_set, preset in exact:
        dataset = quiet(coco_utils.get_coco, root, image_set, preset)
        for workers in (0, 2):
            where = f"{name}, {image_set}, {workers} workers"
            ours, theirs = loaders(dataset, batch_size=4, num_workers=workers,
                                   timeout=120 if workers else 0)
            native, text = native_text(ours)
            if not native:
                failures.append(f"{where}: not lowered: {text}")
            if ours.dataset is not dataset:
                failures.append(f"{where}: loader.dataset is not the references' dataset")
            same_batches(list(ours), list(theirs), where, failures)
            checked += 1
        # The references' GroupedBatchSampler (train.py's default grouping).
        groups = quiet(group_by_aspect_ratio.create_aspect_ratio_groups, dataset, k=3)
        batch_sampler = group_by_aspect_ratio.GroupedBatchSampler(
            tud.SequentialSampler(dataset), groups, 4)
        ours, theirs = loaders(dataset, batch_sampler=batch_sampler, num_workers=2, timeout=120)
        same_batches(list(ours), list(theirs), f"{name}, {image_set}, GroupedBatchSampler",
                     failures)
        checked += 1

    # COCO's person keypoints (get_coco(..., mode="person_keypoints"), as the
    # references' get_coco_kp reads them): lowered with eval and hflip, each
    # batch torch's, keypoints included (flipped with their left-right swap).
    keypoints_file = write_keypoints(root)
    for name, preset in (("eval", presets.DetectionPresetEval()),
                         ("hflip p=0", presets.DetectionPresetTrain(data_augmentation="hflip",
                                                                    hflip_prob=0.0)),
                         ("hflip p=1", presets.DetectionPresetTrain(data_augmentation="hflip",
                                                                    hflip_prob=1.0))):
        dataset = quiet(coco_utils.get_coco, root, "train", preset, mode="person_keypoints")
        for workers in (0, 2):
            where = f"keypoints, {name}, {workers} workers"
            ours, theirs = loaders(dataset, batch_size=4, num_workers=workers,
                                   timeout=120 if workers else 0)
            native, text = native_text(ours)
            if not native:
                failures.append(f"{where}: not lowered: {text}")
            batches = list(theirs)
            if not any("keypoints" in t for _, targets in batches for t in targets):
                failures.append(f"{where}: torch's targets have no keypoints ({keypoints_file})")
            same_batches(list(ours), batches, where, failures)
            checked += 1

    # What the dataset holds is what loads, wherever it came from: another
    # file of get_coco's (mode), or the annotations edited in memory
    # (class-agnostic labels) before the loader is made.
    relabelled = quiet(coco_utils.get_coco, root, "train", presets.DetectionPresetEval(),
                       mode="relabelled")
    edited = quiet(coco_utils.get_coco, root, "train", presets.DetectionPresetEval())
    for ann in edited.dataset.coco.anns.values():
        ann["category_id"] = 1
    for name, dataset in (("mode='relabelled'", relabelled), ("labels edited", edited)):
        ours, theirs = loaders(dataset, batch_size=4, num_workers=2, timeout=120)
        if not native_text(ours)[0]:
            failures.append(f"{name}: not lowered: {native_text(ours)[1]}")
        same_batches(list(ours), list(theirs), name, failures)
        checked += 1

    # A dataset that changes length after the loader lowered it: a clear error.
    shrunk = quiet(coco_utils.get_coco, root, "train", presets.DetectionPresetEval())
    ours = feedline.torch.DataLoader(shrunk, batch_size=4, collate_fn=utils.collate_fn)
    shrunk.indices = shrunk.indices[:5]
    try:
        list(ours)
        failures.append("a dataset shrunk after lowering loaded without an error")
    except RuntimeError as e:
        if "make a new DataLoader" not in str(e):
            failures.append(f"a dataset shrunk after lowering: {e}")
    checked += 1

    # hflip 0.5: each image is torch's unflipped one or its mirror.
    dataset = quiet(coco_utils.get_coco, root, "train",
                    presets.DetectionPresetTrain(data_augmentation="hflip"))
    plain = [sample for batch in tud.DataLoader(
        quiet(coco_utils.get_coco, root, "train", presets.DetectionPresetEval()),
        batch_size=4, collate_fn=utils.collate_fn) for sample in zip(*batch)]
    torch.manual_seed(0)
    ours = feedline.torch.DataLoader(dataset, batch_size=4, num_workers=2,
                                     collate_fn=utils.collate_fn, timeout=120)
    mirrored = draws = 0
    for _ in range(6):
        for b, (images, targets) in enumerate(ours):
            for i, (image, target) in enumerate(zip(images, targets)):
                reference_image, reference_target = plain[4 * b + i]
                width = image.shape[-1]
                if torch.equal(image, reference_image):
                    boxes = reference_target["boxes"]
                    masks = reference_target["masks"]
                else:
                    image = image.flip(-1)
                    boxes = reference_target["boxes"].clone()
                    boxes[:, [0, 2]] = width - boxes[:, [2, 0]]
                    masks = reference_target["masks"].flip(-1)
                    mirrored += 1
                draws += 1
                if not (torch.equal(image, reference_image) and torch.equal(
                        target["boxes"], boxes) and torch.equal(target["masks"], masks)):
                    failures.append(f"hflip p=0.5: batch {b} image {i} is neither torch's "
                                    "image nor its mirror")
    if not 0.4 <= mirrored / draws <= 0.6:
        failures.append(f"hflip p=0.5: {mirrored} of {draws} images mirrored")
    checked += 1

    # The random presets: natively, the references' targets, torch's
    # distributions.
    plain = [sample for batch in tud.DataLoader(
        quiet(coco_utils.get_coco, root, "train", presets.DetectionPresetEval()),
        batch_size=4, collate_fn=utils.collate_fn) for sample in zip(*batch)]
    for augmentation in ("ssd", "ssdlite", "ssd's distort alone", "multiscale", "lsj"):
        preset = presets.DetectionPresetTrain(data_augmentation=augmentation.split("'")[0])
        if augmentation == "ssd's distort alone":
            # The references' own classes, set to leave the geometry alone
            # (the lowering reads their attributes): the colours compare
            # without a canvas or a crop in the way.
            _, zoom_out, iou_crop, flip = preset.transforms.transforms[:4]
            zoom_out.p, iou_crop.options, flip.p = 0.0, [1.0], 0.0
        dataset = quiet(coco_utils.get_coco, root, "train", preset)
        # Both loaders seeded from torch's generator: the same draws every
        # run, so the comparison is a fixed one, not a flaky one.
        torch.manual_seed(0)
        ours = feedline.torch.DataLoader(dataset, batch_size=4, num_workers=2,
                                         collate_fn=utils.collate_fn, timeout=120)
        native, text = native_text(ours)
        if not native:
            failures.append(f"{augmentation}: not lowered: {text}")
        torch.manual_seed(0)
        theirs = tud.DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=utils.collate_fn)
        source_masks = augmentation.startswith("ssd")
        epochs = 5 if source_masks else 3
        ours_stats = random_preset_statistics(ours, plain, epochs, source_masks,
                                              f"{augmentation} (feedline)", failures)
        their_stats = random_preset_statistics(theirs, plain, epochs, source_masks,
                                               f"{augmentation} (torch)", failures)
        compare_distributions(ours_stats, their_stats, augmentation, failures)
        checked += 1

    # What stays in Python, and says why.
    class EditedConvert(coco_utils.ConvertCocoPolysToMask):
        pass

    edited = quiet(coco_utils.get_coco, root, "train", presets.DetectionPresetEval())
    edited.dataset._transforms.transforms[0] = EditedConvert()
    # A preset edited past what feedline takes (a flip with p=2, which
    # torch's loader runs: every image flipped) stays in Python.
    flip_twice = quiet(coco_utils.get_coco, root, "train",
                       presets.DetectionPresetTrain(data_augmentation="hflip"))
    flip_twice.dataset._transforms.transforms[1].transforms.transforms[0].p = 2.0
    # A resize after the ssdlite preset's IoU crop would resize the masks
    # that one leaves at the source size: not lowered. (A FixedSizeCrop there
    # fails in the references themselves: it filters masks the IoU crop did
    # not.)
    import transforms as reference_transforms
    cropped_after = quiet(coco_utils.get_coco, root, "train",
                          presets.DetectionPresetTrain(data_augmentation="ssdlite"))
    cropped_after.dataset._transforms.transforms[1].transforms.transforms.insert(
        1, reference_transforms.RandomShortestSize([64], 128))
    # Keypoints through the ssd preset, whose zoom-out and crop leave them
    # where they are in the references.
    kept_keypoints = quiet(coco_utils.get_coco, root, "train",
                           presets.DetectionPresetTrain(data_augmentation="ssd"),
                           mode="person_keypoints")
    kept = [("keypoints with the ssd preset", kept_keypoints, {},
             "which the references' RandomZoomOut leaves where they are"),
            ("a flip with p=2", flip_twice, {},
             "its RandomHorizontalFlip's parameters have no native form"),
            ("a RandomShortestSize after the IoU crop", cropped_after, {},
             "its RandomShortestSize comes after RandomIoUCrop"),
            ("another collate_fn", quiet(coco_utils.get_coco, root, "train",
                                         presets.DetectionPresetEval()),
             dict(collate_fn=lambda batch: list(zip(*batch))),
             "collate_fn is not the references' utils.collate_fn"),
            ("an edited ConvertCocoPolysToMask", edited, {},
             "do not start with the references' ConvertCocoPolysToMask"),
            ("native_transforms=False", quiet(coco_utils.get_coco, root, "train",
                                              presets.DetectionPresetEval()),
             dict(native_transforms=False), "native_transforms=False")]
    # Methods replaced at run time, which the files' source does not show.
    import torchvision.datasets
    replaced = quiet(coco_utils.get_coco, root, "train", presets.DetectionPresetEval())
    replaced.dataset._load_image = lambda image_id: None
    kept.append(("the dataset's _load_image replaced", replaced, {},
                 "the dataset's _load_image is replaced"))
    # A transform's forward set on the instance (nn.Module calls it first):
    # a flip that never flips.
    no_flip = quiet(coco_utils.get_coco, root, "train",
                    presets.DetectionPresetTrain(data_augmentation="hflip", hflip_prob=1.0))
    flip = no_flip.dataset._transforms.transforms[1].transforms.transforms[0]
    flip.forward = lambda image, target=None: (image, target)
    kept.append(("a flip's forward replaced on the instance", no_flip, {},
                 "its RandomHorizontalFlip's forward is replaced"))
    patches = [(torchvision.datasets.CocoDetection, "_load_target",
                "torchvision's CocoDetection._load_target is replaced"),
               (coco_utils.ConvertCocoPolysToMask, "__call__",
                "do not start with the references' ConvertCocoPolysToMask")]
    for cls, method, reason in patches:
        original = getattr(cls, method)
        setattr(cls, method, lambda self, *args: original(self, *args))
        try:
            ours = feedline.torch.DataLoader(
                quiet(coco_utils.get_coco, root, "train", presets.DetectionPresetEval()),
                batch_size=4, collate_fn=utils.collate_fn)
            native, text = native_text(ours)
            if native or reason not in text:
                failures.append(f"{cls.__name__}.{method} replaced: stats() says {text!r}")
        finally:
            setattr(cls, method, original)
        checked += 1
    for name, dataset, kwargs, reason in kept:
        torch.manual_seed(1)
        ours = feedline.torch.DataLoader(dataset, batch_size=4, num_workers=2, timeout=120,
                                         **{"collate_fn": utils.collate_fn, **kwargs})
        native, text = native_text(ours)
        if native or reason not in text:
            failures.append(f"{name}: stats() says {text!r}, not why it runs in Python "
                            f"({reason!r})")
        if name.startswith("the dataset's _load_image"):
            checked += 1
            continue  # its samples have no image: they fail in Python as in torch
        batches = list(ours)
        if name in ("a RandomShortestSize after the IoU crop",
                    "keypoints with the ssd preset"):  # random: torch's draws
            if len(batches) != (len(dataset) + 3) // 4:
                failures.append(f"{name}: {len(batches)} batches in Python")
            checked += 1
            continue
        theirs = list(tud.DataLoader(dataset, batch_size=4,
                                     **{"collate_fn": utils.collate_fn, **kwargs}
                                     if "native_transforms" not in kwargs else
                                     {"collate_fn": utils.collate_fn}))
        same_batches(batches, theirs, name, failures)
        checked += 1

    for failure in failures[:40]:
        print("FAILED:", failure)
    print(f"check_detection_swap: {checked} checks on {args.images} images, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
