"""feedline.vision: native datasets, transforms in C++, codecs, and how their
output compares with torchvision's."""

import os

import numpy as np
import pytest

import feedline
from feedline import io
from feedline.vision import datasets, synth
from feedline.vision import transforms as T

from conftest import copied, image_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return image_folder(tmp_path_factory, "images", 12, classes=3, seed=4)


@pytest.fixture(scope="module")
def broken_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("broken")
    broken = synth.write_image_folder(root, 6, classes=2, seed=5, broken=1)
    assert len(broken) == 1
    return str(root), broken[0]


def train_transform(size=32):
    return T.Compose(
        [
            T.RandomResizedCrop(size),
            T.RandomHorizontalFlip(),
            T.ToTensor(),
            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ]
    )


def test_image_folder_lists_like_torchvision(folder):
    data = datasets.ImageFolder(folder)
    assert len(data) == 12
    assert data.classes == ["class_000", "class_001", "class_002"]
    assert data.class_to_idx == {"class_000": 0, "class_001": 1, "class_002": 2}
    assert data.targets == [0] * 4 + [1] * 4 + [2] * 4
    path, label = data.samples[5]
    assert os.path.isfile(path) and label == 1
    image, label = data[5]
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert min(image.shape[:2]) >= 300
    assert label == 1
    np.testing.assert_array_equal(data[-7][0], image)
    with pytest.raises(IndexError):
        data[12]
    assert sum(1 for _ in data) == 12, "iterable like a sequence, ending on IndexError"


def test_to_tensor_gives_float_chw_in_unit_range(folder):
    data = datasets.ImageFolder(folder, transform=T.Compose([T.CenterCrop(40), T.ToTensor()]))
    image, _ = data[0]
    assert image.shape == (3, 40, 40) and image.dtype == np.float32
    assert 0.0 <= image.min() and image.max() <= 1.0 and image.max() > 0.1
    raw, _ = datasets.ImageFolder(folder, transform=T.CenterCrop(40))[0]
    np.testing.assert_allclose(image, raw.transpose(2, 0, 1) / 255.0, atol=1e-6)
    normalized, _ = datasets.ImageFolder(
        folder, transform=T.Compose([T.CenterCrop(40), T.ToTensor(), T.Normalize([0.5], [0.25])])
    )[0]
    np.testing.assert_allclose(normalized, (image - 0.5) / 0.25, atol=1e-5)


def test_loader_yields_image_label_tuples(folder):
    data = datasets.ImageFolder(folder, transform=train_transform())
    loader = feedline.DataLoader(data, batch_size=5, shuffle=True, num_workers=2, seed=1)
    batches = copied(loader)
    assert [len(b[1]) for b in batches] == [5, 5, 2]
    images, labels = batches[0]
    assert images.shape == (5, 3, 32, 32) and images.dtype == np.float32
    assert labels.dtype == np.int64
    assert sorted(np.concatenate([b[1] for b in batches]).tolist()) == data.targets


def test_random_transforms_depend_on_seed_and_epoch_not_workers(folder):
    data = datasets.ImageFolder(folder, transform=train_transform())

    def epochs(workers, seed):
        loader = feedline.DataLoader(data, batch_size=4, num_workers=workers, seed=seed)
        return [np.concatenate([b[0] for b in copied(loader)]) for _ in range(2)]

    zero = epochs(0, seed=3)
    np.testing.assert_array_equal(epochs(2, seed=3)[0], zero[0])
    assert not np.array_equal(zero[0], zero[1]), "a new epoch draws new crops"
    assert not np.array_equal(epochs(0, seed=4)[0], zero[0])


def test_transform_called_on_one_image_matches_the_dataset(folder):
    transform = train_transform()
    data = datasets.ImageFolder(folder, transform=transform)
    path, _ = data.samples[7]
    with open(path, "rb") as f:
        encoded = f.read()
    np.testing.assert_array_equal(transform(encoded, index=7), data[7][0])


