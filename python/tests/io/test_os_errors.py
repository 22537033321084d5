"""What the operating system refuses while a dataset or loader is set up
raises the OSError subclass of its errno, with the path as `filename` and
in the message: `except FileNotFoundError` works as with open()."""

import numpy as np
import pytest

import feedline
from feedline.vision import datasets, encode_png


def test_a_missing_image_folder_is_file_not_found(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="nope' does not exist") as raised:
        datasets.ImageFolder(missing)
    assert raised.value.filename == missing
    assert raised.value.errno == 2


def test_a_root_under_a_regular_file_is_not_a_directory(tmp_path):
    (tmp_path / "file").write_bytes(b"x")
    under = str(tmp_path / "file" / "sub")
    with pytest.raises(NotADirectoryError) as raised:
        datasets.ImageFolder(under)
    assert raised.value.filename == under


def test_missing_shards_are_file_not_found(tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="nowhere: does not exist") as raised:
        datasets.ShardDataset(missing)
    assert raised.value.filename == missing
    with pytest.raises(FileNotFoundError, match="shard index") as raised:
        datasets.ShardDataset(str(tmp_path / "gone.tar"))
    assert raised.value.filename == str(tmp_path / "gone.idx")


def test_a_missing_hdf5_file_is_file_not_found(tmp_path):
    missing = str(tmp_path / "nothing.h5")
    with pytest.raises(FileNotFoundError) as raised:
        feedline.io.HDF5Dataset(missing, ["x"])
    assert raised.value.filename == missing


def test_the_same_calls_with_the_files_present_load(tmp_path):
    # The errors above come from the missing paths, not from the calls.
    (tmp_path / "root" / "a").mkdir(parents=True)
    image = np.full((8, 8, 3), 7, dtype=np.uint8)
    (tmp_path / "root" / "a" / "x.png").write_bytes(encode_png(image))
    folder = datasets.ImageFolder(str(tmp_path / "root"))
    assert len(folder) == 1
    assert np.array_equal(np.asarray(folder[0][0]), image)
