"""feedline.vision.datasets.CocoDetection: COCO-format data read in C++,
the targets built as torchvision's detection references build them
(ConvertCocoPolysToMask: crowds and boxes without area dropped, boxes as
corners clamped to the image, category ids as labels), moved with the
pixels by the native transforms, and batched so that detection_targets()
gives torchvision's (images, targets) lists."""

import json
import os

import numpy as np
import PIL.Image
import pytest

import feedline
from feedline.vision import datasets
from feedline.vision import transforms as T


def write_coco(root, images=6, seed=0):
    """`images` PNGs of different sizes in root/images and their
    annotations in root/ann.json: each image 1-4 objects with polygons, some
    crowds, a box reaching past the edge and one with no height; returns the
    annotation file's path."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(root, "images"), exist_ok=True)
    doc = {"images": [], "annotations": [], "categories": [
        {"id": c, "name": f"class{c}"} for c in (1, 3, 8)]}
    for i in range(images):
        h, w = int(rng.integers(24, 48)), int(rng.integers(24, 64))
        pixels = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        name = f"img{i}.png"
        PIL.Image.fromarray(pixels).save(os.path.join(root, "images", name))
        doc["images"].append({"id": 100 + i, "file_name": name, "height": h, "width": w})
        for k in range(int(rng.integers(1, 5))):
            x, y = float(rng.uniform(0, w - 8)), float(rng.uniform(0, h - 8))
            bw, bh = float(rng.uniform(2, 20)), float(rng.uniform(2, 20))
            if k == 3:
                bh = 0.0  # no height: dropped
            doc["annotations"].append({
                "id": len(doc["annotations"]), "image_id": 100 + i,
                "bbox": [x, y, bw, bh], "category_id": int(rng.choice([1, 3, 8])),
                "iscrowd": int(k == 2 and i % 2 == 0), "area": bw * bh,
                "segmentation": [[x, y, x + bw, y, x + bw, y + bh, x, y + bh]]})
    path = os.path.join(root, "ann.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def reference_target(doc, image_index, flip=False):
    """What the references' ConvertCocoPolysToMask (then a horizontal flip)
    makes of an image's annotations, in numpy: boxes, labels, area, iscrowd."""
    image = doc["images"][image_index]
    w, h = image["width"], image["height"]
    anns = [a for a in doc["annotations"] if a["image_id"] == image["id"] and not a["iscrowd"]]
    boxes = np.array([a["bbox"] for a in anns], dtype=np.float32).reshape(-1, 4)
    boxes[:, 2:] += boxes[:, :2]
    boxes[:, 0::2] = boxes[:, 0::2].clip(0, w)
    boxes[:, 1::2] = boxes[:, 1::2].clip(0, h)
    keep = (boxes[:, 3] > boxes[:, 1]) & (boxes[:, 2] > boxes[:, 0])
    boxes = boxes[keep]
    if flip:
        boxes[:, [0, 2]] = w - boxes[:, [2, 0]]
    labels = np.array([a["category_id"] for a in anns], dtype=np.int64)[keep]
    area = np.array([a["area"] for a in anns], dtype=np.float32)[keep]
    return {"boxes": boxes, "labels": labels, "area": area,
            "iscrowd": np.zeros(len(labels), np.int64)}


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("coco"))
    ann = write_coco(root)
    with open(ann) as f:
        return os.path.join(root, "images"), ann, json.load(f)


def test_samples_are_the_references_targets_and_the_decoded_image(coco):
    images, ann, doc = coco
    data = datasets.CocoDetection(images, ann)
    assert len(data) == len(doc["images"])
    assert data.ids == [im["id"] for im in doc["images"]]
    assert data.categories == {1: "class1", 3: "class3", 8: "class8"}
    for i in range(len(data)):
        sample = data[i]
        pixels = np.asarray(PIL.Image.open(os.path.join(images, doc["images"][i]["file_name"])))
        np.testing.assert_array_equal(sample["image"], pixels)
        expected = reference_target(doc, i)
        for key, value in expected.items():
            np.testing.assert_array_equal(sample[key], value, err_msg=key)
        assert int(sample["image_id"]) == doc["images"][i]["id"]
        assert sample["image_size"].tolist() == list(pixels.shape[:2])
        assert "masks" not in sample