def test_matches_torchvision_on_deterministic_transforms(folder):
    import torchvision  # Debian python3-torchvision, installed by scripts/install_deps.sh
    from torchvision import transforms as tvt

    ours = datasets.ImageFolder(
        folder, transform=T.Compose([T.Resize(48), T.CenterCrop(40), T.ToTensor()])
    )
    theirs = torchvision.datasets.ImageFolder(
        folder, transform=tvt.Compose([tvt.Resize(48), tvt.CenterCrop(40), tvt.ToTensor()])
    )
    assert [label for _, label in theirs.samples] == ours.targets
    for i in (0, 6, 11):
        a, b = ours[i][0], theirs[i][0].numpy()
        assert a.shape == b.shape
        # Same geometry; the filters differ: an 8x shrink here is DCT-domain
        # scaling plus bilinear against PIL's antialiased bilinear (measured
        # mean difference about 4/255).
        assert np.abs(a - b).mean() < 0.02
    # Without resampling only the JPEG decoders could differ.
    crop_ours = datasets.ImageFolder(folder, transform=T.Compose([T.CenterCrop(64), T.ToTensor()]))
    crop_theirs = torchvision.datasets.ImageFolder(
        folder, transform=tvt.Compose([tvt.CenterCrop(64), tvt.ToTensor()])
    )
    np.testing.assert_allclose(crop_ours[3][0], crop_theirs[3][0].numpy(), atol=1.5 / 255)


def test_broken_file_raises_sample_error_naming_it(broken_folder):
    root, broken = broken_folder
    data = datasets.ImageFolder(root, transform=T.Compose([T.CenterCrop(16), T.ToTensor()]))
    with pytest.raises(feedline.SampleError) as raised:
        copied(feedline.DataLoader(data, batch_size=7, num_workers=2))
    assert raised.value.source == broken
    assert broken in str(raised.value)
    assert data.samples[raised.value.index][0] == broken
    skipped = copied(feedline.DataLoader(data, batch_size=7, error_policy="skip"))
    assert sum(len(b[1]) for b in skipped) == len(data) - 1
    replaced = copied(feedline.DataLoader(data, batch_size=7, error_policy="replace"))
    images, labels, mask = replaced[0]
    assert images.shape == (7, 3, 16, 16) and mask.sum() == 1


def test_bad_arguments_raise_value_error(folder, tmp_path):
    # A folder the system does not find is an OSError of its errno, as
    # torchvision's ImageFolder raises it (test_os_errors.py).
    with pytest.raises(FileNotFoundError, match="missing"):
        datasets.ImageFolder(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="size"):
        T.RandomResizedCrop(0)._native()
    with pytest.raises(TypeError, match="ToTensor"):
        datasets.ImageFolder(folder, transform=T.Normalize([0.5], [0.5]))
    # A lambda alone runs in Python (test_python_transforms.py); mixed with
    # native transforms it is refused.
    with pytest.raises(TypeError, match="feedline.vision.transforms"):
        datasets.ImageFolder(folder, transform=T.Compose([T.Resize(8), lambda image: image]))
    with pytest.raises(ValueError, match="loader"):
        datasets.ImageFolder(folder, loader=lambda path: path)
    with pytest.raises(ValueError, match="interpolation"):
        datasets.ImageFolder(folder, transform=T.Resize(10, interpolation="bicubic"))


def test_dataset_folder_filters_files(folder, tmp_path):
    png_root = tmp_path / "mixed"
    for name, label in (("a", 0), ("b", 1)):
        (png_root / name).mkdir(parents=True)
        image = synth.synthesize_image(20 + label, 10, seed=label)
        (png_root / name / "x.png").write_bytes(feedline.vision.encode_png(image))
        (png_root / name / "y.txt").write_text("not an image")
    data = datasets.DatasetFolder(str(png_root), extensions=(".PNG",))
    assert len(data) == 2 and data.classes == ["a", "b"]
    np.testing.assert_array_equal(data[1][0], synth.synthesize_image(21, 10, seed=1))
    only_a = datasets.ImageFolder(
        str(png_root), is_valid_file=lambda p: "/a/" in p and p.endswith(".png")
    )
    assert only_a.targets == [0]


