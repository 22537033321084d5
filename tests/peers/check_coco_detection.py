"""feedline.vision.datasets.CocoDetection against torchvision's detection
references (torchvision 0.14.1's references/detection, fetched from Debian's
source package at test time, never committed) on the same COCO-format data.

The data: --images JPEGs of different sizes written into --out in COCO's
layout (train2017/, annotations/instances_train2017.json), each with 0-6
objects: star-shaped polygons of 3-12 vertices (some in two parts), crowds
with a run-length mask (compressed, as pycocotools encodes it), a box with
no height, a box reaching past the image's edge, and an image with no
object. The reference is coco_utils.get_coco(root, "train",
DetectionPresetTrain(data_augmentation="hflip")): ConvertCocoPolysToMask
(pycocotools rasterizes the polygons), the removal of images without
annotations, RandomHorizontalFlip, PILToTensor, ConvertImageDtype. feedline's
is CocoDetection(skip_empty=True, masks=True) with PILToTensor and
ConvertImageDtype; each reference sample is compared with feedline's, or
with its mirror where the reference's flip drew a flip (told by the boxes).

Must hold: the same images in the same order; boxes, labels, image ids,
areas and crowd flags equal (the reference's areas and crowd flags include
the objects it drops, which feedline's do not: compared on the objects
kept); pixels within 1/255 (both decode with
libjpeg-turbo); every mask equal to pycocotools', pixel for pixel (feedline
draws polygons by COCO's own rule, and mirrors the drawn mask as the
reference's flip does). feedline.io.GroupedBatchSampler gives the
references' GroupedBatchSampler's batches for 200 random orders, groups and
batch sizes, and aspect_ratio_groups their create_aspect_ratio_groups'
groups of this dataset for k = 0..3.

Usage: .venv/detection-bench/bin/python tests/peers/check_coco_detection.py
       --references build/peer-tests/references/detection
       --pythonpath build/python --out build/peer-tests/coco
"""
import argparse
import contextlib
import io
import json
import math
import os
import sys

import numpy as np


def star(rng, cx, cy, radius, vertices):
    points = []
    for k in range(vertices):
        angle = 2 * math.pi * k / vertices + rng.uniform(-0.2, 0.2)
        r = radius * rng.uniform(0.4, 1.0)
        points += [cx + r * math.cos(angle), cy + r * math.sin(angle)]
    return [round(v, 2) for v in points]


