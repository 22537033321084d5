"""YoloDetection(..., mosaic=Mosaic()): YOLO's training mosaic, partners
from the sample's batch, each image decoded once for its batch and each
tile's visible part resampled once, boxes moved and filtered as Ultralytics
moves them, the same batches for any worker count and after a resume."""

import os

import numpy as np
import PIL.Image
import pytest

import feedline
from feedline.vision import datasets
from feedline.vision import transforms as T
from feedline.vision.datasets import Mosaic

from test_coco_detection import (assert_same_batches, assert_same_for_any_worker_count_and_on_resume,
                                 batch_values)

# Every image pixel has green 250 (backgrounds and objects), which neither
# the fill (114) nor a blend of two image colours can have otherwise.
GREEN = 250
FRAME = 100  # class of the object covering the whole image i: FRAME + i
SIZE = 128


def colour(k):
    """Object k's colour: red and blue from a grid that skips 114."""
    levels = [0, 40, 80, 160, 200, 240]
    return (levels[k % 6], GREEN, levels[(k // 6) % 6])


def write_yolo(root, count=6, seed=0):
    """`count` PNGs of various sizes, each a background of its own colour
    with 1 or 2 solid rectangles (objects), and a frame object covering the
    image. Returns {class: colour} of the objects."""
    rng = np.random.default_rng(seed)
    colours = {}
    k = 0
    for i in range(count):
        w, h = int(rng.integers(60, 240)), int(rng.integers(60, 240))
        image = np.empty((h, w, 3), np.uint8)
        image[:] = (120 + 20 * i, GREEN, 30)
        rows = [f"{FRAME + i} 0.5 0.5 1 1"]
        # Objects side by side, in the left and right halves.
        for half in range(int(rng.integers(1, 3))):
            x0 = int(rng.integers(half * w // 2 + 2, half * w // 2 + w // 6))
            x1 = int(rng.integers(x0 + w // 6, half * w // 2 + w // 2 - 1))
            y0 = int(rng.integers(2, h // 3))
            y1 = int(rng.integers(y0 + h // 4, h - 2))
            image[y0:y1, x0:x1] = colour(k)
            colours[k] = colour(k)
            rows.append(f"{k} {(x0 + x1) / 2 / w:.8f} {(y0 + y1) / 2 / h:.8f} "
                        f"{(x1 - x0) / w:.8f} {(y1 - y0) / h:.8f}")
            k += 1
        path = os.path.join(root, "images", "train", f"{i:03d}.png")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        PIL.Image.fromarray(image).save(path)
        label = os.path.join(root, "labels", "train", f"{i:03d}.txt")
        os.makedirs(os.path.dirname(label), exist_ok=True)
        with open(label, "w") as f:
            f.write("\n".join(rows) + "\n")
    return colours


@pytest.fixture(scope="module")
def yolo(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("mosaic"))
    return os.path.join(root, "images", "train"), write_yolo(root)


def interior(box, margin):
    """Pixel index ranges strictly inside `box` by `margin` pixels."""
    x0, y0, x1, y1 = box
    return (int(np.ceil(y0 + margin)), int(np.floor(y1 - margin)),
            int(np.ceil(x0 + margin)), int(np.floor(x1 - margin)))


def check_mosaic(sample, colours):
    image, boxes, labels = sample["image"], sample["boxes"], sample["labels"]
    assert image.shape == (SIZE, SIZE, 3) and image.dtype == np.uint8
    assert np.all(boxes >= 0) and np.all(boxes <= SIZE)
    assert np.all(boxes[:, 2] - boxes[:, 0] > 2) and np.all(boxes[:, 3] - boxes[:, 1] > 2)
    in_frame = np.zeros((SIZE, SIZE), bool)
    for box, label in zip(boxes, labels):
        y0, y1, x0, x1 = interior(box, 1.5)
        if label >= FRAME:
            # Inside a frame: its image, never the fill.
            assert np.all(image[y0:y1, x0:x1, 1] == GREEN), (box, label)
            fy0, fy1, fx0, fx1 = interior(box, -1)
            in_frame[max(fy0, 0):fy1, max(fx0, 0):fx1] = True
        else:
            # Each object's box covers its colour.
            assert np.all(np.abs(image[y0:y1, x0:x1].astype(int) - colours[label]) <= 1), \
                (box, label)
    # Outside every image's frame: the fill, or an image whose frame
    # box_candidates dropped (under 10% of it shows).
    outside = image[~in_frame]
    fill = np.all(outside == 114, axis=1)
    assert np.all(fill | (outside[:, 1] == GREEN))
    return int(fill.sum())


def test_each_box_covers_its_object_and_the_rest_is_the_fill(yolo):
    images, colours = yolo
    for flip in (0.0, 1.0):
        data = datasets.YoloDetection(images, T.Compose([T.RandomHorizontalFlip(flip)]),
                                      mosaic=Mosaic(size=SIZE))
        fills, objects = 0, 0
        for seed in range(8):
            for i in range(len(data)):
                sample = data._native.get(i, 0, seed)
                fills += check_mosaic(sample, colours)
                objects += int(np.sum(sample["labels"] < FRAME))
        # Mosaics leave fill and show objects of several images.
        assert fills > 0 and objects > 10


def test_the_image_alone_is_letterboxed_on_the_fill(yolo):
    images, colours = yolo
    data = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE, p=0.0))
    for i in range(len(data)):
        sample = data[i]
        check_mosaic(sample, colours)
        frames = sample["labels"][sample["labels"] >= FRAME]
        assert frames.tolist() in ([FRAME + i], [])


def test_float_chw_output_and_colour_steps_follow_the_mosaic(yolo):
    images, _ = yolo
    plain = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE))
    tensor = datasets.YoloDetection(
        images, T.Compose([T.ColorJitter(brightness=0.0), T.ToTensor()]), mosaic=Mosaic(size=SIZE))
    a, b = plain[3], tensor[3]
    assert b["image"].shape == (3, SIZE, SIZE) and b["image"].dtype == np.float32
    np.testing.assert_array_equal(b["image"], a["image"].transpose(2, 0, 1) / np.float32(255))
    np.testing.assert_array_equal(a["boxes"], b["boxes"])
    assert a["image_id"] == 3


def test_batches_are_the_same_for_any_worker_count_and_on_resume(yolo):
    images, _ = yolo
    data = datasets.YoloDetection(images, T.Compose([T.RandomHorizontalFlip(0.5), T.ToTensor()]),
                                  mosaic=Mosaic(size=96), size_divisibility=32)

    def loader(**options):
        return feedline.DataLoader(data, batch_size=2, shuffle=True, seed=11, **options)

    reference = batch_values(loader(num_workers=0))
    assert_same_for_any_worker_count_and_on_resume(loader, reference)
    for workers in (1, 4):
        assert_same_batches(batch_values(loader(num_workers=workers)), reference)
    # Another seed draws other mosaics.
    other = batch_values(feedline.DataLoader(data, batch_size=2, shuffle=True, seed=12))
    assert any(not np.array_equal(x["image"], y["image"]) for x, y in zip(reference, other))


def test_partners_come_from_the_batch(yolo):
    images, _ = yolo
    data = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE))
    shown = set()
    for workers, mode in ((0, "thread"), (2, "thread"), (2, "process")):
        loader = feedline.DataLoader(data, batch_size=3, shuffle=True, seed=5, num_workers=workers,
                                     worker_mode=mode, collate_fn=lambda samples: samples)
        for _ in range(4):  # an epoch each
            for batch in loader:
                ids = {int(s["image_id"]) for s in batch}
                for s in batch:
                    frames = {int(label) - FRAME for label in s["labels"] if label >= FRAME}
                    assert frames <= ids, (frames, ids)
                    shown |= {(int(s["image_id"]), f) for f in frames}
    # Partners other than the sample itself do show.
    assert any(own != partner for own, partner in shown)


def test_a_batch_decodes_each_of_its_images_once(yolo):
    images, _ = yolo
    # Room for the 3 largest images (PNGs decode at full scale): one batch.
    sizes = sorted(np.prod(PIL.Image.open(os.path.join(images, f)).size) * 3
                   for f in os.listdir(images))
    one_batch = int(sum(sizes[-3:]))
    data = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE, cache_bytes=one_batch))
    loader = feedline.DataLoader(data, batch_size=3, shuffle=True, seed=3)
    kept = batch_values(loader)
    # 6 samples of 4 tiles each, in 2 batches of 3 images: each decoded once.
    assert loader.stats()["images_decoded"] == len(data)
    # Without a cache every tile decodes its image; the batches are the same.
    uncached = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE, cache_bytes=0))
    loader = feedline.DataLoader(uncached, batch_size=3, shuffle=True, seed=3)
    assert_same_batches(batch_values(loader), kept)
    assert loader.stats()["images_decoded"] == 4 * len(data)
    # Worker threads share the cache: each image decoded once, and kept for
    # the next epoch by the default cache.
    data = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE))
    loader = feedline.DataLoader(data, batch_size=3, shuffle=True, seed=3, num_workers=2,
                                 persistent_workers=True)
    assert_same_batches(batch_values(loader), kept)
    assert loader.stats()["images_decoded"] == len(data)
    for _ in loader:
        pass
    assert loader.stats()["images_decoded"] == len(data)