def test_subset_and_concat_of_native_datasets_stay_native(folder):
    data = datasets.ImageFolder(folder, transform=T.Compose([T.CenterCrop(8), T.ToTensor()]))
    subset = io.Subset(data, [11, 0])
    assert hasattr(subset, "_native")
    (images, labels), = copied(feedline.DataLoader(subset, batch_size=2))
    assert labels.tolist() == [2, 0]
    np.testing.assert_array_equal(images[0], data[11][0])
    both = io.ConcatDataset([data, subset])
    assert hasattr(both, "_native") and len(both) == 14
    assert copied(feedline.DataLoader(both, batch_size=14))[0][1].tolist()[-2:] == [2, 0]
    with pytest.raises(IndexError):
        io.Subset(data, [12])


def test_codecs_round_trip():
    image = synth.synthesize_image(33, 17, seed=2)
    assert image.shape == (17, 33, 3) and image.dtype == np.uint8
    png = feedline.vision.encode_png(image)
    np.testing.assert_array_equal(feedline.vision.decode_image(png), image)
    jpeg = feedline.vision.decode_image(feedline.vision.encode_jpeg(image, quality=95))
    assert jpeg.shape == image.shape
    assert np.abs(jpeg.astype(int) - image).mean() < 10
    with pytest.raises(feedline.SampleError, match="name.jpg"):
        feedline.vision.decode_image(b"not an image", "name.jpg")


# ---- Bad and unusual files (docs/guarantees.md) -----------------------------

def _run_bounded(code, timeout=60):
    """Runs `code` in a fresh interpreter that must finish within `timeout`
    seconds (a hang fails the test instead of stopping the suite); returns
    its stdout."""
    import subprocess
    import sys

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_fifo_and_device_named_like_images_fail_without_hanging(tmp_path):
    root = tmp_path / "imgs"
    assert synth.write_image_folder(root, 6, classes=2, seed=6) == []
    fifo, device = root / "class_000" / "x.jpg", root / "class_000" / "y.jpg"
    os.mkfifo(fifo)
    os.symlink("/dev/zero", device)
    # In another interpreter: a read that blocks would hang this one for good.
    out = _run_bounded(f"""
import feedline
from feedline.vision import datasets, transforms as T
data = datasets.ImageFolder({str(root)!r}, transform=T.Compose([T.CenterCrop(16), T.ToTensor()]))
for i, (path, _) in enumerate(data.samples):
    if path.endswith(("x.jpg", "y.jpg")):
        try:
            data[i]
        except feedline.SampleError as e:
            print("error", e.source, e.reason, e.message, sep="|")
for workers in (0, 2):
    loader = feedline.DataLoader(data, batch_size=3, num_workers=workers, error_policy="skip")
    print("images", workers, sum(len(labels) for _, labels in loader))
    loader.close()
""")
    lines = out.splitlines()
    assert f"error|{fifo}|io|is a FIFO, not a regular file" in lines
    assert f"error|{device}|io|is a character device, not a regular file" in lines
    assert "images 0 6" in lines and "images 2 6" in lines


def test_files_over_max_file_bytes_are_failed_samples(folder):
    size = min(os.path.getsize(p) for p, _ in datasets.ImageFolder(folder).samples)
    data = datasets.ImageFolder(folder, max_file_bytes=size - 1)
    assert data.max_file_bytes == size - 1
    assert datasets.ImageFolder(folder).max_file_bytes == datasets.DEFAULT_MAX_FILE_BYTES == 2**30
    with pytest.raises(feedline.SampleError) as raised:
        data[0]
    assert raised.value.reason == "too_large"
    assert raised.value.source == data.samples[0][0]
    assert "over the limit of %d bytes" % (size - 1) in str(raised.value)


