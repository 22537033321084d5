"""Packed shards: feedline.vision.datasets.pack_shards / ShardDataset, the
tar layout other tools read, checksums and damaged files."""

import os
import struct
import tarfile

import numpy as np
import pytest

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
        assert members[key + ".jpg"] == originals[i]
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
    # Record 2: offset u64 at byte 48 + 2 * 40 of the index.
    offset, size = struct.unpack_from("<QQ", index, 48 + 2 * 40)
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