def test_mixup_blends_two_mosaics_of_the_batch_and_keeps_both_objects(yolo):
    images, colours = yolo
    plain = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE))
    mixed = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE, mixup=1.0))
    blended = 0
    for seed in range(6):
        for i in range(len(plain)):
            a, b = plain._native.get(i, 0, seed), mixed._native.get(i, 0, seed)
            # The sample's own objects come first, where they were without
            # mixup; the partner's follow.
            own = len(a["labels"])
            np.testing.assert_array_equal(b["boxes"][:own], a["boxes"])
            np.testing.assert_array_equal(b["labels"][:own], a["labels"])
            assert len(b["labels"]) > own
            # Every pixel is a blend: green 250 where both mosaics show an
            # image, 114 where neither does, between the two elsewhere.
            green = b["image"][:, :, 1].astype(int)
            assert np.all((green >= 114) & (green <= 250))
            blended += int(np.sum((green > 120) & (green < 244)))
            assert not np.array_equal(a["image"], b["image"])
    assert blended > 0
    # Through a loader: the same batches for any worker count and on resume.
    data = datasets.YoloDetection(images, T.Compose([T.RandomHorizontalFlip(0.5), T.ToTensor()]),
                                  mosaic=Mosaic(size=96, mixup=0.5), size_divisibility=32)

    def loader(**options):
        return feedline.DataLoader(data, batch_size=3, shuffle=True, seed=4, **options)

    reference = batch_values(loader(num_workers=0))
    assert_same_for_any_worker_count_and_on_resume(loader, reference)


