"""num_workers="auto" and prefetch_factor="auto": the loader sets them while
it runs (docs/tuning.md). The batches are those of fixed settings, and
stats()["tuner"] says what it chose."""

import time

import numpy as np
import pytest

import feedline
from feedline.vision import datasets, synth
from feedline.vision import transforms as T


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("tuning_images")
    assert synth.write_image_folder(root, 96, classes=3, seed=9) == []
    return str(root)


def train_dataset(folder):
    return datasets.ImageFolder(
        folder,
        transform=T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor()]),
    )


def epochs(loader, count, step_s=0.0):
    out = []
    for _ in range(count):
        for images, labels in loader:
            out.append((np.array(images), np.array(labels)))
            if step_s:
                time.sleep(step_s)
    return out


def test_auto_gives_the_batches_of_a_fixed_setting(folder):
    data = train_dataset(folder)
    fixed = feedline.DataLoader(data, batch_size=8, shuffle=True, seed=5, num_workers=2,
                                persistent_workers=True)
    auto = feedline.DataLoader(data, batch_size=8, shuffle=True, seed=5, num_workers="auto",
                               prefetch_factor="auto", persistent_workers=True)
    expected = epochs(fixed, 3)
    got = epochs(auto, 3, step_s=0.01)
    assert len(got) == len(expected)
    for (gi, gl), (ei, el) in zip(got, expected):
        np.testing.assert_array_equal(gi, ei)
        np.testing.assert_array_equal(gl, el)
    tuner = auto.stats()["tuner"]
    assert tuner["enabled"]
    assert 1 <= tuner["workers"] <= tuner["max_workers"]
    assert tuner["slots"] >= 2
    assert tuner["decisions"] == len(tuner["log"])
    for decision in tuner["log"]:
        assert decision["reason"] and decision["at_s"] >= 0
    assert not fixed.stats()["tuner"]["enabled"]


@pytest.mark.parametrize(
    "kwargs, error_type, message",
    [
        (dict(num_workers="many"), TypeError, 'num_workers must be an int or "auto"'),
        (dict(num_workers=-1), ValueError, 'num_workers must be >= 0, got -1 (or "auto")'),
        (dict(num_workers=2, prefetch_factor="lots"), TypeError,
         'prefetch_factor must be an int or "auto"'),
        (dict(num_workers=2, prefetch_factor=0), ValueError, "prefetch_factor must be >= 1, got 0"),
        (dict(num_workers="auto", memory_budget="lots"), ValueError,
         'DataLoader: memory_budget: "lots" is not a size: it does not begin with a number; '
         "a size is a number of bytes with an optional unit: K, M, G, T, KiB, MiB, GiB, TiB are "
         "1024-based; KB, MB, GB, TB are 1000-based"),
        (dict(num_workers="auto", memory_budget="2 parsecs"), ValueError,
         'memory_budget: "2 parsecs" is not a size: unknown unit "parsecs"'),
        (dict(num_workers="auto", memory_budget="-1GB"), ValueError,
         'memory_budget: "-1GB" is negative'),
        (dict(num_workers="auto", memory_budget=-5), ValueError,
         "memory_budget must be from 1 byte to 8 EiB, got -5"),
        (dict(num_workers="auto", memory_budget=0), ValueError,
         "memory_budget must be from 1 byte to 8 EiB, got 0"),
        (dict(num_workers="auto", memory_budget="10000000TB"), ValueError,
         'memory_budget: "10000000TB" is too large: more than 8 EiB'),
        (dict(num_workers="auto", memory_budget="0.1B"), ValueError,
         "memory_budget must be from 1 byte to 8 EiB, got '0.1B'"),
        (dict(num_workers="auto", memory_budget=1.5e9), TypeError,
         "memory_budget must be an int (bytes)"),
        (dict(num_workers=2, memory_budget="2GiB"), ValueError,
         'memory_budget bounds the batch slots the tuner sets; it needs num_workers="auto"'),
    ],
)
def test_bad_values_name_the_argument(folder, kwargs, error_type, message):
    with pytest.raises(error_type) as error:
        feedline.DataLoader(train_dataset(folder), batch_size=4, **kwargs)
    assert message in str(error.value)


def test_prefetch_auto_without_workers_warns_that_nothing_is_tuned(folder):
    with pytest.warns(UserWarning, match='prefetch_factor="auto" has no effect with num_workers=0'):
        loader = feedline.DataLoader(train_dataset(folder), batch_size=8, num_workers=0,
                                     prefetch_factor="auto")
    assert not loader.stats()["tuner"]["enabled"]
    loader.close()


LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")


def auto_max_workers(folder):
    loader = feedline.DataLoader(train_dataset(folder), batch_size=8, num_workers="auto")
    next(iter(loader))
    max_workers = loader.stats()["tuner"]["max_workers"]
    loader.close()
    return max_workers


@pytest.mark.parametrize("launcher", [
    {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"},
    {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4",
     "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
])
def test_auto_workers_share_the_cores_among_the_ranks_of_a_host(folder, monkeypatch, launcher):
    # Two ranks on this host, started by a launcher: "auto" takes half the
    # cores for each instead of all of them for every rank.
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    alone = auto_max_workers(folder)
    for name, value in launcher.items():
        monkeypatch.setenv(name, value)
    assert auto_max_workers(folder) == max(1, alone // 2)


def one_epoch(loader):
    for _ in loader:
        pass
    return loader.stats()["tuner"]


@pytest.mark.parametrize("budget, expected", [
    # The one rule for sizes, as the command line's --shard-size reads them
    # (tests/core/byte_size_test.cc): KB, MB, GB 1000-based, the rest 1024.
    ("64MiB", 64 * 2**20), ("1.5GB", 1_500_000_000), (" 512 kib ", 512 * 1024),
    (5_000_000, 5_000_000), ("4096", 4096), ("4096B", 4096), (np.int64(8192), 8192),
    ("2G", 2 * 2**30), ("256M", 256 * 2**20), ("1Gi", 2**30),
    ("512MB", 512_000_000), ("512MiB", 512 * 2**20), ("1.5G", 3 * 2**29), ("1TB", 10**12),
])
def test_memory_budget_reaches_the_tuner(folder, budget, expected):
    loader = feedline.DataLoader(train_dataset(folder), batch_size=8, num_workers="auto",
                                 prefetch_factor="auto", memory_budget=budget)
    assert one_epoch(loader)["memory_budget_bytes"] == expected
    loader.close()


def test_memory_budget_bounds_the_slots(folder):
    # Without a budget, slots this small (8 images of 32x32) are cheap: the
    # tuner keeps at least the fixed default, workers x 2.
    free = feedline.DataLoader(train_dataset(folder), batch_size=8, num_workers="auto",
                               prefetch_factor="auto")
    tuner = one_epoch(free)
    free.close()
    slot_bytes = tuner["slot_bytes"]
    assert slot_bytes > 0
    assert tuner["slots"] >= max(2, 2 * tuner["workers"])
    # A budget of 2.5 slots holds 2 of them, whatever the default says.
    bounded = feedline.DataLoader(train_dataset(folder), batch_size=8, num_workers="auto",
                                  prefetch_factor="auto", memory_budget=int(2.5 * slot_bytes))
    tuner = one_epoch(bounded)
    bounded.close()
    assert tuner["slot_bytes"] == slot_bytes
    assert tuner["slots"] == 2
    assert all(d["slots"] <= 2 for d in tuner["log"]), tuner["log"]
    # Below two slots the loader keeps the two it needs, and says so.
    tiny = feedline.DataLoader(train_dataset(folder), batch_size=8, num_workers="auto",
                               prefetch_factor="auto", memory_budget="1KiB")
    tuner = one_epoch(tiny)
    tiny.close()
    assert tuner["slots"] == 2
    assert any("fewer than 2 slots" in d["reason"] for d in tuner["log"]), tuner["log"]


class PythonSquares(feedline.io.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        return np.int64(index * index)


@pytest.mark.parametrize("mode, processes", [("process", True), ("auto", True),
                                             ("thread", False)])
def test_the_tuner_knows_worker_processes_from_threads(mode, processes):
    # A Python dataset in worker processes is built by the binding, not by
    # the C++ factory: the tuner must still wait as it does for processes
    # (longer windows, three agreeing verdicts), or it forks and kills them
    # on the evidence meant for threads.
    loader = feedline.DataLoader(PythonSquares(), batch_size=8, num_workers="auto",
                                 worker_mode=mode)
    got = np.concatenate([np.array(b) for b in loader]).tolist()
    assert got == [i * i for i in range(64)]
    tuner = loader.stats()["tuner"]
    assert tuner["enabled"]
    assert tuner["costly_workers"] is processes
    assert (loader.worker_mode == "process") is processes
    loader.close()
