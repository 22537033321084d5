"""Native datasets and transforms pickle: pickle.dumps / copy.deepcopy /
torch.save rebuild them from what they were made of (the listing, the
pipeline), so a cached dataset (torchvision's --cache-dataset) loads the same
samples without scanning the folder again."""

import copy
import io as _bytes_io
import os
import pickle
import shutil

import numpy as np
import pytest
import torch

import feedline
from feedline import io
from feedline.vision import datasets, synth
from feedline.vision import transforms as T

from conftest import image_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return image_folder(tmp_path_factory, "pickle_folder", 9, classes=3, seed=11)


TRAIN = T.Compose([
    T.RandomResizedCrop(24, scale=(0.3, 1.0)),
    T.RandomHorizontalFlip(),
    T.TrivialAugmentWide(),
    T.ToTensor(),
    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    T.RandomErasing(p=0.5, value="random"),
])


def samples(dataset, epoch=3):
    """Every sample of `dataset` through a loader (random transforms seeded)."""
    loader = feedline.DataLoader(dataset, batch_size=4, seed=5)
    loader.set_epoch(epoch)
    out = [(np.array(images), np.array(labels)) for images, labels, *_ in loader]
    loader.close()
    return out


def assert_same_samples(a, b):
    assert len(a) == len(b)
    for (ia, la), (ib, lb) in zip(a, b):
        np.testing.assert_array_equal(ia, ib)
        np.testing.assert_array_equal(la, lb)


def roundtrips(obj):
    buffer = _bytes_io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return [
        pickle.loads(pickle.dumps(obj)),
        copy.deepcopy(obj),
        torch.load(buffer, weights_only=False),
    ]


def test_image_folder_pickles_with_its_listing_and_transforms(folder):
    dataset = datasets.ImageFolder(folder, transform=TRAIN)
    expected = samples(dataset)
    for copied in roundtrips(dataset):
        assert type(copied) is datasets.ImageFolder
        assert copied.classes == dataset.classes and copied.targets == dataset.targets
        assert copied.samples == dataset.samples
        assert_same_samples(samples(copied), expected)


def test_a_pickled_image_folder_does_not_scan_its_folder_again(folder, tmp_path):
    root = str(tmp_path / "moved")
    shutil.copytree(folder, root)
    dataset = datasets.ImageFolder(root, transform=T.Compose([T.Resize(16), T.CenterCrop(16)]))
    blob = pickle.dumps(dataset)
    # A file added after pickling is not in the unpickled dataset: it is the
    # listing that was saved, as torchvision's cached dataset is.
    first_class = os.path.join(root, dataset.classes[0])
    shutil.copy(os.path.join(first_class, os.listdir(first_class)[0]),
                os.path.join(first_class, "zzz_added_later.png"))
    copied = pickle.loads(blob)
    assert len(copied) == len(dataset)
    assert len(datasets.ImageFolder(root)) == len(dataset) + 1


def test_file_list_subset_and_concat_pickle(folder, tmp_path):
    plain = datasets.ImageFolder(folder, transform=T.Compose([T.Resize((20, 20)), T.ToTensor()]))
    list_file = tmp_path / "list.txt"
    list_file.write_text("".join(f"{os.path.relpath(path, folder)} {label}\n"
                                 for path, label in plain.samples))
    file_list = datasets.FileList(str(list_file), folder, transform=T.Compose(
        [T.Resize((20, 20)), T.ToTensor()]))
    subset = io.Subset(plain, [8, 1, 4])
    concat = io.ConcatDataset([plain, file_list])
    for dataset in (file_list, subset, concat):
        expected = samples(dataset)
        for copied in roundtrips(dataset):
            assert type(copied) is type(dataset)
            assert getattr(copied, "_native", None) is not None  # still loaded natively
            assert_same_samples(samples(copied), expected)


def test_transforms_and_pipelines_pickle():
    for transform in (TRAIN, T.AutoAugment(), T.RandAugment(num_ops=3, magnitude=5),
                      T.ColorJitter(0.4, 0.4, 0.4, 0.1)):
        image = synth.synthesize_image(40, 30, seed=2)
        for copied in roundtrips(transform):
            np.testing.assert_array_equal(copied(image, seed=1, index=7),
                                          transform(image, seed=1, index=7))
    pipeline = T.build_pipeline(TRAIN, 10**6)
    copied = pickle.loads(pickle.dumps(pipeline))
    assert repr(copied) == repr(pipeline) and copied.max_pixels == 10**6


def test_shard_dataset_pickles(folder, tmp_path):
    out = str(tmp_path / "shards")
    datasets.pack_shards(folder, out, shard_bytes=4 << 10)
    shards = datasets.ShardDataset(out, transform=T.Compose([T.Resize((16, 16)), T.ToTensor()]))
    expected = samples(shards)
    for copied in roundtrips(shards):
        assert copied.shards == shards.shards and copied.classes == shards.classes
        assert_same_samples(samples(copied), expected)


def test_hdf5_dataset_pickles(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "rows.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(24, dtype=np.float32).reshape(6, 4))
        f.create_dataset("y", data=np.arange(6, dtype=np.int64))
    dataset = feedline.io.HDF5Dataset(path, {"x": "x", "y": "y"})
    for copied in roundtrips(dataset):
        assert type(copied) is type(dataset)
        for i in range(len(dataset)):
            np.testing.assert_array_equal(copied[i]["x"], dataset[i]["x"])
            assert int(copied[i]["y"]) == i
