"""Detection packs: COCO and YOLO data packed by pack_shards (each record an
image and its annotations) and read back by
feedline.vision.datasets.DetectionShardDataset, locally, from a real nginx
over HTTP (with and without the node's cache) and from a real SeaweedFS over
S3, give the source dataset's batches bit for bit, for 0 and 2 workers;
damaged annotations and packs of images alone are errors naming the shard
and the record."""

import json
import os
import shutil
import tarfile

import numpy as np
import PIL.Image
import pytest

import feedline
from feedline import io
from feedline.vision import datasets
from feedline.vision import transforms as T

from nginx_server import Nginx
from seaweedfs_server import SeaweedFs


def jpeg(path, rng, width, height, progressive=False):
    # Smooth gradients and noise: a photo-like JPEG that the pack rewrites
    # with restart markers.
    y, x = np.mgrid[0:height, 0:width]
    pixels = np.stack([x * 255 // width, y * 255 // height, (x + y) % 256], -1)
    pixels = (pixels + rng.integers(0, 40, pixels.shape)).clip(0, 255).astype(np.uint8)
    PIL.Image.fromarray(pixels).save(path, quality=90, progressive=progressive)


def write_coco(root, count=9, seed=3):
    """COCO's layout: root/annotations/instances_train.json and root/train/.
    Objects with one or two polygons, a box without segmentation, a crowd
    with a run-length mask (uncompressed counts), a box past the edge, and an
    image without objects."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(root, "annotations"))
    os.makedirs(os.path.join(root, "train"))
    doc = {"images": [], "annotations": [],
           "categories": [{"id": c, "name": f"c{c}"} for c in (1, 2, 7)]}
    for i in range(count):
        w, h = int(rng.integers(40, 90)), int(rng.integers(40, 90))
        name = f"im{i}.jpg"
        jpeg(os.path.join(root, "train", name), rng, w, h, progressive=i % 4 == 1)
        doc["images"].append({"id": 500 + 3 * i, "file_name": name, "width": w, "height": h})
        if i == 4:
            continue  # no objects: left out by skip_empty
        for k in range(int(rng.integers(2, 5))):
            x, y = float(rng.uniform(0, w - 12)), float(rng.uniform(0, h - 12))
            bw, bh = float(rng.uniform(3, 30)), float(rng.uniform(3, 30))
            ann = {"id": len(doc["annotations"]), "image_id": 500 + 3 * i,
                   "bbox": [x, y, bw, bh], "category_id": int(rng.choice([1, 2, 7])),
                   "iscrowd": 0, "area": bw * bh * 0.7}
            if k == 0:
                ann["segmentation"] = [[x, y, x + bw, y + 0.3, x + bw * 0.6, y + bh]]
            elif k == 1:
                ann["segmentation"] = [[x, y, x + bw / 2, y, x, y + bh / 2],
                                       [x + bw, y + bh, x + bw / 2, y + bh, x + bw, y + bh / 3]]
            elif k == 2 and i % 2 == 0:
                # A crowd: a run-length mask of the image's size, column-major.
                mask = np.zeros((h, w), np.uint8)
                mask[int(y):int(y + bh), int(x):int(x + bw)] = 1
                flat = mask.T.reshape(-1)
                changes = np.flatnonzero(np.diff(flat)) + 1
                runs = np.diff(np.concatenate([[0], changes, [flat.size]])).tolist()
                if flat[0] == 1:
                    runs = [0] + runs
                ann.update(iscrowd=1, segmentation={"size": [h, w], "counts": runs})
            elif k == 3:
                ann["bbox"] = [w - 5.5, y, 20.25, bh]  # past the right edge, no segmentation
            doc["annotations"].append(ann)
    path = os.path.join(root, "annotations", "instances_train.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path, os.path.join(root, "train")


def write_yolo(root, count=7, seed=5):
    """The YOLO layout: root/images/train/*.jpg, root/labels/train/*.txt with
    box lines and polygon lines; one image without a label file."""
    rng = np.random.default_rng(seed)
    images = os.path.join(root, "images", "train")
    labels = os.path.join(root, "labels", "train")
    os.makedirs(images)
    os.makedirs(labels)
    for i in range(count):
        jpeg(os.path.join(images, f"y{i}.jpg"), rng, int(rng.integers(40, 80)),
             int(rng.integers(40, 80)))
        if i == 2:
            continue  # a background image
        lines = []
        for k in range(int(rng.integers(1, 4))):
            cx, cy = rng.uniform(0.2, 0.8, 2)
            bw, bh = rng.uniform(0.1, 0.4, 2)
            if k == 1:
                points = " ".join(f"{v:.5f}" for v in rng.uniform(0.05, 0.95, 8))
                lines.append(f"{k} {points}")
            else:
                lines.append(f"{int(rng.integers(0, 3))} {cx:.6f} {cy:.6f} {bw:.6f} {bh:.6f}")
        with open(os.path.join(labels, f"y{i}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return images


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The sources and their packs, in served/ (shards of at most 16 KiB: a
    few records each)."""
    root = tmp_path_factory.mktemp("detection")
    ann, coco_images = write_coco(str(root / "coco"))
    yolo_images = write_yolo(str(root / "yolo"))
    served = root / "served"
    coco_info = datasets.pack_shards(ann, str(served / "coco"), shard_bytes=16 << 10)
    yolo_info = datasets.pack_shards(yolo_images, str(served / "yolo"), shard_bytes=16 << 10)
    assert coco_info["records"] == 9 and coco_info["shards"] >= 3
    assert coco_info["rewritten_jpegs"] == 9 and coco_info["progressive_converted"] == 2
    assert yolo_info["records"] == 7 and yolo_info["shards"] >= 2
    return {"ann": ann, "coco_images": coco_images, "yolo_images": yolo_images,
            "served": str(served)}


def batches(dataset, workers, mode="thread", batch_size=3):
    loader = feedline.DataLoader(dataset, batch_size=batch_size, shuffle=True, seed=11,
                                 num_workers=workers, worker_mode=mode)
    return [{k: np.array(v) for k, v in batch.items()} for batch in loader]


def assert_same(got, want):
    assert len(got) == len(want) > 0
    for a, b in zip(got, want):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].dtype == b[key].dtype, key
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def ssd():
    return T.Compose([T.RandomPhotometricDistort(p=0.5), T.RandomZoomOut(fill=[10, 20, 30]),
                      T.RandomIoUCrop(), T.RandomHorizontalFlip(0.5), T.Resize((48, 48)),
                      T.PILToTensor(), T.ConvertImageDtype("float32")])


def flip_resize():
    return T.Compose([T.RandomHorizontalFlip(0.5), T.Resize(40), T.PILToTensor()])


@pytest.mark.parametrize("transforms, options", [
    (ssd, {"masks": True}),
    (flip_resize, {"masks": True, "keep_crowd": True, "skip_empty": True,
                   "size_divisibility": 16}),
    (flip_resize, {"masks": "source"}),
    (lambda: T.Compose([T.RandomHorizontalFlip(0.5), T.PILToTensor()]),
     {"mosaic": datasets.Mosaic(size=48)}),
])
def test_a_coco_pack_gives_the_source_datasets_batches(data, transforms, options):
    source = datasets.CocoDetection(data["coco_images"], data["ann"], transforms(),
                                    annotation_index=False, **options)
    packed = datasets.DetectionShardDataset(os.path.join(data["served"], "coco"), transforms(),
                                            **options)
    assert len(packed) == len(source) == (8 if options.get("skip_empty") else 9)
    want = batches(source, 0)
    # The pack's masks, crowds and ids are there to compare.
    assert any(b["boxes_lengths"].sum() > 0 for b in want)
    if options.get("masks") is True:
        assert any(b["masks"].any() for b in want)
    for workers in (0, 2):
        assert_same(batches(packed, workers), want)
    # Image 4 has no objects: skip_empty leaves its record out.
    assert packed.key(4) == ("000000005" if options.get("skip_empty") else "000000004")


def test_a_yolo_pack_gives_the_source_datasets_batches(data):
    for transforms, options in ((flip_resize, {"masks": True}),
                                (lambda: T.Compose([T.RandomHorizontalFlip(0.5)]),
                                 {"mosaic": datasets.Mosaic(size=40)}),
                                (lambda: T.Compose([T.RandomHorizontalFlip(0.5)]),
                                 {"mosaic": datasets.Mosaic(size=40, mixup=0.5)})):
        source = datasets.YoloDetection(data["yolo_images"], transforms(), **options)
        packed = datasets.DetectionShardDataset(os.path.join(data["served"], "yolo"),
                                                transforms(), **options)
        assert len(packed) == len(source) == 7
        want = batches(source, 0)
        assert any(b["boxes_lengths"].sum() > 0 for b in want)
        for workers in (0, 2):
            assert_same(batches(packed, workers), want)


def test_a_pack_groups_by_aspect_ratio_as_its_source(data):
    # The index keeps each image's size as the annotation file lists it, so
    # the references' aspect-ratio grouping reads no image and gives the
    # source's groups and batches.
    source = datasets.CocoDetection(data["coco_images"], data["ann"], flip_resize(),
                                    annotation_index=False, skip_empty=True)
    packed = datasets.DetectionShardDataset(os.path.join(data["served"], "coco"),
                                            flip_resize(), skip_empty=True)
    with open(data["ann"]) as f:
        listed = {im["id"]: (im["height"], im["width"]) for im in json.load(f)["images"]}
    want_sizes = [listed[i] for i in source.ids]
    for dataset in (source, packed):
        heights, widths = dataset.image_sizes
        assert list(zip(heights.tolist(), widths.tolist())) == want_sizes
    groups = io.aspect_ratio_groups(packed, k=1)
    assert groups == io.aspect_ratio_groups(source, k=1)
    assert len(set(groups)) > 1
    want = None
    for dataset in (source, packed):
        sampler = io.GroupedBatchSampler(io.RandomSampler(dataset, seed=4), groups, 2)
        loader = feedline.DataLoader(dataset, batch_sampler=sampler, num_workers=2, seed=11)
        got = [{k: np.array(v) for k, v in batch.items()} for batch in loader]
        for batch in got:
            ids = batch["image_id"].tolist()
            assert len({groups[source.ids.index(i)] for i in ids}) == 1, ids
        if want is None:
            want = got
        else:
            assert_same(got, want)


def test_a_yolo_pack_keeps_each_images_size_from_its_header(data):
    packed = datasets.DetectionShardDataset(os.path.join(data["served"], "yolo"))
    heights, widths = packed.image_sizes
    for i in range(len(packed)):
        with PIL.Image.open(os.path.join(data["yolo_images"], f"y{i}.jpg")) as im:
            assert (heights[i], widths[i]) == (im.height, im.width)


@pytest.fixture()
def nginx(data, tmp_path):
    server = Nginx(data["served"], str(tmp_path))
    server.start()
    yield server
    server.stop()


def test_a_served_pack_gives_the_source_datasets_batches(data, nginx, tmp_path):
    source = datasets.CocoDetection(data["coco_images"], data["ann"], ssd(), masks=True,
                                    annotation_index=False)
    want = batches(source, 0)
    served = datasets.DetectionShardDataset(nginx.url("coco/"), ssd(), masks=True)
    assert served.shards[0] == nginx.url("coco/shard-000000.tar")
    assert_same(batches(served, 0), want)
    assert_same(batches(served, 2, "process"), want)
    # A brace list through the node's cache: each shard downloaded whole.
    count = len(served.shards)
    braces = nginx.url(f"coco/shard-{{000000..{count - 1:06d}}}.tar")
    cached = datasets.DetectionShardDataset(braces, ssd(), masks=True,
                                            remote={"cache_dir": str(tmp_path / "cache")})
    assert_same(batches(cached, 2), want)
    cached_tars = sorted(name for _, _, names in os.walk(tmp_path / "cache") for name in names
                         if name.endswith(".tar"))
    assert cached_tars == sorted(os.path.basename(shard) for shard in served.shards)


def test_an_s3_pack_gives_the_source_datasets_batches(data, tmp_path, monkeypatch):
    server = SeaweedFs(tmp_path, "feedline")
    try:
        server.start()
        server.put_folder(os.path.join(data["served"], "yolo"), "yolo")
        server.point_aws_at_it(monkeypatch)
        source = datasets.YoloDetection(data["yolo_images"], flip_resize(), masks=True)
        packed = datasets.DetectionShardDataset("s3://feedline/yolo/", flip_resize(), masks=True)
        want = batches(source, 0)
        for workers in (0, 2):
            assert_same(batches(packed, workers), want)
    finally:
        server.stop()


def test_the_command_packs_detection_data_to_s3(data, tmp_path, monkeypatch):
    server = SeaweedFs(tmp_path, "feedline")
    try:
        server.start()
        server.point_aws_at_it(monkeypatch)
        info = datasets.pack_shards(data["ann"], "s3://feedline/coco-up/", shard_bytes=16 << 10)
        assert info["records"] == 9
        source = datasets.CocoDetection(data["coco_images"], data["ann"], flip_resize(),
                                        masks=True, annotation_index=False)
        packed = datasets.DetectionShardDataset("s3://feedline/coco-up/", flip_resize(),
                                                masks=True)
        assert_same(batches(packed, 2), batches(source, 0))
    finally:
        server.stop()


def member_offset(tar_path, name):
    with tarfile.open(tar_path) as tar:
        member = tar.getmember(name)
        return member.offset_data, member.size


def test_damaged_annotations_are_failed_samples_naming_the_shard_and_key(data, tmp_path):
    pack = str(tmp_path / "coco")
    shutil.copytree(os.path.join(data["served"], "coco"), pack)
    shard = os.path.join(pack, "shard-000000.tar")
    at, size = member_offset(shard, "000000001.det")
    with open(shard, "r+b") as f:
        f.seek(at + size // 2)
        byte = f.read(1)
        f.seek(at + size // 2)
        f.write(bytes([byte[0] ^ 0x5A]))
    packed = datasets.DetectionShardDataset(pack, flip_resize())
    with pytest.raises(feedline.SampleError,
                       match=r"shard-000000\.tar:000000001.*annotations: CRC-32C mismatch.*"
                             r"key 000000001"):
        packed[1]
    packed[0]  # the others read
    kept = [{k: np.array(v) for k, v in b.items()}
            for b in feedline.DataLoader(packed, batch_size=4, error_policy="skip")]
    ids = np.concatenate([b["image_id"] for b in kept]).tolist()
    assert ids == [500 + 3 * i for i in range(9) if i != 1]


def test_a_pack_without_annotations_is_refused_naming_the_shard_and_record(data, tmp_path):
    images = str(tmp_path / "folder" / "a")
    os.makedirs(images)
    for name in os.listdir(data["coco_images"])[:3]:
        shutil.copy(os.path.join(data["coco_images"], name), images)
    datasets.pack_shards(str(tmp_path / "folder"), str(tmp_path / "plain"))
    with pytest.raises(ValueError, match=r"plain/shard-000000\.tar: record 000000000 has no "
                                         r"annotations: this is a pack of images alone"):
        datasets.DetectionShardDataset(str(tmp_path / "plain"))
    # And the image reader still reads a detection pack's images.
    images_only = datasets.ShardDataset(os.path.join(data["served"], "coco"))
    assert len(images_only) == 9 and images_only[0][1] == 0
