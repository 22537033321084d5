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


def write_pose(root, count=5, dims=3, seed=4):
    """Pose labels (Ultralytics' layout, kpt_shape (3, dims)): each object a
    box and 3 keypoints inside it, some unlabelled; returns {name: (w, h,
    [(box row, [(x, y, v) normalized])])}."""
    rng = np.random.default_rng(seed)
    truth = {}
    for i in range(count):
        w, h = int(rng.integers(40, 90)), int(rng.integers(30, 60))
        name = f"{i:03d}.png"
        path = os.path.join(root, "images", "train", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        PIL.Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
        objects, lines = [], []
        for _ in range(int(rng.integers(1, 4))):
            cx, cy = (round(float(v), 6) for v in rng.uniform(0.3, 0.7, 2))
            bw, bh = (round(float(v), 6) for v in rng.uniform(0.2, 0.4, 2))
            points = []
            for _ in range(3):
                x = round(float(rng.uniform(cx - bw / 2, cx + bw / 2)), 6)
                y = round(float(rng.uniform(cy - bh / 2, cy + bh / 2)), 6)
                v = int(rng.choice([0, 1, 2]))
                points.append((x, y, v))
            numbers = [f"{x} {y} {v}" if dims == 3 else (f"{x} {y}" if v else "-1 -1")
                       for x, y, v in points]
            lines.append(f"0 {cx} {cy} {bw} {bh} " + " ".join(numbers))
            objects.append(((cx, cy, bw, bh), points))
        label = os.path.join(root, "labels", "train", f"{i:03d}.txt")
        os.makedirs(os.path.dirname(label), exist_ok=True)
        with open(label, "w") as f:
            f.write("\n".join(lines) + "\n")
        truth[name] = (w, h, objects)
    return truth


@pytest.mark.parametrize("dims", [2, 3])
def test_pose_keypoints_move_with_the_pixels_and_swap_when_mirrored(tmp_path, dims):
    truth = write_pose(str(tmp_path), dims=dims)
    images = os.path.join(str(tmp_path), "images", "train")
    for flip in (0.0, 1.0):
        data = datasets.YoloDetection(
            images, T.Compose([T.RandomHorizontalFlip(flip), T.Resize((48, 64))]),
            keypoints=(3, dims), keypoint_flip=[0, 2, 1])
        loader = feedline.DataLoader(data, batch_size=2, num_workers=2)
        index = 0
        names = sorted(truth)
        for batch in loader:
            for target in datasets.detection_targets(batch)[1]:
                w, h, objects = truth[names[index]]
                expected = np.zeros((len(objects), 3, 3), np.float32)
                for o, (_, points) in enumerate(objects):
                    for k in range(3):
                        x, y, v = points[[0, 2, 1][k] if flip else k]
                        if v:
                            px = np.float32(np.float32(x * w) * np.float32(64 / w))
                            expected[o, k] = (64 - px if flip else px, y * h * 48 / h,
                                              v if dims == 3 else 1)
                np.testing.assert_allclose(target["keypoints"], expected, atol=1e-3)
                index += 1
        assert index == len(truth)


def test_pose_keypoints_follow_the_mosaic_tiles(tmp_path):
    write_pose(str(tmp_path), count=8)
    images = os.path.join(str(tmp_path), "images", "train")
    data = datasets.YoloDetection(images, T.Compose([T.RandomHorizontalFlip(0.5)]),
                                  keypoints=(3, 3), keypoint_flip=[0, 2, 1],
                                  mosaic=datasets.Mosaic(size=96))
    labelled = 0
    for seed in range(6):
        for i in range(len(data)):
            sample = data._native.get(i, 0, seed)
            points = sample["keypoints"]
            assert points.shape == (len(sample["boxes"]), 3, 3)
            for box, object_points in zip(sample["boxes"], points):
                for x, y, v in object_points:
                    assert v in (0, 1, 2)
                    if v == 0:
                        assert x == 0 and y == 0
                        continue
                    # Inside its object's box (its source points were), in
                    # the output.
                    assert box[0] - 0.01 <= x <= box[2] + 0.01 and \
                        box[1] - 0.01 <= y <= box[3] + 0.01, (box, x, y)
                    labelled += 1
    assert labelled > 20

    def loader(**options):
        return feedline.DataLoader(data, batch_size=3, shuffle=True, seed=1, **options)

    reference = [{k: np.array(v) for k, v in b.items()} for b in loader(num_workers=0)]
    again = [{k: np.array(v) for k, v in b.items()} for b in loader(num_workers=2)]
    for a, b in zip(reference, again):
        np.testing.assert_array_equal(a["keypoints"], b["keypoints"])


def test_pose_lines_that_do_not_fit_are_named(tmp_path):
    write_pose(str(tmp_path), count=2)
    images = os.path.join(str(tmp_path), "images", "train")
    label = os.path.join(str(tmp_path), "labels", "train", "001.txt")
    with open(label, "w") as f:
        f.write("0 0.5 0.5 0.2 0.2 0.5 0.5 2 0.4 0.4\n")
    data = datasets.YoloDetection(images, keypoints=(3, 3))
    with pytest.raises(feedline.SampleError, match=r"001.txt.*line 1: has 10 numbers: a pose line "
                                                   r"is 'class cx cy w h' and 3 points of 3"):
        data[1]
    with open(label, "w") as f:
        f.write("0 0.5 0.5 0.2 0.2 0.5 0.5 2 0.4 0.4 3 0.5 0.5 0\n")
    with pytest.raises(feedline.SampleError, match="keypoint visibility 3 is not 0, 1 or 2"):
        data[1]
    with pytest.raises(ValueError, match="keypoint_dims must be 2"):
        datasets.YoloDetection(images, keypoints=(3, 4))
    with pytest.raises(ValueError, match="keypoint_flip must list each of the 3"):
        datasets.YoloDetection(images, keypoints=(3, 3), keypoint_flip=[0, 1, 1])
    with pytest.raises(ValueError, match="keypoint_flip needs keypoints"):
        datasets.YoloDetection(images, keypoint_flip=[0])
    with pytest.raises(TypeError, match=r"keypoints must be \(K, dims\)"):
        datasets.YoloDetection(images, keypoints=3)
