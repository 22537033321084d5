"""The detection steps of torchvision's references/detection, run natively
in the detection datasets: RandomZoomOut (the image on a filled canvas,
boxes and masks moved with it), RandomIoUCrop (a crop chosen from the boxes,
keeping the objects centred in it), RandomPhotometricDistort (on the whole
image when listed first), and masks="source" (the references' ssd masks).
Random draws come from (seed, epoch, index): batches are the same for any
worker count and after a resume."""

import json

import numpy as np
import pytest

import feedline
from feedline.vision import datasets
from feedline.vision import transforms as T

from test_coco_detection import (assert_same_for_any_worker_count_and_on_resume, batch_values,
                                 reference_target, write_coco)


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("coco"))
    ann = write_coco(root, images=8, seed=3)
    with open(ann) as f:
        return root + "/images", ann, json.load(f)


def find(image, inside):
    """(top, left) where `inside` (H, W, 3) sits in `image`, or None."""
    h, w = inside.shape[:2]
    for y in range(image.shape[0] - h + 1):
        for x in range(image.shape[1] - w + 1):
            if np.array_equal(image[y:y + h, x:x + w], inside):
                return y, x
    return None


def samples(data, seed):
    """The dataset's samples in order under `seed`, through a loader (one
    per batch, so nothing is padded)."""
    for batch in feedline.DataLoader(data, batch_size=1, seed=seed):
        yield {k: np.asarray(v)[0] for k, v in batch.items() if not k.endswith("_lengths")}


def test_zoom_out_places_the_image_on_the_fill_and_moves_boxes_and_masks(coco):
    images, ann, doc = coco
    plain = datasets.CocoDetection(images, ann, masks=True)
    zoomed = datasets.CocoDetection(
        images, ann, T.RandomZoomOut(fill=[123, 117, 104], side_range=(1.5, 2.5), p=1.0),
        masks=True)
    for i in range(len(plain)):
        a, b = plain[i], zoomed[i]
        at = find(b["image"], a["image"])
        assert at is not None, i
        top, left = at
        h, w = a["image"].shape[:2]
        assert 1.5 * w - 1 <= b["image"].shape[1] <= 2.5 * w
        outside = np.ones(b["image"].shape[:2], bool)
        outside[top:top + h, left:left + w] = False
        assert (b["image"][outside] == [123, 117, 104]).all()
        np.testing.assert_array_equal(b["boxes"], a["boxes"] + np.float32([left, top, left, top]))
        np.testing.assert_array_equal(b["labels"], a["labels"])
        np.testing.assert_array_equal(b["masks"][:, top:top + h, left:left + w], a["masks"])
        assert b["masks"].sum() == a["masks"].sum()
        np.testing.assert_array_equal(b["labels"], reference_target(doc, i)["labels"])


def test_iou_crop_keeps_the_objects_centred_in_the_crop(coco):
    images, ann, _ = coco
    plain = datasets.CocoDetection(images, ann)
    data = datasets.CocoDetection(images, ann, [T.RandomIoUCrop(sampler_options=[0.0, 0.3])])
    cropped = 0
    for epoch in range(4):
        for i, sample in enumerate(samples(data, epoch)):
            whole = plain[i]
            at = find(whole["image"], sample["image"])
            assert at is not None
            top, left = at
            h, w = sample["image"].shape[:2]
            cropped += (h, w) != whole["image"].shape[:2]
            boxes = whole["boxes"]
            cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
            keep = (left < cx) & (cx < left + w) & (top < cy) & (cy < top + h)
            assert keep.any()  # a crop is taken only around an object
            want = boxes[keep] - np.float32([left, top, left, top])
            want[:, 0::2] = want[:, 0::2].clip(0, w)
            want[:, 1::2] = want[:, 1::2].clip(0, h)
            np.testing.assert_array_equal(sample["boxes"], want)
            np.testing.assert_array_equal(sample["labels"], whole["labels"][keep])
    assert cropped > 16