def test_mixup_partners_come_from_the_batch(yolo):
    images, _ = yolo
    data = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE, mixup=1.0))
    loader = feedline.DataLoader(data, batch_size=2, shuffle=True, seed=8, num_workers=2,
                                 collate_fn=lambda samples: samples)
    for _ in range(3):
        for batch in loader:
            ids = {int(s["image_id"]) for s in batch}
            for s in batch:
                frames = {int(label) - FRAME for label in s["labels"] if label >= FRAME}
                assert frames <= ids, (frames, ids)


def test_bad_parameters_are_refused_naming_the_argument(yolo):
    images, _ = yolo
    with pytest.raises(ValueError, match="Mosaic size must be from 1 to 16384"):
        Mosaic(size=0)
    with pytest.raises(TypeError, match="Mosaic size must be an integer"):
        Mosaic(size=64.0)
    with pytest.raises(ValueError, match=r"Mosaic scale must be in \[0, 1\)"):
        Mosaic(scale=1.0)
    with pytest.raises(ValueError, match=r"Mosaic translate must be in \[0, 0.5\]"):
        Mosaic(translate=-0.1)
    with pytest.raises(ValueError, match=r"Mosaic p must be in \[0, 1\]"):
        Mosaic(p=1.5)
    with pytest.raises(ValueError, match="Mosaic cache_bytes must be >= 0"):
        Mosaic(cache_bytes=-1)
    with pytest.raises(TypeError, match="Mosaic cache_bytes must be an integer"):
        Mosaic(cache_bytes=1.5)
    with pytest.raises(ValueError, match=r"Mosaic mixup must be in \[0, 1\]"):
        Mosaic(mixup=1.1)
    with pytest.raises(TypeError, match="Mosaic mixup must be a number"):
        Mosaic(mixup="0.1")
    with pytest.raises(TypeError, match="mosaic must be a feedline.vision.datasets.Mosaic"):
        datasets.YoloDetection(images, mosaic=640)
    # What cannot follow a mosaic, and masks.
    with pytest.raises(ValueError, match="resize.*cannot follow a mosaic"):
        datasets.YoloDetection(images, T.Compose([T.Resize(64)]), mosaic=Mosaic())
    with pytest.raises(ValueError, match="masks at the source's size.*with mosaic"):
        datasets.CocoDetection(images, coco_of_yolo(images, os.path.join(
            os.path.dirname(os.path.dirname(images)), "masks-refused.json")),
            masks="source", annotation_index=False, mosaic=Mosaic())
    # Not a transform: refused where a transform goes.
    with pytest.raises(TypeError, match="mosaic=Mosaic"):
        datasets.YoloDetection(images, T.Compose([Mosaic(), T.ToTensor()]))
    with pytest.raises(TypeError, match="mosaic=Mosaic"):
        datasets.ImageFolder(os.path.dirname(images), transform=Mosaic())
    with pytest.raises(TypeError, match="cannot run on one image"):
        Mosaic()(None)