@pytest.mark.parametrize("spelling, expected", [
    # The one rule for sizes (tests/core/byte_size_test.cc), as memory_budget
    # and `feedline bench --max-file-bytes` read them.
    ("1.5MB", 1_500_000), ("1.5M", 3 * 2**19), ("64KiB", 65536), ("64KB", 64_000),
    ("4096", 4096), (np.int64(4096), 4096),
])
def test_max_file_bytes_takes_the_size_spellings(folder, spelling, expected):
    assert datasets.ImageFolder(folder, max_file_bytes=spelling).max_file_bytes == expected


def test_a_large_file_that_is_no_image_fails_from_its_first_bytes(tmp_path):
    root = tmp_path / "imgs"
    assert synth.write_image_folder(root, 2, classes=1, seed=7) == []
    zeros = root / "class_000" / "zeros.jpg"
    with open(zeros, "wb") as f:
        f.truncate(500_000_000)  # sparse: no disk used
    data = datasets.ImageFolder(str(root))
    index = [p for p, _ in data.samples].index(str(zeros))
    with pytest.raises(feedline.SampleError) as raised:
        data[index]
    assert raised.value.reason == "format"
    assert "first bytes: 00 00 00 00 00 00 00 00" in str(raised.value)


def test_max_pixels_is_settable_like_pil(folder):
    data = datasets.ImageFolder(folder, max_pixels=1000)
    assert data.max_pixels == 1000
    assert datasets.ImageFolder(folder).max_pixels == datasets.DEFAULT_MAX_PIXELS == 89_478_485
    with pytest.raises(feedline.SampleError) as raised:
        data[0]
    assert raised.value.reason == "too_large"
    assert "over the limit of 1000" in str(raised.value)
    image = synth.synthesize_image(40, 30, seed=1)
    png = feedline.vision.encode_png(image)
    with pytest.raises(feedline.SampleError, match="1200 pixels, over the limit of 1199"):
        feedline.vision.decode_image(png, "p.png", max_pixels=1199)
    np.testing.assert_array_equal(feedline.vision.decode_image(png, max_pixels=1200), image)
    for bad in (0, -1, 2**63, 1.5, "many", True):
        with pytest.raises((ValueError, TypeError), match="max_pixels"):
            datasets.ImageFolder(folder, max_pixels=bad)
        with pytest.raises((ValueError, TypeError), match="max_file_bytes"):
            datasets.ImageFolder(folder, max_file_bytes=bad)
    with pytest.raises(ValueError, match='max_file_bytes: "1 parsec" is not a size: unknown unit'):
        datasets.ImageFolder(folder, max_file_bytes="1 parsec")


def test_an_absurd_crop_is_refused_when_the_dataset_is_built(folder):
    for transform in (T.CenterCrop(100000), T.RandomResizedCrop(100000)):
        with pytest.raises(ValueError, match="over max_pixels 89478485"):
            datasets.ImageFolder(folder, transform=transform)
    # Up to the limit, or with the limit raised on purpose, it is built
    # (not loaded here: 300 MB per image).
    assert datasets.ImageFolder(folder, transform=T.CenterCrop(9000)).max_pixels == 89_478_485
    assert datasets.ImageFolder(folder, transform=T.CenterCrop(10000), max_pixels=10**8)


def test_an_image_given_as_file_list_is_refused(folder):
    path = datasets.ImageFolder(folder).samples[0][0]
    with pytest.raises(ValueError, match="is an image \\(jpeg\\), not a file list"):
        datasets.FileList(path, folder)


def test_animated_webp_decodes_its_first_frame_like_pil(tmp_path):
    from PIL import Image

    frames = [synth.synthesize_image(40, 28, seed=s) for s in (1, 2, 3)]
    path = tmp_path / "anim.webp"
    Image.fromarray(frames[0]).save(path, save_all=True, lossless=True, duration=50,
                                    append_images=[Image.fromarray(f) for f in frames[1:]])
    with Image.open(path) as opened:
        assert opened.is_animated and opened.n_frames == 3
        theirs = np.asarray(opened.convert("RGB"))
    ours = feedline.vision.decode_image(path.read_bytes(), str(path))
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours, frames[0])