def test_a_flip_moves_the_boxes_and_the_masks_with_the_pixels(coco):
    images, ann, doc = coco
    data = datasets.CocoDetection(images, ann, T.Compose([
        T.RandomHorizontalFlip(1.0), T.PILToTensor(), T.ConvertImageDtype("float32")]),
        masks=True)
    plain = datasets.CocoDetection(images, ann, masks=True)
    for i in range(len(data)):
        flipped, original = data[i], plain[i]
        assert flipped["image"].dtype == np.float32 and flipped["image"].shape[0] == 3
        np.testing.assert_array_equal(
            flipped["image"], original["image"][:, ::-1].transpose(2, 0, 1) / np.float32(255))
        np.testing.assert_array_equal(flipped["boxes"], reference_target(doc, i, flip=True)["boxes"])
        np.testing.assert_array_equal(flipped["masks"], original["masks"][:, :, ::-1])
        # Each mask is its rectangle's pixels (centres inside the box).
        for box, mask in zip(original["boxes"], original["masks"]):
            x0, y0, x1, y1 = box
            cols = (np.arange(mask.shape[1]) + 0.5 >= x0) & (np.arange(mask.shape[1]) + 0.5 < x1)
            rows = (np.arange(mask.shape[0]) + 0.5 >= y0) & (np.arange(mask.shape[0]) + 0.5 < y1)
            np.testing.assert_array_equal(mask, np.outer(rows, cols).astype(np.uint8))


@pytest.mark.parametrize("workers", [0, 2])
def test_batches_give_torchvisions_images_and_targets_as_views(coco, workers):
    images, ann, doc = coco
    data = datasets.CocoDetection(images, ann, T.Compose([T.PILToTensor(),
                                                          T.ConvertImageDtype("float32")]),
                                  masks=True)
    loader = feedline.DataLoader(data, batch_size=4, num_workers=workers)
    index = 0
    for batch in loader:
        pictures, targets = datasets.detection_targets(batch)
        assert len(pictures) == len(targets) == len(batch["image"])
        for picture, target in zip(pictures, targets):
            sample = data[index]
            np.testing.assert_array_equal(picture, sample["image"])
            for key in ("boxes", "labels", "masks", "area", "iscrowd"):
                np.testing.assert_array_equal(target[key], sample[key], err_msg=key)
            assert int(target["image_id"]) == int(sample["image_id"])
            assert np.shares_memory(picture, batch["image"])
            assert np.shares_memory(target["masks"], batch["masks"])
            index += 1
    assert index == len(data)


def test_options_keep_crowds_and_skip_images_without_boxes(tmp_path):
    ann = write_coco(str(tmp_path))
    with open(ann) as f:
        doc = json.load(f)
    # One image whose only annotation is a box 1 pixel high.
    doc["images"].append({"id": 999, "file_name": "img0.png", "height": 1, "width": 1})
    doc["annotations"].append({"id": 999, "image_id": 999, "bbox": [0, 0, 5, 1],
                               "category_id": 1, "iscrowd": 0})
    with open(ann, "w") as f:
        json.dump(doc, f)
    images = os.path.join(str(tmp_path), "images")
    assert len(datasets.CocoDetection(images, ann)) == len(doc["images"])
    train = datasets.CocoDetection(images, ann, skip_empty=True)
    assert 999 not in train.ids and len(train) == len(doc["images"]) - 1
    crowds = datasets.CocoDetection(images, ann, keep_crowd=True)
    assert crowds[0]["iscrowd"].tolist().count(1) == sum(
        a["iscrowd"] for a in doc["annotations"] if a["image_id"] == 100)