def test_pickles_with_its_mosaic(yolo):
    import pickle
    images, _ = yolo
    data = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE, scale=0.25, p=0.5, mixup=0.5))
    again = pickle.loads(pickle.dumps(data))
    assert again.mosaic.scale == 0.25 and again.mosaic.mixup == 0.5
    for i in range(3):
        for key, value in data._native.get(i, 1, 5).items():
            np.testing.assert_array_equal(value, again._native.get(i, 1, 5)[key], err_msg=key)


def test_yolo_hsv_runs_on_the_whole_mosaic(yolo):
    images, _ = yolo
    plain = datasets.YoloDetection(images, mosaic=Mosaic(size=SIZE))
    hsv = datasets.YoloDetection(images, T.Compose([T.RandomHorizontalFlip(0.0),
                                                    T.RandomHSV(hgain=0, sgain=0, vgain=0.4)]),
                                 mosaic=Mosaic(size=SIZE))
    changed = 0
    for seed in range(6):
        a, b = plain._native.get(1, 0, seed), hsv._native.get(1, 0, seed)
        np.testing.assert_array_equal(a["boxes"], b["boxes"])  # the geometry is the same
        fill = np.all(a["image"] == 114, axis=2)
        if not fill.any():
            continue
        # The fill, grey, has its value scaled alike everywhere (truncated).
        levels = np.unique(b["image"][fill])
        assert len(levels) == 1
        changed += int(levels[0] != 114)
    assert changed > 0
    with pytest.raises(ValueError, match=r"sgain must be in \[0, 1\], got 2"):
        T.RandomHSV(sgain=2)


