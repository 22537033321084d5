"""Packs served over HTTP: feedline.vision.datasets.ShardDataset takes the
URL of a pack folder that a real nginx serves on 127.0.0.1 (started here,
with its own configuration and folders, stopped at the end); its batches
equal the local pack's, failures are errors naming the URL, and no request
holds the GIL."""

import bisect
import json
import os
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import feedline
from feedline.vision import datasets, synth
from feedline.vision import transforms as T

from conftest import copied
from time_bounds import bound_time
from nginx_server import Nginx
from seaweedfs_server import SeaweedFs, free_ports


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    images = str(tmp_path_factory.mktemp("images"))
    assert synth.write_image_folder(images, 14, classes=3, seed=6) == []
    root = str(tmp_path_factory.mktemp("served"))
    info = datasets.pack_shards(images, os.path.join(root, "train"), shard_bytes=150 << 10)
    assert info["records"] == 14 and info["shards"] >= 3
    return root


@pytest.fixture()
def server(packed, tmp_path):
    nginx = Nginx(packed, str(tmp_path))
    nginx.start()
    yield nginx
    nginx.stop()


def train_transform():
    return T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor()])


def test_a_served_pack_gives_the_local_packs_batches(packed, server):
    local = datasets.ShardDataset(os.path.join(packed, "train"), transform=train_transform())
    served = datasets.ShardDataset(server.url("train/"), transform=train_transform())
    assert len(served) == len(local) == 14
    assert served.classes == local.classes and served.targets == local.targets
    assert served.shards[0] == server.url("train/shard-000000.tar")
    want = copied(feedline.DataLoader(local, batch_size=4, shuffle=True, seed=9))
    for workers, mode in ((0, "thread"), (2, "thread"), (2, "process")):
        got = copied(feedline.DataLoader(served, batch_size=4, shuffle=True, seed=9,
                                         num_workers=workers, worker_mode=mode))
        assert len(got) == len(want) == 4
        for (ia, la), (ib, lb) in zip(got, want):
            np.testing.assert_array_equal(ia, ib)
            np.testing.assert_array_equal(la, lb)
    # Pickled (as for worker processes): rebuilt from its shards' URLs,
    # with its remote options.
    quick = datasets.ShardDataset(server.url("train/"),
                                  remote={"max_attempts": 2, "retry_budget_s": 0.5})
    again = pickle.loads(pickle.dumps(quick))
    assert again.shards == served.shards
    server.stop()
    with pytest.raises(feedline.SampleError, match=r"the retry budget of 0\.5 s spent"):
        again[0]


@pytest.mark.parametrize("remote, error, message", [
    ({"max_attempts": 0}, ValueError, "max_attempts must be >= 1, got 0"),
    ({"stall_timeout_s": -1}, ValueError, "stall_timeout_s must be > 0"),
    ({"retries": 3}, TypeError, "unknown option 'retries'"),
    ({"backoff_s": "fast"}, TypeError, "backoff_s must be a number"),
    ([3], TypeError, "remote must be a dict"),
    ({"cache_limit": "lots"}, ValueError, "remote: cache_limit"),
    ({"cache_limit": -1}, ValueError, "cache_limit must be between 0"),
    ({"prefetch_requests": 0}, ValueError, "prefetch_requests must be >= 1, got 0"),
    ({"prefetch_requests": 1.5}, ValueError, "prefetch_requests must be a whole number"),
    ({"prefetch_bytes": "lots"}, ValueError, "remote: prefetch_bytes"),
    ({"download_parts": 0}, ValueError, "download_parts must be >= 1, got 0"),
    ({"download_part_bytes": "1KiB"}, ValueError, "download_part_bytes must be >= 65536"),
    ({"ca_file": "/nonexistent/ca.pem"}, ValueError,
     "ca_file /nonexistent/ca.pem: cannot read the CA certificates"),
])
def test_bad_remote_options_are_refused_naming_them(server, remote, error, message):
    with pytest.raises(error, match=message):
        datasets.ShardDataset(server.url("train/"), remote=remote)


def test_a_missing_pack_or_a_server_that_is_gone_is_an_error_naming_the_url(server):
    with pytest.raises(ValueError, match=r"absent/pack\.txt: HTTP 404 \(not found\)"):
        datasets.ShardDataset(server.url("absent/"))
    served = datasets.ShardDataset(server.url("train/"),
                                   transform=T.Compose([T.CenterCrop(16), T.ToTensor()]),
                                   remote={"max_attempts": 3, "backoff_s": 0.01,
                                           "retry_budget_s": 0.5})
    server.stop()
    with pytest.raises(feedline.SampleError) as raised:
        served[0]
    assert raised.value.reason == "io"
    assert server.url("train/shard-000000.tar") in str(raised.value)
    assert "Couldn't connect to server" in str(raised.value)
    assert "the retry budget of 0.5 s spent" in str(raised.value)
    skipped = copied(feedline.DataLoader(served, batch_size=5, num_workers=2,
                                         error_policy="skip"))
    assert skipped == []