def test_bad_files_are_named(tmp_path):
    ann = write_coco(str(tmp_path), images=3)
    images = os.path.join(str(tmp_path), "images")
    os.remove(os.path.join(images, "img1.png"))
    data = datasets.CocoDetection(images, ann)
    with pytest.raises(feedline.SampleError, match="img1.png"):
        data[1]
    batches = list(feedline.DataLoader(data, batch_size=3, error_policy="skip"))
    assert batches[0]["image_id"].tolist() == [100, 102]
    with open(ann, "w") as f:
        f.write('{"images": [{"id": 1}]}')
    with pytest.raises(ValueError, match=r"ann.json: image 0: has no \"file_name\""):
        datasets.CocoDetection(images, ann)
    with pytest.raises(TypeError, match="feedline.vision.transforms only"):
        datasets.CocoDetection(images, ann, transforms=lambda image: image)


def random_transforms():
    return T.Compose([T.RandomResizedCrop(24, scale=(0.3, 1.0)), T.RandomHorizontalFlip(0.5),
                      T.PILToTensor()])


def batch_values(loader):
    return [{k: v.copy() for k, v in batch.items()} for batch in loader]


def assert_same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)


def test_random_crops_give_the_same_batches_for_any_worker_count_and_on_resume(coco):
    images, ann, _ = coco
    data = datasets.CocoDetection(images, ann, random_transforms(), masks=True)

    def loader(**options):
        return feedline.DataLoader(data, batch_size=2, shuffle=True, seed=7, **options)

    reference = batch_values(loader(num_workers=0))
    # The crops moved the boxes: the objects left are inside the crop, and
    # some were dropped.
    assert sum(int(b["boxes_lengths"].sum()) for b in reference) < sum(
        len(datasets.CocoDetection(images, ann)[i]["labels"]) for i in range(len(data)))
    for batch in reference:
        sizes = batch["image_size"]
        assert (sizes == 24).all()
        for n, boxes in zip(batch["boxes_lengths"], batch["boxes"]):
            assert ((boxes[:n, 2] > boxes[:n, 0]) & (boxes[:n, 3] > boxes[:n, 1])).all()
            assert (boxes[:n] >= 0).all() and (boxes[:n] <= 24).all()
    assert_same_for_any_worker_count_and_on_resume(loader, reference)


def assert_same_for_any_worker_count_and_on_resume(loader, reference):
    """loader(**options) gives `reference` (its batches with 0 workers)
    with 2 threads, 2 processes, and resumed after its first batch."""
    assert_same_batches(batch_values(loader(num_workers=2)), reference)
    assert_same_batches(batch_values(loader(num_workers=2, worker_mode="process")), reference)
    first = loader(num_workers=2)
    it = iter(first)
    next(it)
    state = first.state_dict()
    resumed = loader(num_workers=1)
    resumed.load_state_dict(state)
    assert_same_batches(batch_values(resumed), reference[1:])


def samples_of(data):
    return [{k: np.asarray(v).tolist() for k, v in data[i].items() if k != "image"}
            for i in range(len(data))]


def test_the_annotation_index_gives_the_parsed_samples_and_follows_the_file(tmp_path, monkeypatch):
    root = str(tmp_path / "coco")
    ann = write_coco(root)
    images = os.path.join(root, "images")
    parsed = samples_of(datasets.CocoDetection(images, ann, annotation_index=False))
    index_dir = tmp_path / "index"
    first = datasets.CocoDetection(images, ann, annotation_index=index_dir)
    assert len(os.listdir(index_dir)) == 1
    again = datasets.CocoDetection(images, ann, annotation_index=str(index_dir))
    assert samples_of(first) == samples_of(again) == parsed
    assert again.ids == list(range(100, 106))

    write_coco(root, images=4, seed=1)  # the file changes: parsed again
    changed = datasets.CocoDetection(images, ann, annotation_index=index_dir)
    assert samples_of(changed) == samples_of(datasets.CocoDetection(images, ann,
                                                                    annotation_index=False))
    assert len(changed) == 4 and len(os.listdir(index_dir)) == 1

    # By default the index is kept in the user's cache.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    datasets.CocoDetection(images, ann)
    assert len(os.listdir(tmp_path / "cache" / "feedline" / "annotation-index")) == 1
    with pytest.raises(TypeError, match="annotation_index"):
        datasets.CocoDetection(images, ann, annotation_index=3)