def coco_of_yolo(images, path, polygons=False):
    """A COCO instances file of the YOLO fixture's images and objects; with
    `polygons`, each object's rectangle is also its segmentation."""
    import json
    doc = {"images": [], "annotations": [], "categories": []}
    classes = set()
    for i, name in enumerate(sorted(os.listdir(images))):
        w, h = PIL.Image.open(os.path.join(images, name)).size
        doc["images"].append({"id": 1000 + i, "file_name": name, "width": w, "height": h})
        label = os.path.join(os.path.dirname(os.path.dirname(images)), "labels", "train",
                             os.path.splitext(name)[0] + ".txt")
        for line in open(label):
            c, cx, cy, bw, bh = (float(v) for v in line.split())
            classes.add(int(c))
            x0, y0, x1, y1 = (cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w, (cy + bh / 2) * h
            doc["annotations"].append({
                "id": len(doc["annotations"]) + 1, "image_id": 1000 + i, "category_id": int(c),
                "bbox": [x0, y0, bw * w, bh * h], "area": bw * w * bh * h, "iscrowd": 0})
            if polygons:
                doc["annotations"][-1]["segmentation"] = [[x0, y0, x1, y0, x1, y1, x0, y1]]
    doc["categories"] = [{"id": c, "name": str(c)} for c in sorted(classes)]
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def test_coco_detection_takes_the_mosaic_too(yolo, tmp_path):
    images, colours = yolo
    ann = coco_of_yolo(images, str(tmp_path / "instances.json"))
    data = datasets.CocoDetection(images, ann, T.Compose([T.RandomHorizontalFlip(0.5)]),
                                  annotation_index=False, mosaic=Mosaic(size=SIZE))
    fills = 0
    for seed in range(4):
        for i in range(len(data)):
            sample = data._native.get(i, 0, seed)
            fills += check_mosaic(sample, colours)
            assert sample["image_id"] == 1000 + i
    assert fills > 0

    def loader(**options):
        return feedline.DataLoader(data, batch_size=2, shuffle=True, seed=5, **options)

    assert_same_for_any_worker_count_and_on_resume(loader, batch_values(loader(num_workers=0)))


def check_masks(sample, colours=None):
    """Each object's mask is its box, drawn through its tile: inside the
    box (to a pixel), covering the box's inside, its object's colour
    there (unless `colours` is None: a mixup's blend). Returns the objects
    checked."""
    image, masks = sample["image"], sample["masks"]
    assert masks.shape == (len(sample["labels"]), SIZE, SIZE) and masks.dtype == np.uint8
    assert set(np.unique(masks)) <= {0, 1}
    for mask, box, label in zip(masks, sample["boxes"], sample["labels"]):
        ys, xs = np.nonzero(mask)
        assert len(ys) > 0, (box, label)
        assert xs.min() >= box[0] - 1 and xs.max() + 1 <= box[2] + 1, (box, label)
        assert ys.min() >= box[1] - 1 and ys.max() + 1 <= box[3] + 1, (box, label)
        y0, y1, x0, x1 = interior(box, 1.5)
        assert np.all(mask[y0:y1, x0:x1] == 1), (box, label)
        if colours is not None and label < FRAME:
            shown = image[mask.astype(bool)]
            inside = image[y0:y1, x0:x1][mask[y0:y1, x0:x1].astype(bool)]
            assert np.all(np.abs(inside.astype(int) - colours[label]) <= 1), (box, label)
            assert len(shown) >= len(inside)
    return len(masks)


@pytest.mark.parametrize("source", ["yolo", "coco-boxes", "coco-polygons", "yolo-mixup"])
def test_masks_follow_the_tiles_and_the_flip(yolo, tmp_path, source):
    images, colours = yolo
    mixup = 1.0 if source == "yolo-mixup" else 0.0
    objects = 0
    for flip in (0.0, 1.0):
        steps = T.Compose([T.RandomHorizontalFlip(flip)])
        mosaic = Mosaic(size=SIZE, mixup=mixup)
        if source.startswith("yolo"):
            data = datasets.YoloDetection(images, steps, masks=True, mosaic=mosaic)
            plain = datasets.YoloDetection(images, steps, mosaic=mosaic)
        else:
            ann = coco_of_yolo(images, str(tmp_path / f"{source}.json"),
                               polygons=source == "coco-polygons")
            data = datasets.CocoDetection(images, ann, steps, masks=True, annotation_index=False,
                                          mosaic=mosaic)
            plain = datasets.CocoDetection(images, ann, steps, annotation_index=False,
                                           mosaic=mosaic)
        for seed in range(6):
            for i in range(len(data)):
                sample = data._native.get(i, 0, seed)
                if not mixup:
                    check_mosaic(sample, colours)
                objects += check_masks(sample, None if mixup else colours)
                # Masks change nothing else.
                without = plain._native.get(i, 0, seed)
                assert set(sample) - set(without) == {"masks"}
                for key in without:
                    np.testing.assert_array_equal(sample[key], without[key])
    assert objects > 40

    def loader(**options):
        return feedline.DataLoader(data, batch_size=3, shuffle=True, seed=2, **options)

    assert_same_for_any_worker_count_and_on_resume(loader, batch_values(loader(num_workers=0)))


def voc_of_yolo(images, root):
    """A VOC2012 folder (train set) of the YOLO fixture's images and objects,
    class names "0", "1", ... so that a label is its YOLO class. The PNGs
    keep their bytes under VOC's .jpg names (the decoder reads the format
    from the bytes)."""
    import shutil
    voc = os.path.join(root, "VOCdevkit", "VOC2012")
    for folder in ("JPEGImages", "Annotations", "ImageSets/Main"):
        os.makedirs(os.path.join(voc, folder), exist_ok=True)
    ids = []
    for name in sorted(os.listdir(images)):
        stem = os.path.splitext(name)[0]
        ids.append(stem)
        shutil.copy(os.path.join(images, name), os.path.join(voc, "JPEGImages", stem + ".jpg"))
        w, h = PIL.Image.open(os.path.join(images, name)).size
        label = os.path.join(os.path.dirname(os.path.dirname(images)), "labels", "train",
                             stem + ".txt")
        objects = []
        for line in open(label):
            c, cx, cy, bw, bh = (float(v) for v in line.split())
            x0, y0 = round((cx - bw / 2) * w), round((cy - bh / 2) * h)
            x1, y1 = round((cx + bw / 2) * w), round((cy + bh / 2) * h)
            objects.append(f"<object><name>{int(c)}</name><difficult>0</difficult><bndbox>"
                           f"<xmin>{x0 + 1}</xmin><ymin>{y0 + 1}</ymin><xmax>{x1}</xmax>"
                           f"<ymax>{y1}</ymax></bndbox></object>")
        with open(os.path.join(voc, "Annotations", stem + ".xml"), "w") as f:
            f.write(f"<annotation><size><width>{w}</width><height>{h}</height><depth>3</depth>"
                    f"</size>{''.join(objects)}</annotation>")
    with open(os.path.join(voc, "ImageSets", "Main", "train.txt"), "w") as f:
        f.write("\n".join(ids) + "\n")
    return root


def test_voc_detection_takes_the_mosaic_and_mixup_too(yolo, tmp_path):
    images, colours = yolo
    root = voc_of_yolo(images, str(tmp_path))
    classes = [str(c) for c in range(FRAME + len(os.listdir(images)))]
    data = datasets.VOCDetection(root, transforms=T.Compose([T.RandomHorizontalFlip(0.5)]),
                                 classes=classes, mosaic=Mosaic(size=SIZE))
    yolo_data = datasets.YoloDetection(images, T.Compose([T.RandomHorizontalFlip(0.5)]),
                                       mosaic=Mosaic(size=SIZE))
    fills = 0
    for seed in range(4):
        for i in range(len(data)):
            sample = data._native.get(i, 0, seed)
            fills += check_mosaic(sample, colours)
            assert sample["image_id"] == i
            # The same images, objects and draws as the YOLO layout's.
            same = yolo_data._native.get(i, 0, seed)
            np.testing.assert_array_equal(sample["image"], same["image"])
            np.testing.assert_array_equal(sample["labels"], same["labels"])
            np.testing.assert_allclose(sample["boxes"], same["boxes"], atol=1e-3)
    assert fills > 0
    mixed = datasets.VOCDetection(root, classes=classes, mosaic=Mosaic(size=SIZE, mixup=1.0))

    def loader(**options):
        return feedline.DataLoader(mixed, batch_size=2, shuffle=True, seed=5, **options)

    assert_same_for_any_worker_count_and_on_resume(loader, batch_values(loader(num_workers=0)))
    with pytest.raises(ValueError, match="resize.*cannot follow a mosaic"):
        datasets.VOCDetection(root, transforms=T.Compose([T.Resize(64)]), classes=classes,
                              mosaic=Mosaic())


def test_pose_keypoints_land_on_their_objects_through_the_tiles(tmp_path):
    """YOLO pose lines: each object of the solid-rectangle fixture gets 3
    keypoints inside its rectangle (the middle one unlabelled); in a mosaic
    every labelled keypoint shows its own object's colour (its image's, for
    a frame), so none is left where another tile or the fill shows."""
    root = str(tmp_path)
    colours = write_yolo(root)
    images = os.path.join(root, "images", "train")
    for name in sorted(os.listdir(images)):
        w, h = PIL.Image.open(os.path.join(images, name)).size
        label = os.path.join(root, "labels", "train", os.path.splitext(name)[0] + ".txt")
        lines = []
        for line in open(label):
            c, cx, cy, bw, bh = (float(v) for v in line.split())
            points = [(cx - bw / 4, cy - bh / 4, 2), (cx, cy, 0), (cx + bw / 4, cy + bh / 4, 1)]
            lines.append(f"{int(c)} {cx} {cy} {bw} {bh} " +
                         " ".join(f"{x:.6f} {y:.6f} {v}" if v else "0 0 0" for x, y, v in points))
        with open(label, "w") as f:
            f.write("\n".join(lines) + "\n")
    data = datasets.YoloDetection(images, T.Compose([T.RandomHorizontalFlip(0.5)]),
                                  keypoints=(3, 3), keypoint_flip=[2, 1, 0],
                                  mosaic=Mosaic(size=SIZE))
    checked = 0
    for seed in range(8):
        for i in range(len(data)):
            sample = data._native.get(i, 0, seed)
            image = sample["image"]
            for box, label, points in zip(sample["boxes"], sample["labels"], sample["keypoints"]):
                assert points[1].tolist() == [0, 0, 0]  # unlabelled, swapped or not
                for x, y, v in points[[0, 2]]:
                    if v == 0:
                        assert x == 0 and y == 0
                        continue
                    # Away from its box's edges (blended there): its colour.
                    if min(x - box[0], box[2] - x, y - box[1], box[3] - y) < 2:
                        continue
                    pixel = image[int(y), int(x)]
                    if label >= FRAME:
                        assert pixel[1] == GREEN, (box, x, y, pixel)
                    else:
                        assert np.all(np.abs(pixel.astype(int) - colours[label]) <= 1), \
                            (box, label, x, y, pixel)
                    checked += 1
    assert checked > 30