def test_photometric_distort_changes_colours_not_geometry(coco):
    images, ann, _ = coco
    plain = datasets.CocoDetection(images, ann)
    data = datasets.CocoDetection(images, ann, [T.RandomPhotometricDistort(p=1.0)])
    for i in range(len(plain)):
        a, b = plain[i], data[i]
        assert a["image"].shape == b["image"].shape
        assert not np.array_equal(a["image"], b["image"])
        np.testing.assert_array_equal(a["boxes"], b["boxes"])
    with pytest.raises(ValueError, match="hue"):
        T.RandomPhotometricDistort(hue=(-0.6, 0.1))
    with pytest.raises(ValueError, match="side range"):
        T.RandomZoomOut(side_range=(0.5, 2))
    with pytest.raises(ValueError, match="trials"):
        T.RandomIoUCrop(trials=0)


def ssd_transforms():
    return T.Compose([T.RandomPhotometricDistort(), T.RandomZoomOut(fill=[123, 117, 104]),
                      T.RandomIoUCrop(), T.RandomHorizontalFlip(0.5), T.PILToTensor(),
                      T.ConvertImageDtype("float32")])


@pytest.mark.parametrize("masks", [True, "source"])
def test_the_ssd_recipe_gives_the_same_batches_for_any_worker_count_and_on_resume(coco, masks):
    images, ann, _ = coco
    data = datasets.CocoDetection(images, ann, ssd_transforms(), masks=masks)

    def loader(**options):
        return feedline.DataLoader(data, batch_size=2, shuffle=True, seed=11, **options)

    assert_same_for_any_worker_count_and_on_resume(loader, batch_values(loader(num_workers=0)))


def test_source_masks_are_the_references_ssd_masks(coco):
    """masks="source": every object's mask at the source size, mirrored
    with the image, whatever the crop kept; "masks_size" says their size."""
    images, ann, _ = coco
    plain = datasets.CocoDetection(images, ann, masks=True)
    mirrored = datasets.CocoDetection(images, ann, [T.RandomHorizontalFlip(1.0)], masks=True)
    data = datasets.CocoDetection(
        images, ann, [T.RandomZoomOut(p=1.0), T.RandomIoUCrop(), T.RandomHorizontalFlip(0.5)],
        masks="source")
    flips = 0
    for epoch in range(3):
        for i, sample in enumerate(samples(data, epoch)):
            h, w = plain[i]["image"].shape[:2]
            np.testing.assert_array_equal(sample["masks_size"], [h, w])
            assert len(sample["masks"]) == len(plain[i]["labels"]) >= len(sample["labels"])
            if np.array_equal(sample["masks"], plain[i]["masks"]):
                continue
            np.testing.assert_array_equal(sample["masks"], mirrored[i]["masks"])
            flips += 1
    assert 0 < flips < 3 * len(plain)
    batch = next(iter(feedline.DataLoader(data, batch_size=3)))
    _, targets = datasets.detection_targets(batch)
    for i, target in enumerate(targets):
        assert target["masks"].shape == plain[i]["masks"].shape
    with pytest.raises(ValueError, match="masks"):
        datasets.CocoDetection(images, ann, masks="sources")


def test_iou_crop_in_voc_and_yolo_too(tmp_path):
    """The other detection datasets give RandomIoUCrop their boxes (YOLO's
    as fractions of the image, before its size is known)."""
    import PIL.Image

    rng = np.random.default_rng(0)
    root = tmp_path / "yolo"
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir(parents=True)
    for i in range(4):
        PIL.Image.fromarray(rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)).save(
            root / "images" / f"{i}.png")
        (root / "labels" / f"{i}.txt").write_text("0 0.25 0.25 0.2 0.2\n1 0.75 0.75 0.2 0.2\n")
    data = datasets.YoloDetection(str(root / "images"),
                                  [T.RandomIoUCrop(sampler_options=[0.0])])
    plain = datasets.YoloDetection(str(root / "images"))
    alone = 0
    for epoch in range(6):
        for i, sample in enumerate(samples(data, epoch)):
            top, left = find(plain[i]["image"], sample["image"])
            h, w = sample["image"].shape[:2]
            centres = [(15, 10), (45, 30)]  # the two objects' (x, y) centres
            want = [k for k, (cx, cy) in enumerate(centres)
                    if left < cx < left + w and top < cy < top + h]
            assert sample["labels"].tolist() == want
            alone += len(want) == 1
    assert alone > 0


