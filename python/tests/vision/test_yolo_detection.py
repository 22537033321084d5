"""feedline.vision.datasets.YoloDetection: the YOLO layout (images/ beside
labels/, normalized "class cx cy w h" or polygon lines) read in C++, its
samples CocoDetection's: boxes in output pixels, moved with the pixels."""

import os

import numpy as np
import PIL.Image
import pytest

import feedline
from feedline.vision import datasets
from feedline.vision import transforms as T


def write_yolo(root, count=5, seed=0):
    """`count` PNGs in root/images/train with labels in root/labels/train;
    returns {image name: (width, height, [label rows])}."""
    rng = np.random.default_rng(seed)
    truth = {}
    for i in range(count):
        w, h = int(rng.integers(30, 90)), int(rng.integers(20, 60))
        name = f"{i:03d}.png"
        path = os.path.join(root, "images", "train", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        PIL.Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
        rows = []
        for _ in range(int(rng.integers(0, 4))):
            cx, cy = rng.uniform(0.2, 0.8, 2)
            bw, bh = rng.uniform(0.05, 0.3, 2)
            rows.append((int(rng.integers(0, 80)), cx, cy, bw, bh))
        if i != 2:  # image 2: a background image, no label file
            label = os.path.join(root, "labels", "train", f"{i:03d}.txt")
            os.makedirs(os.path.dirname(label), exist_ok=True)
            with open(label, "w") as f:
                f.writelines(f"{c} {x:.6f} {y:.6f} {bw:.6f} {bh:.6f}\n"
                             for c, x, y, bw, bh in rows)
        truth[name] = (w, h, rows if i != 2 else [])
    return truth


def pixel_boxes(width, height, rows, flip=False):
    out = []
    for _, cx, cy, bw, bh in rows:
        cx, cy, bw, bh = (float(f"{v:.6f}") for v in (cx, cy, bw, bh))
        x0, x1 = (cx - bw / 2) * width, (cx + bw / 2) * width
        if flip:
            x0, x1 = width - x1, width - x0
        out.append([x0, (cy - bh / 2) * height, x1, (cy + bh / 2) * height])
    return np.array(out, dtype=np.float32).reshape(-1, 4)


def test_labels_become_boxes_in_pixels_and_follow_a_flip(tmp_path):
    truth = write_yolo(str(tmp_path))
    images = os.path.join(str(tmp_path), "images", "train")
    plain = datasets.YoloDetection(images)
    flipped = datasets.YoloDetection(images, T.Compose([T.RandomHorizontalFlip(1.0)]))
    assert len(plain) == len(truth)
    for i, (name, (w, h, rows)) in enumerate(sorted(truth.items())):
        assert plain.label_file(i) == os.path.join(str(tmp_path), "labels", "train",
                                                    name[:-4] + ".txt")
        sample = plain[i]
        assert sample["image"].shape == (h, w, 3)
        np.testing.assert_allclose(sample["boxes"], pixel_boxes(w, h, rows), rtol=0, atol=1e-3)
        assert sample["labels"].tolist() == [r[0] for r in rows]
        np.testing.assert_allclose(flipped[i]["boxes"], pixel_boxes(w, h, rows, flip=True),
                                   rtol=0, atol=1e-3)
        np.testing.assert_array_equal(flipped[i]["image"], sample["image"][:, ::-1])


def test_a_loader_batches_them_with_lengths_and_a_bad_line_is_a_named_failed_sample(tmp_path):
    truth = write_yolo(str(tmp_path))
    images = os.path.join(str(tmp_path), "images", "train")
    with open(os.path.join(str(tmp_path), "labels", "train", "001.txt"), "a") as f:
        f.write("5 0.5 0.5\n")
    data = datasets.YoloDetection(images, T.Compose([T.Resize((32, 32)), T.PILToTensor()]))
    with pytest.raises(feedline.SampleError, match=r"001.txt.*line \d+: has 3 numbers"):
        data[1]
    batches = list(feedline.DataLoader(data, batch_size=5, num_workers=2, error_policy="skip"))
    assert batches[0]["image_id"].tolist() == [0, 2, 3, 4]
    counts = [len(truth[f"{i:03d}.png"][2]) for i in (0, 2, 3, 4)]
    assert batches[0]["boxes_lengths"].tolist() == counts
    pictures, targets = datasets.detection_targets(batches[0])
    assert [p.shape for p in pictures] == [(3, 32, 32)] * 4
    assert [len(t["boxes"]) for t in targets] == counts


def test_a_folder_outside_the_layout_is_refused(tmp_path):
    os.makedirs(str(tmp_path / "photos"))
    PIL.Image.new("RGB", (4, 4)).save(str(tmp_path / "photos" / "a.png"))
    with pytest.raises(ValueError, match="no 'images' folder"):
        datasets.YoloDetection(str(tmp_path / "photos"))


def test_detection_rows_give_the_batch_as_yolo_trainers_take_it(tmp_path):
    truth = write_yolo(str(tmp_path))
    images = os.path.join(str(tmp_path), "images", "train")
    data = datasets.YoloDetection(images)
    batch = next(iter(feedline.DataLoader(data, batch_size=len(truth))))
    rows = datasets.detection_rows(batch)
    expected_index, expected_rows = [], []
    for i, (name, (w, h, labels)) in enumerate(sorted(truth.items())):
        expected_index += [i] * len(labels)
        expected_rows += [[float(f"{v:.6f}") for v in r[1:]] for r in labels]
    assert rows["batch_idx"].tolist() == expected_index
    assert rows["labels"].tolist() == [r[0] for name in sorted(truth) for r in truth[name][2]]
    np.testing.assert_allclose(rows["boxes_cxcywh"], np.array(expected_rows).reshape(-1, 4),
                               atol=1e-4)
    assert rows["boxes"].shape == (len(expected_index), 4)


def test_torch_batches_and_images_three_pixels_high(tmp_path):
    import feedline.torch
    truth = write_yolo(str(tmp_path))
    images = os.path.join(str(tmp_path), "images", "train")
    data = datasets.YoloDetection(images, T.Compose([T.Resize((3, 50))]))
    batch = next(iter(feedline.torch.DataLoader(data, batch_size=len(truth))))
    rows = datasets.detection_rows(batch)
    assert rows["batch_idx"].tolist() == [i for i, name in enumerate(sorted(truth))
                                          for _ in truth[name][2]]
    pictures, targets = datasets.detection_targets(batch)
    assert [tuple(p.shape) for p in pictures] == [(3, 50, 3)] * len(truth)
    assert [len(t["labels"]) for t in targets] == [len(truth[n][2]) for n in sorted(truth)]