def test_requests_do_not_hold_the_gil(server):
    # The server gone: building the dataset waits through its retries
    # (backoff 0.1 s doubling, for the budget of 1 s) with the GIL released.
    server.stop()
    ticks, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    start = time.monotonic()
    try:
        with pytest.raises(ValueError, match="Couldn't connect to server"):
            datasets.ShardDataset(server.url("train/"), remote={"retry_budget_s": 1})
    finally:
        stop.set()
        counter.join()
    waited = time.monotonic() - start
    # Waits of 0.1 s doubling, each drawn in [0.5, 1.5] of that: the last
    # attempt is the third (after 0.35 s at least) or, when the budget
    # would be over after the next wait, the second (after 0.4 s at least).
    # A bound of 0.5 s failed a clean-clone run at 0.45 s.
    assert waited > 0.3
    # The counting thread ran while the request waited (about one tick per
    # millisecond; a held GIL would have stopped it).
    assert ticks[0] > 100 * waited


def test_a_cache_dir_downloads_each_shard_once_for_every_reader(packed, server, tmp_path):
    cache = str(tmp_path / "cache")
    remote = {"cache_dir": cache, "cache_limit": "1GiB"}
    local = datasets.ShardDataset(os.path.join(packed, "train"), transform=train_transform())
    want = copied(feedline.DataLoader(local, batch_size=4, shuffle=True, seed=9))
    for workers, mode in ((2, "process"), (2, "thread"), (0, "thread")):
        served = datasets.ShardDataset(server.url("train/"), transform=train_transform(),
                                       remote=remote)
        got = copied(feedline.DataLoader(served, batch_size=4, shuffle=True, seed=9,
                                         num_workers=workers, worker_mode=mode))
        for (ia, la), (ib, lb) in zip(got, want):
            np.testing.assert_array_equal(ia, ib)
            np.testing.assert_array_equal(la, lb)
    tar_gets = [line for line in open(os.path.join(server.scratch, "access.log"))
                if "GET /train/shard-" in line and ".tar " in line]
    assert len(tar_gets) == len(local.shards)
    cached = sorted(name for _, _, names in os.walk(cache) for name in names
                    if name.endswith(".tar"))
    assert cached == sorted(os.path.basename(shard) for shard in local.shards)


def test_a_cache_fetches_shards_ahead_in_the_epochs_order(packed, server, tmp_path):
    # Shards in a shuffled order, each read through: the tars are requested
    # in the order the epoch first needs them (fetched ahead by the plan the
    # loader passes to the dataset), each once, and the batches are the
    # local pack's.
    # One request at a time: nginx logs a request when it ends, so the log's
    # order is the order they began.
    remote = {"cache_dir": str(tmp_path / "cache"), "prefetch_bytes": "1MiB",
              "prefetch_requests": 1}
    local = datasets.ShardDataset(os.path.join(packed, "train"), transform=train_transform())
    served = datasets.ShardDataset(server.url("train/"), transform=train_transform(),
                                   remote=remote)
    order = list(datasets.ShardOrderSampler(local, window=1, seed=4))
    starts = local._native.shard_starts.tolist()
    plan = list(dict.fromkeys(bisect.bisect_right(starts, i) - 1 for i in order))
    assert plan != sorted(plan), "the test needs an order that is not the shards' own"

    def loader(data):
        return feedline.DataLoader(data, batch_size=2, seed=9, num_workers=1,
                                   sampler=datasets.ShardOrderSampler(data, window=1, seed=4))

    def tar_gets():
        return [line.split('"')[1].split()[1] for line in
                open(os.path.join(server.scratch, "access.log"))
                if "GET /train/shard-" in line and ".tar " in line]

    want = copied(loader(local))
    batches = iter(loader(served))
    first = next(batches)
    # While the first batch is held (the loader's reads have reached at
    # most its second batch, four records of at most two shards), every
    # shard is fetched: the byte bound holds them all.
    assert len(plan) > 2
    deadline = time.monotonic() + 10
    while len(tar_gets()) < len(plan) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert tar_gets() == [f"/train/shard-{shard:06d}.tar" for shard in plan]
    got = copied([first])
    del first
    got += copied(batches)
    assert len(got) == len(want)
    for (ia, la), (ib, lb) in zip(got, want):
        np.testing.assert_array_equal(ia, ib)
        np.testing.assert_array_equal(la, lb)
    # Pickled (worker processes): the options kept.
    again = pickle.loads(pickle.dumps(served))
    assert again.shards == served.shards


