"""Packed shards: feedline.vision.datasets.pack_shards / ShardDataset, the
tar layout other tools read, checksums and damaged files."""

import fcntl
import io
import os
import re
import struct
import tarfile

import h5py  # python3-h5py, installed by scripts/install_deps.sh
import numpy as np
import pytest
from PIL import Image

import feedline
from feedline.vision import datasets, synth
from feedline.vision import transforms as T

from conftest import copied


def train_transform(size=32):
    return T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor()])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    assert synth.write_image_folder(root, 14, classes=3, seed=6) == []
    return str(root)


@pytest.fixture(scope="module")
def packed(folder, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("shards"))
    info = datasets.pack_shards(folder, out, shard_bytes=150 << 10)
    assert info["records"] == 14 and info["shards"] >= 3 and info["skipped"] == []
    return out


def test_shards_are_plain_tars_in_the_webdataset_layout(folder, packed):
    image_folder = datasets.ImageFolder(folder)
    originals = [open(path, "rb").read() for path, _ in image_folder.samples]
    members = {}
    for name in sorted(os.listdir(packed)):
        if name.endswith(".tar"):
            with tarfile.open(os.path.join(packed, name)) as tar:
                for member in tar.getmembers():
                    members[member.name] = tar.extractfile(member).read()
    keys = sorted({name.split(".")[0] for name in members})
    assert keys == [f"{i:09d}" for i in range(14)]
    for i, key in enumerate(keys):
        # Baseline JPEGs are rewritten losslessly with restart markers
        # (docs/storage.md): other bytes, the same pixels in any decoder.
        member = members[key + ".jpg"]
        if member != originals[i]:
            assert b"\xff\xdd" in member  # the restart interval's marker
            assert np.array_equal(np.asarray(Image.open(io.BytesIO(member)).convert("RGB")),
                                  np.asarray(Image.open(io.BytesIO(originals[i])).convert("RGB")))
        assert int(members[key + ".cls"]) == image_folder.targets[i]


def test_samples_equal_image_folders_through_the_loader(folder, packed):
    ours = datasets.ShardDataset(packed, transform=train_transform())
    theirs = datasets.ImageFolder(folder, transform=train_transform())
    assert len(ours) == len(theirs) and ours.classes == theirs.classes
    assert ours.targets == theirs.targets
    for workers in (0, 2):
        a = copied(feedline.DataLoader(ours, batch_size=4, shuffle=True, num_workers=workers,
                                       seed=9))
        b = copied(feedline.DataLoader(theirs, batch_size=4, shuffle=True, num_workers=workers,
                                       seed=9))
        assert len(a) == len(b) == 4
        for (ia, la), (ib, lb) in zip(a, b):
            assert ia.shape == (len(la), 3, 32, 32)
            np.testing.assert_array_equal(ia, ib)
            np.testing.assert_array_equal(la, lb)


def test_a_glob_or_one_shard_selects_records(packed):
    every = datasets.ShardDataset(os.path.join(packed, "shard-*.tar"))
    assert len(every) == 14 and len(every.shards) >= 3
    one = datasets.ShardDataset(every.shards[1])
    assert 0 < len(one) < 14
    image, label = one[0]
    assert image.dtype == np.uint8 and image.ndim == 3


def test_shard_order_sampler_keeps_records_of_a_shard_together(packed):
    data = datasets.ShardDataset(packed, transform=T.Compose([T.CenterCrop(16), T.ToTensor()]))
    sampler = datasets.ShardOrderSampler(data, window=2, seed=4)
    assert sampler.window == 2 and len(sampler) == 14
    starts = list(data._native.shard_starts) + [len(data)]
    shard_of = {i: s for s in range(len(starts) - 1) for i in range(starts[s], starts[s + 1])}
    epochs = [list(sampler) for _ in range(3)]
    for order in epochs:
        assert sorted(order) == list(range(14))
        # With a window of 2, the shards come out nearly one after another:
        # few switches between shards (a full shuffle of 14 records over 3+
        # shards switches about 10 times).
        switches = sum(shard_of[a] != shard_of[b] for a, b in zip(order, order[1:]))
        assert switches <= 2 * (len(starts) - 1)
    assert epochs[0] != epochs[1]
    again = datasets.ShardOrderSampler(data, window=2, seed=4)
    assert list(again) == epochs[0]
    loader = feedline.DataLoader(data, batch_size=5, sampler=sampler, num_workers=2)
    labels = np.concatenate([b[1] for b in copied(loader)])
    assert sorted(labels.tolist()) == sorted(data.targets)
    with pytest.raises(TypeError, match="ShardDataset"):
        datasets.ShardOrderSampler(list(range(5)))