def write_dataset(root, count, seed=0):
    import PIL.Image
    import pycocotools.mask as mask_util
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(root, "train2017"), exist_ok=True)
    os.makedirs(os.path.join(root, "annotations"), exist_ok=True)
    doc = {"images": [], "annotations": [],
           "categories": [{"id": c, "name": f"class{c}"} for c in range(1, 8)]}
    for i in range(count):
        h, w = int(rng.integers(60, 200)), int(rng.integers(60, 240))
        yy, xx = np.mgrid[0:h, 0:w]
        pixels = np.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) * 7) % 256], -1)
        pixels = (pixels + rng.integers(0, 40, (h, w, 3))).clip(0, 255).astype(np.uint8)
        name = f"{i:06d}.jpg"
        PIL.Image.fromarray(pixels).save(os.path.join(root, "train2017", name), quality=90)
        doc["images"].append({"id": 1000 + i, "file_name": name, "height": h, "width": w})
        objects = 0 if i == 3 else int(rng.integers(1, 7))
        for k in range(objects):
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            radius = rng.uniform(5, min(h, w) / 2)
            ann = {"id": len(doc["annotations"]) + 1, "image_id": 1000 + i,
                   "category_id": int(rng.integers(1, 8)), "iscrowd": 0}
            if k == 4:  # a crowd, as a compressed run-length mask
                m = np.zeros((h, w), np.uint8, order="F")
                m[int(cy) // 2:int(cy), int(cx) // 2:int(cx)] = 1
                rle = mask_util.encode(np.asfortranarray(m))
                ann.update(iscrowd=1, segmentation={"size": [h, w],
                                                     "counts": rle["counts"].decode()},
                           bbox=[float(v) for v in mask_util.toBbox(rle)],
                           area=float(mask_util.area(rle)))
            else:
                parts = [star(rng, cx, cy, radius, int(rng.integers(3, 13)))]
                if k == 1:
                    parts.append(star(rng, cx + radius, cy, radius / 2, 5))
                xs = np.concatenate([p[0::2] for p in parts])
                ys = np.concatenate([p[1::2] for p in parts])
                x0, y0 = float(xs.min()), float(ys.min())
                box = [x0, y0, float(xs.max()) - x0, float(ys.max()) - y0]
                if k == 5:
                    box[3] = 0.0  # no height: dropped by both
                ann.update(segmentation=parts, bbox=box, area=float(box[2] * box[3]))
            doc["annotations"].append(ann)
    with open(os.path.join(root, "annotations", "instances_train2017.json"), "w") as f:
        json.dump(doc, f)


def kept_objects(doc, image_id):
    """Which of an image's non-crowd annotations keep their box (clamped to
    the image, with width and height), as the reference decides it."""
    image = next(im for im in doc["images"] if im["id"] == image_id)
    keep = []
    for ann in doc["annotations"]:
        if ann["image_id"] != image_id or ann["iscrowd"]:
            continue
        x, y, w, h = (np.float32(v) for v in ann["bbox"])
        x1 = min(max(x + w, 0), image["width"])
        y1 = min(max(y + h, 0), image["height"])
        keep.append(bool(x1 > min(max(x, 0), image["width"]) and
                         y1 > min(max(y, 0), image["height"])))
    return np.array(keep, dtype=bool)


def check_grouped_batches(reference, ours, failures):
    """feedline.io.GroupedBatchSampler and aspect_ratio_groups against the
    references' GroupedBatchSampler and create_aspect_ratio_groups: the
    groups of the dataset's images for k = 0..3, and the batches of random
    orders, groups and batch sizes."""
    import torch.utils.data as tud
    import group_by_aspect_ratio as grouping
    from feedline import io as fio

    class Order(tud.Sampler):
        def __init__(self, indices):
            self.indices = list(indices)

        def __iter__(self):
            return iter(self.indices)

        def __len__(self):
            return len(self.indices)

    with contextlib.redirect_stdout(io.StringIO()):
        for k in range(4):
            theirs = list(grouping.create_aspect_ratio_groups(reference, k=k))
            mine = fio.aspect_ratio_groups(ours, k=k)
            if mine != theirs:
                failures.append(f"aspect_ratio_groups(k={k}) {mine[:10]}..., the reference "
                                f"{theirs[:10]}...")
    rng = np.random.default_rng(1)
    trials = 0
    for trial in range(200):
        n = int(rng.integers(1, 60))
        groups = rng.integers(0, int(rng.integers(1, 6)), size=n).tolist()
        order = Order(rng.permutation(n).tolist())
        batch = int(rng.integers(1, 9))
        theirs = list(grouping.GroupedBatchSampler(order, groups, batch))
        mine = list(fio.GroupedBatchSampler(order, groups, batch))
        trials += 1
        if mine != theirs:
            failures.append(f"GroupedBatchSampler trial {trial} (n {n}, batch {batch}): "
                            f"{mine}, the reference {theirs}")
            break
    return trials


def parse_arguments(doc):
    """The arguments of a check against the references (--references,
    --pythonpath, --out, --images), with the references' folder and
    feedline's put first on sys.path."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--references", required=True)
    parser.add_argument("--pythonpath", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--images", type=int, default=60)
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.pythonpath))
    sys.path.insert(0, os.path.abspath(args.references))
    return args


def main():
    args = parse_arguments(__doc__)
    import torch
    import coco_utils
    import presets
    from feedline.vision import datasets
    from feedline.vision import transforms as T

    root = os.path.abspath(args.out)
    write_dataset(root, args.images)
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools' "loading annotations..."
        reference = coco_utils.get_coco(root, "train",
                                        presets.DetectionPresetTrain(data_augmentation="hflip"))
    with open(os.path.join(root, "annotations", "instances_train2017.json")) as f:
        doc = json.load(f)
    ours = datasets.CocoDetection(
        os.path.join(root, "train2017"), os.path.join(root, "annotations",
                                                       "instances_train2017.json"),
        T.Compose([T.PILToTensor(), T.ConvertImageDtype("float32")]), masks=True,
        skip_empty=True)
    failures = []
    if len(ours) != len(reference):
        failures.append(f"{len(ours)} images, the reference {len(reference)}")
    torch.manual_seed(0)
    ious, flips, worst_pixel = [], 0, 0.0
    for i in range(min(len(ours), len(reference))):
        image, target = reference[i]
        sample = ours[i]
        boxes, pixels, masks = sample["boxes"], sample["image"], sample["masks"]
        if not np.array_equal(boxes, target["boxes"].numpy()):
            # The reference's flip drew a flip for this image: compare with our mirror.
            width = int(sample["image_size"][1])
            boxes = boxes.copy()
            boxes[:, [0, 2]] = width - boxes[:, [2, 0]]
            pixels, masks = pixels[:, :, ::-1], masks[:, :, ::-1]
            flips += 1
        where = f"image {i} ({ours.ids[i]})"
        if not np.array_equal(boxes, target["boxes"].numpy()):
            failures.append(f"{where}: boxes {boxes.tolist()}, the reference "
                            f"{target['boxes'].tolist()}")
            continue
        # The reference keeps the area and crowd flag of every object it
        # drops for its box (its ConvertCocoPolysToMask filters boxes,
        # labels and masks only, so they no longer line up); feedline's line
        # up with the boxes: compared on the objects kept.
        kept = kept_objects(doc, ours.ids[i])
        expected = {"labels": target["labels"].numpy(),
                    "area": target["area"].numpy()[kept],
                    "iscrowd": target["iscrowd"].numpy()[kept]}
        for key in ("labels", "area", "iscrowd"):
            if not np.array_equal(sample[key], expected[key]):
                failures.append(f"{where}: {key} {sample[key].tolist()}, the reference "
                                f"{target[key].tolist()}")
        if int(sample["image_id"]) != int(target["image_id"]):
            failures.append(f"{where}: image_id {int(sample['image_id'])}")
        worst_pixel = max(worst_pixel, float(np.abs(pixels - image.numpy()).max()))
        theirs = target["masks"].numpy()
        if masks.shape != theirs.shape:
            failures.append(f"{where}: masks {masks.shape}, the reference {theirs.shape}")
            continue
        for k, (a, b) in enumerate(zip(masks, theirs)):
            union, differ = (a | b).sum(), (a ^ b).sum()
            ious.append((a & b).sum() / max(union, 1))
            if differ:
                failures.append(f"{where}: mask {k} differs from pycocotools' in {differ} of "
                                f"{union} pixels")
    trials = check_grouped_batches(reference, ours, failures)
    if worst_pixel > 1 / 255 + 1e-6:
        failures.append(f"pixels differ by up to {worst_pixel * 255:.1f} / 255")
    median = float(np.median(ious)) if ious else 0.0
    print(f"check_coco_detection: {len(reference)} images ({flips} flipped by the reference), "
          f"{len(ious)} masks, IoU min {min(ious, default=0):.4f} median {median:.4f}, "
          f"pixels within {worst_pixel * 255:.2f} / 255; GroupedBatchSampler {trials} random "
          f"orders, aspect ratio groups k = 0..3")
    for failure in failures:
        print(f"check_coco_detection: FAILED {failure}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