@pytest.fixture()
def seaweedfs(packed, tmp_path, monkeypatch):
    """SeaweedFS on loopback as an S3 endpoint, the pack uploaded under
    s3://feedline/train/ through its filer, and the AWS variables pointing
    at it."""
    server = SeaweedFs(tmp_path, "feedline")
    try:
        server.start()
        server.put_folder(os.path.join(packed, "train"), "train")
        server.point_aws_at_it(monkeypatch)
        yield server
    finally:
        server.stop()


def test_an_s3_pack_gives_the_local_packs_batches(packed, seaweedfs, monkeypatch):
    local = datasets.ShardDataset(os.path.join(packed, "train"), transform=train_transform())
    served = datasets.ShardDataset("s3://feedline/train/", transform=train_transform())
    assert len(served) == len(local) and served.classes == local.classes
    want = copied(feedline.DataLoader(local, batch_size=4, shuffle=True, seed=9))
    got = copied(feedline.DataLoader(served, batch_size=4, shuffle=True, seed=9, num_workers=2,
                                     worker_mode="process"))
    for (ia, la), (ib, lb) in zip(got, want):
        np.testing.assert_array_equal(ia, ib)
        np.testing.assert_array_equal(la, lb)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"HTTP 403 SignatureDoesNotMatch \(access refused"):
        datasets.ShardDataset("s3://feedline/train/")
    assert time.monotonic() - start < 5


RANK_SCRIPT = """
import hashlib, json, sys
import numpy as np
import feedline
from feedline import io
from feedline.vision import datasets
from feedline.vision import transforms as T

source, cache = sys.argv[1], sys.argv[2]
remote = {"cache_dir": cache} if cache else None
data = datasets.ShardDataset(source, transform=T.Compose(
    [T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor()]), remote=remote)
sampler = io.DistributedBatchSampler(data, 2, shuffle=True, seed=4)
loader = feedline.DataLoader(data, batch_sampler=sampler, num_workers=2, worker_mode="process",
                            seed=9)
digests = []
for images, labels in loader:
    batch = np.array(images).tobytes() + np.array(labels).tobytes()
    digests.append(hashlib.sha256(batch).hexdigest())
launch = io.resolve_launch()
print(json.dumps({"rank": launch["rank"], "launcher": launch["source"], "batches": digests}),
      flush=True)
"""


def _torchrun_ranks(script, source, cache):
    """Two ranks under torchrun, each loading with two worker processes;
    each rank's batch digests, by rank."""
    command = [sys.executable, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1",
               "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
               str(free_ports(1)[0]), script, source, cache]
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    env["OMP_NUM_THREADS"] = "1"
    bound_time(150)  # past the child's timeout: a hung child fails its test
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = {}
    for line in done.stdout.splitlines():
        if '{"rank"' in line:
            record = json.loads(line[line.index("{"):])
            assert record["launcher"] == "torchrun"
            ranks[record["rank"]] = record["batches"]
    assert sorted(ranks) == [0, 1], done.stdout[-3000:]
    return ranks


def test_two_ranks_with_two_workers_each_fetch_each_shard_once_per_node(packed, server,
                                                                         tmp_path):
    # torchrun's two ranks on this node, two worker processes each, one
    # cache_dir: the server's log shows each shard's tar fetched once; each
    # rank's batches are the ones it gets from the local pack.
    script = str(tmp_path / "rank.py")
    with open(script, "w") as f:
        f.write(RANK_SCRIPT)
    want = _torchrun_ranks(script, os.path.join(packed, "train"), "")
    got = _torchrun_ranks(script, server.url("train/"), str(tmp_path / "cache"))
    assert got == want
    assert all(len(batches) > 0 for batches in got.values())
    tar_gets = {}
    for line in open(os.path.join(server.scratch, "access.log")):
        if "GET /train/shard-" in line and ".tar " in line:
            name = line.split("GET /train/")[1].split(" ")[0]
            tar_gets[name] = tar_gets.get(name, 0) + 1
    shards = sorted(os.path.basename(s) for s in
                    datasets.ShardDataset(os.path.join(packed, "train")).shards)
    assert tar_gets == {name: 1 for name in shards}