def _damage(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x10]))


def test_a_damaged_record_is_a_failed_sample_naming_shard_key_and_offset(folder, tmp_path):
    out = str(tmp_path / "shards")
    datasets.pack_shards(folder, out, shard_bytes=1 << 30)
    index = open(os.path.join(out, "shard-000000.idx"), "rb").read()
    # Record 2: offset u64 at byte 56 + 2 * 40 of the index (a version 2
    # header is 56 bytes).
    assert struct.unpack_from("<I", index, 8)[0] == 2
    offset, size = struct.unpack_from("<QQ", index, 56 + 2 * 40)
    _damage(os.path.join(out, "shard-000000.tar"), offset + size // 2)
    data = datasets.ShardDataset(out, transform=T.Compose([T.CenterCrop(16), T.ToTensor()]))
    with pytest.raises(feedline.SampleError) as raised:
        data[2]
    message = str(raised.value)
    assert raised.value.reason == "checksum"
    assert "shard-000000.tar" in message and "key 000000002" in message
    assert f"offset {offset}" in message
    skipped = copied(feedline.DataLoader(data, batch_size=5, num_workers=2, error_policy="skip"))
    assert sum(len(b[1]) for b in skipped) == 13


def test_damaged_or_truncated_indexes_are_refused_naming_the_file(folder, tmp_path):
    out = str(tmp_path / "shards")
    datasets.pack_shards(folder, out, shard_bytes=1 << 30)
    idx = os.path.join(out, "shard-000000.idx")
    _damage(idx, 70)
    with pytest.raises(ValueError, match="shard-000000.idx: index checksum mismatch"):
        datasets.ShardDataset(out)
    with open(idx, "r+b") as f:
        f.truncate(20)
    with pytest.raises(ValueError, match="shard-000000.idx: truncated index"):
        datasets.ShardDataset(out)
    with pytest.raises(ValueError, match="no shard index"):
        datasets.ShardDataset(folder)


def test_pack_resumes_after_an_interruption(folder, tmp_path):
    out = str(tmp_path / "shards")
    first = datasets.pack_shards(folder, out, shard_bytes=150 << 10)
    last = first["shards"] - 1
    os.remove(os.path.join(out, f"shard-{last:06d}.idx"))
    again = datasets.pack_shards(folder, out, shard_bytes=150 << 10)
    assert again["reused_shards"] == last and again["records"] == 14
    with pytest.raises(ValueError, match="--restart"):
        datasets.pack_shards(folder, out, shard_bytes=300 << 10)
    assert datasets.pack_shards(folder, out, shard_bytes=300 << 10, restart=True)["records"] == 14


def _tar_members(out):
    members = {}
    for name in sorted(os.listdir(out)):
        if name.endswith(".tar"):
            with tarfile.open(os.path.join(out, name)) as tar:
                for member in tar.getmembers():
                    members[member.name] = tar.extractfile(member).read()
    return members


def _jpegs(members):
    return [data for name, data in sorted(members.items()) if name.endswith(".jpg")]


def _is_progressive(jpeg):
    return Image.open(io.BytesIO(jpeg)).info.get("progressive", 0) == 1


def test_pack_options_restart_intervals_progressive_and_threads(tmp_path):
    # Seed 5 writes 7 progressive JPEGs among 24 images.
    folder = str(tmp_path / "images")
    assert synth.write_image_folder(folder, 24, classes=4, seed=5) == []
    originals = [open(p, "rb").read() for p, _ in datasets.ImageFolder(folder).samples]
    progressive = sum(_is_progressive(b) for b in originals if b[:2] == b"\xff\xd8")
    assert progressive > 0

    default = datasets.pack_shards(folder, str(tmp_path / "default"))
    assert default["progressive_converted"] == progressive
    assert default["progressive_bytes_after"] > 0
    assert not any(_is_progressive(m) for m in _jpegs(_tar_members(str(tmp_path / "default"))))

    kept = datasets.pack_shards(folder, str(tmp_path / "kept"), keep_progressive=True)
    assert kept["progressive_converted"] == 0
    assert kept["rewritten_jpegs"] == default["rewritten_jpegs"] - progressive
    assert sum(_is_progressive(m) for m in _jpegs(_tar_members(str(tmp_path / "kept")))) == \
        progressive

    plain = datasets.pack_shards(folder, str(tmp_path / "plain"), jpeg_restart_rows=0)
    assert plain["rewritten_jpegs"] == 0
    members = _tar_members(str(tmp_path / "plain"))
    assert [members[f"{i:09d}.jpg"] for i in range(24)] == originals

    # A marker every 2 MCU rows: the DRI segment holds twice a row's MCUs,
    # where every ~2 MCUs holds a divisor of the row.
    rows = datasets.pack_shards(folder, str(tmp_path / "rows"), jpeg_restart_mcus=0,
                                jpeg_restart_rows=2)
    mcus = datasets.pack_shards(folder, str(tmp_path / "mcus"), jpeg_restart_mcus=2, threads=1)
    assert rows["rewritten_jpegs"] == mcus["rewritten_jpegs"] == default["rewritten_jpegs"]
    for key, member in _tar_members(str(tmp_path / "rows")).items():
        if key.endswith(".jpg") and b"\xff\xdd" in member:
            image = Image.open(io.BytesIO(member))
            at = member.index(b"\xff\xdd\x00\x04")
            interval = struct.unpack(">H", member[at + 4:at + 6])[0]
            mcu = 8 * max(image.layer[0][1], image.layer[0][2]) if image.layers > 1 else 8
            assert interval == 2 * -(-image.width // mcu)

    # Threads: the same bytes whatever the number.
    two = datasets.pack_shards(folder, str(tmp_path / "two"), jpeg_restart_mcus=2, threads=2)
    assert two["bytes"] == mcus["bytes"]
    assert _tar_members(str(tmp_path / "two")) == _tar_members(str(tmp_path / "mcus"))

    # Every pack gives the folder's pixels through the same transform.
    theirs = datasets.ImageFolder(folder, transform=train_transform())
    for name in ("default", "kept", "plain", "rows", "mcus"):
        ours = datasets.ShardDataset(str(tmp_path / name), transform=train_transform())
        a = copied(feedline.DataLoader(ours, batch_size=8, shuffle=True, seed=3))
        b = copied(feedline.DataLoader(theirs, batch_size=8, shuffle=True, seed=3))
        for (ia, la), (ib, lb) in zip(a, b):
            np.testing.assert_array_equal(ia, ib, err_msg=name)
            np.testing.assert_array_equal(la, lb)


@pytest.mark.parametrize("arguments, error, message", [
    ({"jpeg_restart_mcus": -1}, ValueError, "jpeg_restart_mcus must be between 0 and 1024, got -1"),
    ({"jpeg_restart_mcus": 1025}, ValueError, "jpeg_restart_mcus must be between 0 and 1024"),
    ({"jpeg_restart_mcus": 2.5}, TypeError, "jpeg_restart_mcus must be an integer, got 2.5"),
    ({"jpeg_restart_mcus": True}, TypeError, "jpeg_restart_mcus must be an integer"),
    ({"jpeg_restart_rows": 65}, ValueError, "jpeg_restart_rows must be between 0 and 64, got 65"),
    ({"jpeg_restart_rows": "1"}, TypeError, "jpeg_restart_rows must be an integer"),
    ({"threads": -1}, ValueError, "threads must be between 0 and 1024, got -1"),
    ({"threads": 2.0}, TypeError, "threads must be an integer"),
    ({"keep_progressive": "no"}, TypeError, "keep_progressive must be True or False"),
    ({"skip_broken": 1}, TypeError, "skip_broken must be True or False"),
    ({"restart": None}, TypeError, "restart must be True or False"),
    ({"shard_bytes": 100}, ValueError, "shard_bytes must be between 2048 and 1125899906842624, "
                                       "got 100"),
    ({"shard_bytes": 2**80}, ValueError, "shard_bytes must be between 2048 and"),
    ({"shard_bytes": "1KB"}, ValueError, "shard_bytes must be between 2048 and 1125899906842624, "
                                         "got '1KB' (1000 bytes)"),
    ({"shard_bytes": "1M B"}, ValueError, 'shard_bytes: "1M B" is not a size: more than a number '
                                          "and a unit; a size is a number of bytes"),
    ({"shard_bytes": "-2MB"}, ValueError, 'shard_bytes: "-2MB" is negative'),
    ({"shard_bytes": 1.5e6}, TypeError, 'shard_bytes must be an int (bytes) or a string such as '
                                        '"2GiB" or "1.5GB", got 1500000.0'),
    ({"max_file_bytes": 0}, ValueError, "max_file_bytes must be between 1"),
    ({"max_file_bytes": "0.5B"}, ValueError, "max_file_bytes must be between 1 and "
                                             "9223372036854775807, got '0.5B' (0 bytes)"),
    ({"max_file_bytes": "1Gb/s"}, ValueError, 'max_file_bytes: "1Gb/s" is not a size: unknown '
                                              'unit "gb/s"'),
])
def test_pack_refuses_bad_options_naming_them(folder, tmp_path, arguments, error, message):
    out = tmp_path / "shards"
    # Every message begins with the function's name, as the user called it.
    with pytest.raises(error, match="^pack_shards: " + re.escape(message)):
        datasets.pack_shards(folder, out, **arguments)
    assert not out.exists()  # refused before anything is written


def _largest_shard(out):
    return max(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out) if n.endswith(".tar"))


@pytest.mark.parametrize("spelling, expected", [
    # The one rule for sizes (tests/core/byte_size_test.cc), as `feedline pack
    # --shard-size` reads them: KB 1000-based, K, Ki and KiB 1024-based.
    ("200KB", 200_000), ("200KiB", 200 * 1024), ("200K", 200 * 1024), ("0.2 MB", 200_000),
    ("204800", 204800), (np.int64(200_000), 200_000),
])
def test_pack_reads_shard_bytes_by_the_size_rule(folder, tmp_path, spelling, expected):
    out = str(tmp_path / "shards")
    info = datasets.pack_shards(folder, out, shard_bytes=spelling)
    assert info["records"] == 14
    with open(os.path.join(out, "pack.txt")) as manifest:
        assert f"\nshard_bytes {expected}\n" in manifest.read()
    assert _largest_shard(out) <= expected


def test_pack_reads_max_file_bytes_by_the_size_rule(folder, tmp_path):
    # A limit of N KB and one of N KiB (N chosen between the images' sizes)
    # leave out different files: those over N * 1000 and N * 1024 bytes.
    sizes = sorted(os.path.getsize(p) for p, _ in datasets.ImageFolder(folder).samples)
    over = lambda limit: sum(size > limit for size in sizes)
    n = next(n for n in range(1, sizes[-1] // 1000)
             if over(n * 1000) != over(n * 1024) and over(n * 1000) < len(sizes))
    for spelling, limit in ((f"{n}KB", n * 1000), (f"{n}KiB", n * 1024), (f"{n} k", n * 1024)):
        info = datasets.pack_shards(folder, str(tmp_path / spelling), max_file_bytes=spelling,
                                    skip_broken=True)
        assert len(info["skipped"]) == over(limit), spelling
        assert info["records"] == len(sizes) - over(limit)
        assert all(f"over the limit of {limit} bytes" in r for _, r in info["skipped"])


def _files_under(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, names in os.walk(root) for f in names)


def test_pack_refuses_an_out_in_the_source_folder_naming_both(tmp_path):
    # Shards in the image folder (or a folder inside it) would mix with the
    # images and make the folder read as a pack: refused, nothing written.
    images = tmp_path / "images"
    assert synth.write_image_folder(images, 4, classes=2, seed=2) == []
    before = _files_under(images)
    os.symlink(images, tmp_path / "alias")
    for out, reason in [(images, "is the source folder"),
                        (str(images) + "/", "is the source folder"),
                        (images / "class_001", "is inside the source folder"),
                        (images / "new" / "shards", "is inside the source folder"),
                        (tmp_path / "alias", "is the source folder")]:
        with pytest.raises(ValueError, match=re.escape(f"OUT {out} {reason} {images}")):
            datasets.pack_shards(images, out)
    assert _files_under(images) == before
    # Beside it, or in a folder holding it, is fine.
    assert datasets.pack_shards(images, tmp_path / "images_shards")["records"] == 4
    assert datasets.pack_shards(images, tmp_path)["records"] == 4
    assert _files_under(images) == before
    assert len(datasets.ShardDataset(str(tmp_path))) == 4


def test_pack_refuses_an_out_beside_the_file_list_or_its_files(tmp_path):
    images = tmp_path / "images"
    assert synth.write_image_folder(images, 4, classes=2, seed=2) == []
    files = _files_under(images)
    (tmp_path / "train.txt").write_text("".join(f"images/{f} 0\n" for f in files))
    listed_folder = images / os.path.dirname(files[0])
    with pytest.raises(ValueError, match=re.escape(
            f"OUT {tmp_path} is the folder of the file list {tmp_path / 'train.txt'}")):
        datasets.pack_shards(tmp_path / "train.txt", tmp_path)
    with pytest.raises(ValueError, match="is the folder of files listed in"):
        datasets.pack_shards(tmp_path / "train.txt", listed_folder)
    assert not (tmp_path / "pack.txt").exists() and not (listed_folder / "pack.txt").exists()
    assert datasets.pack_shards(tmp_path / "train.txt", tmp_path / "shards")["records"] == 4


def test_a_second_pack_into_a_folder_fails_at_once_while_one_runs(folder, tmp_path):
    # A running pack holds OUT/.pack.lock (flock); here the test holds it.
    out = tmp_path / "shards"
    out.mkdir()
    with open(out / ".pack.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ValueError, match=re.escape(
                f"{out}: another pack is writing to this folder")):
            datasets.pack_shards(folder, out)
        assert sorted(os.listdir(out)) == [".pack.lock"]  # nothing else written
    # Released: the pack runs, resumes with the lock file there, and the
    # shards list and read as usual.
    first = datasets.pack_shards(folder, out, shard_bytes=150 << 10)
    os.remove(out / "shard-000001.idx")
    again = datasets.pack_shards(folder, out, shard_bytes=150 << 10)
    assert again["reused_shards"] == 1 and again["records"] == first["records"] == 14
    assert len(datasets.ShardDataset(str(out))) == 14


# ---------------------------------------------------------------------------
# HDF5 (files written by h5py)

def _write_h5(path, folder, chunked=True, gzip=True):
    """The images of `folder` as encoded bytes, plus arrays and strings."""
    image_folder = datasets.ImageFolder(folder)
    encoded = [np.frombuffer(open(p, "rb").read(), dtype=np.uint8)
               for p, _ in image_folder.samples]
    n = len(encoded)
    rng = np.random.default_rng(0)
    options = {}
    if chunked:
        options["chunks"] = True
    if gzip:
        options["compression"] = "gzip"
    with h5py.File(path, "w") as f:
        images = f.create_dataset("jpeg", (n,), dtype=h5py.vlen_dtype(np.uint8),
                                  **({"chunks": (4,)} if chunked else {}),
                                  **({"compression": "gzip"} if gzip else {}))
        for i, e in enumerate(encoded):
            images[i] = e
        f.create_dataset("group/pixels", data=rng.integers(0, 256, (n, 8, 6, 3), dtype=np.uint8),
                         **options)
        f.create_dataset("labels", data=np.array(image_folder.targets, dtype=np.int64), **options)
        f.create_dataset("features", data=rng.standard_normal((n, 5)), **options)
        f.create_dataset("small", data=np.arange(n, dtype=np.int16), **options)
        f.create_dataset("names", data=[f"image {i}" for i in range(n)],
                         dtype=h5py.string_dtype())
        f.create_dataset("codes", data=np.array([b"c%d" % i for i in range(n)], dtype="S6"))
    return image_folder


@pytest.mark.parametrize("chunked,gzip", [(True, True), (True, False), (False, False)])
def test_hdf5_rows_equal_h5py_and_images_equal_image_folder(folder, tmp_path, chunked, gzip):
    path = str(tmp_path / "data.h5")
    image_folder = _write_h5(path, folder, chunked, gzip)
    data = feedline.io.HDF5Dataset(
        path, ["group/pixels", "labels", "features", "small", "names", "codes", "jpeg"])
    assert data.field_kinds == {"pixels": "array", "labels": "array", "features": "array",
                                "small": "array", "names": "string", "codes": "string",
                                "jpeg": "image"}
    with h5py.File(path, "r") as f:
        assert len(data) == len(f["labels"])
        for i in (0, 5, len(data) - 1):
            pixels, label, features, small, name, code, image = data[i]
            np.testing.assert_array_equal(pixels, f["group/pixels"][i])
            assert label == f["labels"][i] and label.dtype == np.int64
            np.testing.assert_array_equal(features, f["features"][i].astype(np.float32))
            assert small == f["small"][i] and small.dtype == np.int32
            assert name == f"image {i}" and code == f"c{i}"
            expected = image_folder[i][0]
            np.testing.assert_array_equal(image, expected)


def test_hdf5_through_the_loader_matches_image_folder(folder, tmp_path):
    path = str(tmp_path / "data.h5")
    _write_h5(path, folder)
    ours = feedline.io.HDF5Dataset(path, {"image": "jpeg", "label": "labels"},
                                   transform=train_transform())
    theirs = datasets.ImageFolder(folder, transform=train_transform())
    a = copied(feedline.DataLoader(ours, batch_size=4, shuffle=True, num_workers=2, seed=5))
    b = copied(feedline.DataLoader(theirs, batch_size=4, shuffle=True, num_workers=2, seed=5))
    assert len(a) == len(b)
    for batch, (images, labels) in zip(a, b):
        np.testing.assert_array_equal(batch["image"], images)
        np.testing.assert_array_equal(batch["label"], labels)


def test_hdf5_under_torch_dataloader_workers_reopens_after_fork(tmp_path):
    import torch
    path = str(tmp_path / "rows.h5")
    rows = np.arange(40 * 6, dtype=np.float32).reshape(40, 6)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=rows, chunks=(8, 6), compression="gzip")
    data = feedline.io.HDF5Dataset(path, ["x"])
    assert data[3][0][0] == 18  # opened here, in the parent, before the fork
    loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=2, timeout=60,
                                         multiprocessing_context="fork")
    got = torch.cat([batch[0] for batch in loader]).numpy()
    np.testing.assert_array_equal(got, rows)


