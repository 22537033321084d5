"""feedline.vision.datasets.VOCDetection: Pascal VOC's layout read in C++,
checked against torchvision.datasets.VOCDetection's own reading of the same
files: the same images, the same objects, each box the pixel edges of the
pixels its <bndbox> names (VOC counts from 1, max included)."""

import os

import numpy as np
import PIL.Image
import pytest
import torchvision

import feedline
from feedline.vision import datasets
from feedline.vision import transforms as T


def write_voc(root, count=6, seed=0, year="2012"):
    """`count` JPEGs of VOC<year> listed in ImageSets/Main/train.txt, with
    0-4 objects each (some difficult, some with float coordinates)."""
    rng = np.random.default_rng(seed)
    base = os.path.join(root, "VOCdevkit", "VOC" + year)
    for folder in ("JPEGImages", "Annotations", "ImageSets/Main"):
        os.makedirs(os.path.join(base, folder), exist_ok=True)
    ids = []
    for i in range(count):
        image_id = f"2012_{i:06d}"
        ids.append(image_id)
        w, h = int(rng.integers(40, 120)), int(rng.integers(30, 90))
        PIL.Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(
            os.path.join(base, "JPEGImages", image_id + ".jpg"), quality=95)
        objects = []
        for k in range(int(rng.integers(0, 5))):
            x0, x1 = sorted(rng.integers(1, w + 1, 2))
            y0, y1 = sorted(rng.integers(1, h + 1, 2))
            name = datasets.VOCDetection.CLASSES[int(rng.integers(0, 20))]
            coords = [x0, y0, x1, y1] if k % 2 == 0 else [x0 + 0.5, y0, x1, y1]
            objects.append(
                f"<object><name>{name}</name><pose>Unspecified</pose>"
                f"<truncated>{k % 2}</truncated><difficult>{int(k == 3)}</difficult>"
                "<bndbox>" + "".join(f"<{t}>{v}</{t}>" for t, v in
                                     zip(("xmin", "ymin", "xmax", "ymax"), coords)) +
                "</bndbox></object>")
        with open(os.path.join(base, "Annotations", image_id + ".xml"), "w") as f:
            f.write(f"<annotation><folder>VOC{year}</folder><filename>{image_id}.jpg</filename>"
                    f"<size><width>{w}</width><height>{h}</height><depth>3</depth></size>"
                    + "".join(objects) + "</annotation>")
    with open(os.path.join(base, "ImageSets", "Main", "train.txt"), "w") as f:
        f.write("\n".join(ids) + "\n")
    return ids


def torchvision_objects(target, keep_difficult):
    """(boxes as pixel edges, labels, difficult) of torchvision's target."""
    boxes, labels, difficult = [], [], []
    for o in target["annotation"].get("object", []):
        hard = int(o["difficult"]) == 1
        if hard and not keep_difficult:
            continue
        b = o["bndbox"]
        x0, y0, x1, y1 = (float(b[k]) for k in ("xmin", "ymin", "xmax", "ymax"))
        boxes.append([x0 - 1, y0 - 1, x1, y1])
        labels.append(datasets.VOCDetection.CLASSES.index(o["name"]))
        difficult.append(int(hard))
    return np.array(boxes, dtype=np.float32).reshape(-1, 4), labels, difficult


@pytest.mark.parametrize("keep_difficult", [False, True])
def test_objects_are_torchvisions_reading_of_the_same_files(tmp_path, keep_difficult):
    ids = write_voc(str(tmp_path))
    ours = datasets.VOCDetection(str(tmp_path), "2012", "train", keep_difficult=keep_difficult)
    theirs = torchvision.datasets.VOCDetection(str(tmp_path), "2012", "train")
    assert len(ours) == len(theirs) == len(ids)
    assert ours.ids == ids
    compared = 0
    for i in range(len(ids)):
        sample = ours[i]
        image, target = theirs[i]
        np.testing.assert_array_equal(sample["image"], np.asarray(image))
        boxes, labels, difficult = torchvision_objects(target, keep_difficult)
        np.testing.assert_array_equal(sample["boxes"], boxes)
        assert sample["labels"].tolist() == labels
        assert sample["iscrowd"].tolist() == difficult
        assert sample["image_size"].tolist() == [image.height, image.width]
        compared += len(labels)
    assert compared > 5
    heights, widths = ours.image_sizes
    assert heights.tolist() == [theirs[i][0].height for i in range(len(ids))]