def test_the_references_resizes_scale_the_boxes_with_the_image(coco):
    """RandomShortestSize and ScaleJitter scale boxes as the references do
    (by new / old size per axis); FixedSizeCrop crops or pads to its size,
    its padding in the fill, objects without area dropped."""
    images, ann, _ = coco
    plain = datasets.CocoDetection(images, ann, masks=True)
    for steps in ([T.RandomShortestSize([30, 50], 70)], [T.ScaleJitter((64, 64))]):
        data = datasets.CocoDetection(images, ann, steps, masks=True)
        for seed in range(3):
            for i, sample in enumerate(samples(data, seed)):
                h0, w0 = plain[i]["image"].shape[:2]
                h, w = sample["image"].shape[:2]
                scale = np.float32([w / w0, h / h0, w / w0, h / h0])
                want = np.minimum(plain[i]["boxes"] * scale, np.float32([w, h, w, h]))
                np.testing.assert_allclose(sample["boxes"], want, atol=1e-3)
                assert sample["masks"].shape == (len(sample["labels"]), h, w)
    data = datasets.CocoDetection(
        images, ann, [T.ScaleJitter((64, 64)), T.FixedSizeCrop((64, 64), fill=[1, 2, 3])])
    padded = 0
    for seed in range(3):
        for sample in samples(data, seed):
            assert sample["image"].shape == (64, 64, 3)
            boxes = sample["boxes"]
            assert ((boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])).all()
            assert (boxes >= 0).all() and (boxes <= 64).all()
            padded += bool((sample["image"][-1, -1] == [1, 2, 3]).all())
    assert padded > 0


def test_a_crop_that_chooses_from_objects_needs_them():
    image = np.zeros((20, 30, 3), np.uint8)
    with pytest.raises(Exception, match="random_iou_crop chooses its crop from the objects"):
        T.RandomIoUCrop()(image)
    with pytest.raises(ValueError, match="pad with different colours"):
        T.Compose([T.CenterCrop(40), T.RandomZoomOut(fill=[255, 0, 0])])(image)


@pytest.mark.parametrize("keep_difficult", [False, True])
def test_iou_crop_in_voc_chooses_from_the_objects_it_writes(tmp_path, keep_difficult):
    """VOC's boxes (difficult ones only when kept) go to the crop: every
    crop holds one of the objects written, centred, and keeps exactly the
    written objects centred in it. JPEG pixels are not compared: the crop
    is located by its boxes."""
    from test_voc_detection import write_voc

    write_voc(str(tmp_path), count=8, seed=5)
    plain = datasets.VOCDetection(str(tmp_path), keep_difficult=keep_difficult)
    data = datasets.VOCDetection(str(tmp_path), keep_difficult=keep_difficult,
                                 transforms=[T.RandomIoUCrop(sampler_options=[0.0])])
    for epoch in range(4):
        for i, sample in enumerate(samples(data, epoch)):
            whole = plain[i]
            if len(whole["labels"]) == 0:
                assert sample["image"].shape == whole["image"].shape  # left as it is
                continue
            assert len(sample["labels"]) >= 1
            # Where the crop is, from the kept boxes: any kept box moved by
            # (left, top) is a whole box clipped to the crop.
            h, w = sample["image"].shape[:2]
            boxes = whole["boxes"]
            cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
            found = False
            for left in range(whole["image"].shape[1] - w + 1):
                for top in range(whole["image"].shape[0] - h + 1):
                    keep = (left < cx) & (cx < left + w) & (top < cy) & (cy < top + h)
                    want = boxes[keep] - np.float32([left, top, left, top])
                    want[:, 0::2] = want[:, 0::2].clip(0, w)
                    want[:, 1::2] = want[:, 1::2].clip(0, h)
                    if keep.sum() == len(sample["labels"]) and np.array_equal(
                            want, sample["boxes"]) and np.array_equal(
                            whole["labels"][keep], sample["labels"]):
                        found = True
                        break
                if found:
                    break
            assert found, (i, epoch)