def _chunk_location(path, dataset, chunk):
    with h5py.File(path, "r") as f:
        info = f[dataset].id.get_chunk_info(chunk)
        return info.byte_offset, info.size


def test_a_damaged_hdf5_chunk_is_a_sample_error_naming_file_dataset_and_row(tmp_path):
    path = str(tmp_path / "damaged.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(1).standard_normal((32, 64)),
                         chunks=(8, 64), compression="gzip")
    offset, size = _chunk_location(path, "x", 1)  # rows 8-15
    with open(path, "r+b") as f:
        f.seek(offset + size // 2)
        f.write(b"\xff" * 16)
    data = feedline.io.HDF5Dataset(path, ["x"])
    data[7]
    with pytest.raises(feedline.SampleError) as raised:
        data[9]
    message = str(raised.value)
    assert path in message and "'x'" in message and "row 9" in message
    data[16]
    skipped = copied(feedline.DataLoader(data, batch_size=8, error_policy="skip"))
    assert sum(len(b[0]) for b in skipped) == 24


def test_truncated_or_missing_hdf5_files_and_datasets_raise_naming_them(tmp_path):
    path = str(tmp_path / "cut.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.zeros((1000, 100), dtype=np.float32))
        f.create_dataset("y", data=np.zeros(999, dtype=np.int64))
    with pytest.raises(ValueError, match="cut.h5: cannot open dataset 'missing'"):
        feedline.io.HDF5Dataset(path, ["x", "missing"])
    with pytest.raises(ValueError, match="'y': 999 rows, but 'x' has 1000"):
        feedline.io.HDF5Dataset(path, ["x", "y"])
    with pytest.raises(ValueError, match="marked as an image"):
        feedline.io.HDF5Dataset(path, ["x"], images=["x"])
    os.truncate(path, os.path.getsize(path) // 2)
    with pytest.raises(ValueError, match="cut.h5: cannot open HDF5 file"):
        feedline.io.HDF5Dataset(path, ["x"])
    # A file the system refuses is an OSError of its errno (issue: OS errors
    # raise OSError subclasses naming the path), not a ValueError.
    with pytest.raises(FileNotFoundError, match="nothing.h5: cannot open HDF5 file") as raised:
        feedline.io.HDF5Dataset(str(tmp_path / "nothing.h5"), ["x"])
    assert raised.value.filename == str(tmp_path / "nothing.h5")


def test_hdf5_thread_safety_is_reported():
    assert feedline.hdf5.library_threadsafe() in (True, False)