def test_a_loader_batches_flipped_boxes_and_groups_by_aspect_ratio(tmp_path):
    write_voc(str(tmp_path), count=8)
    plain = datasets.VOCDetection(str(tmp_path))
    data = datasets.VOCDetection(str(tmp_path), transforms=[T.RandomHorizontalFlip(1.0),
                                                            T.PILToTensor()])
    for workers, mode in ((0, "thread"), (2, "process")):
        loader = feedline.DataLoader(data, batch_size=4, num_workers=workers, worker_mode=mode)
        seen = 0
        for batch in loader:
            images, targets = datasets.detection_targets(batch)
            for image, target in zip(images, targets):
                i = int(target["image_id"])
                expected = plain[i]
                width = expected["image"].shape[1]
                flipped = expected["boxes"][:, [2, 1, 0, 3]] * [-1, 1, -1, 1] + [width, 0, width, 0]
                np.testing.assert_array_equal(np.asarray(target["boxes"]), flipped)
                np.testing.assert_array_equal(np.asarray(image),
                                              expected["image"][:, ::-1].transpose(2, 0, 1))
                seen += 1
        assert seen == 8
    # The sizes grouped are the annotations', which are the images'.
    heights, widths = plain.image_sizes
    assert [plain[i]["image"].shape[:2] for i in range(8)] == list(zip(heights, widths))
    assert (feedline.io.aspect_ratio_groups(plain, 1)
            == feedline.io.aspect_ratio_groups((heights, widths), 1))


def test_bad_files_are_errors_naming_them(tmp_path):
    ids = write_voc(str(tmp_path), count=3)
    base = os.path.join(str(tmp_path), "VOCdevkit", "VOC2012")
    with pytest.raises(ValueError, match=r"ImageSets/Main/val.txt cannot be read"):
        datasets.VOCDetection(str(tmp_path), image_set="val")
    with pytest.raises(ValueError, match="image_set"):
        datasets.VOCDetection(str(tmp_path), image_set="../train")
    with pytest.raises(TypeError, match="a list of class names, got a string"):
        datasets.VOCDetection(str(tmp_path), classes="dog")
    with pytest.raises(ValueError, match="names a class twice"):
        datasets.VOCDetection(str(tmp_path), classes=["dog", "cat", "dog"])

    xml = os.path.join(base, "Annotations", ids[1] + ".xml")
    with open(xml) as f:
        text = f.read()
    with open(xml, "w") as f:
        f.write(text.replace("</annotation>", "<object><name>unicorn</name><bndbox><xmin>1</xmin>"
                             "<ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object>"
                             "</annotation>"))
    with pytest.raises(ValueError, match=ids[1] + r".xml: object \d+: class 'unicorn' is "
                                          r"not one of the 20 classes given"):
        datasets.VOCDetection(str(tmp_path))
    unicorns = datasets.VOCDetection(str(tmp_path), classes=datasets.VOCDetection.CLASSES
                                     + ("unicorn",))
    assert unicorns[1]["labels"].tolist()[-1] == 20

    write_voc(str(tmp_path), count=3)  # the files as they were

    with open(os.path.join(base, "Annotations", ids[2] + ".xml"), "w") as f:
        f.write("<annotation><object>")
    with pytest.raises(ValueError, match=ids[2] + r".xml: not XML"):
        datasets.VOCDetection(str(tmp_path))

    write_voc(str(tmp_path), count=3)  # the files as they were
    os.remove(os.path.join(base, "JPEGImages", ids[0] + ".jpg"))
    data = datasets.VOCDetection(str(tmp_path))
    with pytest.raises(feedline.SampleError, match=ids[0] + ".jpg"):
        data[0]
    batches = list(feedline.DataLoader(data, batch_size=3, error_policy="skip"))
    assert batches[0]["image_id"].tolist() == [1, 2]


def test_it_pickles_with_its_options(tmp_path):
    import pickle
    write_voc(str(tmp_path), count=4)
    data = datasets.VOCDetection(str(tmp_path), transforms=[T.RandomHorizontalFlip(1.0)],
                                 keep_difficult=True,
                                 classes=datasets.VOCDetection.CLASSES + ("unicorn",))
    copied = pickle.loads(pickle.dumps(data))
    assert len(copied) == 4 and copied.classes == data.classes
    for i in range(4):
        for key, value in data[i].items():
            np.testing.assert_array_equal(copied[i][key], value)