@pytest.mark.parametrize("workers,mode", [(0, "thread"), (2, "thread"), (2, "process")])
def test_size_divisibility_pads_the_batch_to_multiples_and_keeps_each_image(coco, workers, mode):
    images, ann, doc = coco
    transforms = T.Compose([T.PILToTensor()])
    data = datasets.CocoDetection(images, ann, transforms, size_divisibility=32)
    loader = feedline.DataLoader(data, batch_size=3, num_workers=workers, worker_mode=mode)
    seen = 0
    for batch in loader:
        image = np.asarray(batch["image"])
        assert image.shape[2] % 32 == 0 and image.shape[3] % 32 == 0
        heights, widths = np.asarray(batch["image_size"]).T
        assert image.shape[2] == -(-heights.max() // 32) * 32
        assert image.shape[3] == -(-widths.max() // 32) * 32
        for k, (h, w) in enumerate(zip(heights, widths)):
            i = int(batch["image_id"][k]) - 100
            np.testing.assert_array_equal(image[k, :, :h, :w], data[i]["image"])
            assert not image[k, :, h:, :].any() and not image[k, :, :, w:].any()
        seen += len(heights)
    assert seen == len(data)
    hwc = feedline.DataLoader(datasets.CocoDetection(images, ann, size_divisibility=16),
                              batch_size=6)
    assert [d % 16 for d in next(iter(hwc))["image"].shape[1:3]] == [0, 0]
    with pytest.raises(ValueError, match="size_divisibility"):
        datasets.CocoDetection(images, ann, size_divisibility=0)


def write_keypoints(root, images=5, seed=3):
    """COCO person keypoints: each image 1-3 people with 17 keypoints, some
    unlabelled (0, 0, 0), and an object without any; returns the file."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(root, "images"), exist_ok=True)
    doc = {"images": [], "annotations": [], "categories": [{"id": 1, "name": "person"},
                                                           {"id": 2, "name": "ball"}]}
    for i in range(images):
        h, w = int(rng.integers(24, 48)), int(rng.integers(24, 64))
        name = f"kp{i}.png"
        PIL.Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(
            os.path.join(root, "images", name))
        doc["images"].append({"id": 200 + i, "file_name": name, "height": h, "width": w})
        for _ in range(int(rng.integers(1, 4))):
            x, y = float(rng.uniform(0, w - 12)), float(rng.uniform(0, h - 12))
            points = []
            for _ in range(17):
                labelled = rng.random() < 0.7
                points += ([float(rng.uniform(x, x + 10)), float(rng.uniform(y, y + 10)),
                            int(rng.integers(1, 3))] if labelled else [0, 0, 0])
            doc["annotations"].append({
                "id": len(doc["annotations"]), "image_id": 200 + i, "bbox": [x, y, 10, 10],
                "category_id": 1, "area": 100.0, "iscrowd": 0, "keypoints": points,
                "num_keypoints": sum(1 for v in points[2::3] if v)})
        doc["annotations"].append({"id": len(doc["annotations"]), "image_id": 200 + i,
                                   "bbox": [1, 1, 5, 5], "category_id": 2, "area": 25.0,
                                   "iscrowd": 0})
    path = os.path.join(root, "kp.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path, doc


def reference_keypoints(doc, image_index, flip, scale):
    """torchvision's references in numpy: ConvertCocoPolysToMask's [n, 17, 3]
    (an object without keypoints: zeros), then RandomHorizontalFlip's
    _flip_coco_person_keypoints, then a resize by `scale`."""
    image = doc["images"][image_index]
    anns = [a for a in doc["annotations"] if a["image_id"] == image["id"]]
    points = np.array([a.get("keypoints", [0] * 51) for a in anns], np.float32).reshape(-1, 17, 3)
    if flip:
        points = points[:, list(datasets.COCO_PERSON_KEYPOINT_FLIP)]
        points[..., 0] = image["width"] - points[..., 0]
        points[points[..., 2] == 0] = 0
    points[..., :2] *= scale
    return points


@pytest.mark.parametrize("workers", [0, 2])
def test_keypoints_move_with_the_pixels_as_the_references_flip_them(tmp_path, workers):
    ann, doc = write_keypoints(str(tmp_path))
    images = str(tmp_path / "images")
    for flip in (0.0, 1.0):
        data = datasets.CocoDetection(
            images, ann, T.Compose([T.RandomHorizontalFlip(flip), T.Resize((96, 128))]),
            keypoints=True, keypoint_flip=datasets.COCO_PERSON_KEYPOINT_FLIP)
        loader = feedline.DataLoader(data, batch_size=2, num_workers=workers)
        index = 0
        for batch in loader:
            for target in datasets.detection_targets(batch)[1]:
                image = doc["images"][index]
                # Resize((96, 128)) scales each axis on its own.
                sx, sy = 128 / image["width"], 96 / image["height"]
                expected = reference_keypoints(doc, index, flip == 1.0, 1.0)
                expected[..., 0] *= sx
                expected[..., 1] *= sy
                np.testing.assert_allclose(target["keypoints"], expected, rtol=1e-6, atol=1e-4)
                assert target["keypoints"].dtype == np.float32
                assert np.shares_memory(target["keypoints"], batch["keypoints"])
                index += 1
        assert index == len(doc["images"])
    import pickle
    again = pickle.loads(pickle.dumps(data))
    np.testing.assert_array_equal(again[1]["keypoints"], data[1]["keypoints"])


def test_keypoints_without_the_flip_keep_their_places_and_bad_options_are_named(tmp_path):
    ann, doc = write_keypoints(str(tmp_path))
    images = str(tmp_path / "images")
    flipped = datasets.CocoDetection(images, ann, T.Compose([T.RandomHorizontalFlip(1.0)]),
                                     keypoints=True)
    for i in range(len(flipped)):
        # No keypoint_flip: mirrored in place (x -> width - x), none swapped.
        expected = reference_keypoints(doc, i, False, 1.0)
        labelled = expected[..., 2] != 0
        expected[..., 0] = np.where(labelled, doc["images"][i]["width"] - expected[..., 0], 0)
        np.testing.assert_allclose(flipped[i]["keypoints"], expected, atol=1e-4)
    with pytest.raises(ValueError, match="keypoint_flip must list each of the 17"):
        datasets.CocoDetection(images, ann, keypoints=True, keypoint_flip=[0, 1])
    with pytest.raises(ValueError, match="keypoint_flip needs keypoints"):
        datasets.CocoDetection(images, ann, keypoint_flip=datasets.COCO_PERSON_KEYPOINT_FLIP)
    with pytest.raises(TypeError, match="keypoint_flip must be a sequence of ints"):
        datasets.CocoDetection(images, ann, keypoints=True, keypoint_flip=[0.5] * 17)
    plain = write_coco(str(tmp_path / "plain"))
    with pytest.raises(ValueError, match="no annotation lists \"keypoints\""):
        datasets.CocoDetection(str(tmp_path / "plain" / "images"), plain, keypoints=True)


def test_keypoints_move_through_the_mosaic_tiles(tmp_path):
    ann, doc = write_keypoints(str(tmp_path), images=6)
    images = str(tmp_path / "images")
    data = datasets.CocoDetection(images, ann, T.Compose([T.RandomHorizontalFlip(0.5)]),
                                  keypoints=True, keypoint_flip=datasets.COCO_PERSON_KEYPOINT_FLIP,
                                  annotation_index=False, mosaic=datasets.Mosaic(size=64))
    labelled = 0
    for seed in range(6):
        for i in range(len(data)):
            sample = data._native.get(i, 0, seed)
            assert sample["keypoints"].shape == (len(sample["boxes"]), 17, 3)
            for box, points in zip(sample["boxes"], sample["keypoints"]):
                for x, y, v in points:
                    if v == 0:
                        assert x == 0 and y == 0
                        continue
                    # The keypoints were drawn inside their box: they stay there.
                    assert box[0] - 0.01 <= x <= box[2] + 0.01, (box, x)
                    assert box[1] - 0.01 <= y <= box[3] + 0.01, (box, y)
                    labelled += 1
    assert labelled > 50
