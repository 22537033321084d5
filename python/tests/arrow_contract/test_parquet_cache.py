"""ParquetDataset over served files through the node's cache (remote
cache_dir), against real servers started here: SeaweedFS as the S3 endpoint
(python/tests/seaweedfs_server.py) and nginx (python/tests/nginx_server.py,
whose ranges.log shows each GET's Range header and bytes). The batches are
bit for bit those of the same files on local disk; two processes sharing a
cache_dir download each file once between them (the server's log); the
cache keeps within cache_limit; an s3:// glob lists its folder; a bad URL
or credential is an error naming the URL."""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import feedline
from feedline import io

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from nginx_server import Nginx  # noqa: E402  python/tests
from seaweedfs_server import SeaweedFs  # noqa: E402

FILES, ROWS, GROUP_ROWS = 4, 1200, 200


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """FILES Parquet files of token documents, ROWS rows each in row groups
    of GROUP_ROWS; each file well over 64 KiB, so that a footer read (the
    last 64 KiB) never starts at byte 0 as a whole download does."""
    root = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(11)
    for f in range(FILES):
        lengths = rng.integers(1, 120, ROWS)
        table = pa.table({
            "input_ids": pa.array([rng.integers(0, 50000, k, dtype=np.int32) for k in lengths],
                                  pa.list_(pa.int32())),
            "doc": pa.array(np.arange(f * ROWS, (f + 1) * ROWS)),
            "n": pa.array(lengths.astype(np.int32)),
            "score": pa.array(rng.random(ROWS).astype(np.float32)),
        })
        pq.write_table(table, str(root / f"part-{f}.parquet"), row_group_size=GROUP_ROWS)
    names = [f"part-{f}.parquet" for f in range(FILES)]
    assert all(os.path.getsize(root / n) > 2 * 65536 for n in names)
    return root, names


def digest(batch):
    """A hash of every field's dtype, shape and bytes: equal digests are
    bit-identical batches."""
    h = hashlib.sha256()
    for key in sorted(batch):
        values = batch[key]
        parts = values if isinstance(values, list) else [values]
        for part in parts:
            array = np.asarray(part)
            h.update(f"{key}:{array.dtype}:{array.shape}".encode())
            h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def epochs(data, count=2, **loader):
    loader = io.DataLoader(data, **loader)
    return [[digest(b) for b in loader] for _ in range(count)]


def epochs_watching_the_cache(loader, cache, count=2):
    """The batches' digests of `count` epochs of `loader`, and the most
    bytes of whole files under `cache` seen after any batch."""
    got, peak = [], 0
    for _ in range(count):
        got.append([])
        for batch in loader:
            got[-1].append(digest(batch))
            peak = max(peak, cached_bytes(cache))
    return got, peak


def cached_bytes(cache):
    """Bytes of whole cached files under `cache` (downloads under way, with
    their .part name, and the files kept beside them not counted)."""
    total = 0
    for folder, _, names in os.walk(cache):
        for name in names:
            if not name.endswith(".parquet"):
                continue
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except FileNotFoundError:  # evicted since the folder was listed
                pass
    return total


@pytest.fixture()
def seaweedfs(corpus, tmp_path, monkeypatch):
    server = SeaweedFs(tmp_path, "feedline")
    try:
        server.start()
        server.put_folder(str(corpus[0]), "corpus")
        server.point_aws_at_it(monkeypatch)
        yield server
    finally:
        server.stop()


@pytest.fixture()
def nginx(corpus, tmp_path):
    server = Nginx(str(corpus[0]), str(tmp_path))
    server.start()
    yield server
    server.stop()


def test_s3_files_through_the_node_cache_give_the_local_batches_bit_for_bit(
        corpus, seaweedfs, tmp_path):
    root, names = corpus
    local = io.ParquetDataset(str(root / "*.parquet"), length_column="n")
    urls = [f"s3://feedline/corpus/{n}" for n in names]
    cache = tmp_path / "cache"
    # The bucket's folder listed for the glob.
    served = io.ParquetDataset("s3://feedline/corpus/*.parquet", length_column="n",
                               remote={"cache_dir": str(cache)})
    assert served.paths == urls
    assert len(served) == len(local) and served.lengths.tolist() == local.lengths.tolist()
    options = dict(batch_size=32, shuffle=True, seed=5, num_workers=2, worker_mode="thread")
    want = epochs(local, **options)
    assert want[0] != want[1]  # each epoch its own order
    assert epochs(served, **options) == want
    stats = served.stats()
    # Each file downloaded once, by the fetching ahead, in two epochs.
    assert stats["file_downloads"] == FILES
    assert stats["file_prefetches"] >= 1
    assert cached_bytes(cache) == sum(os.path.getsize(root / n) for n in names)
    # Worker processes, and a dataset made again (a second run on the node):
    # the copies in the cache, nothing downloaded.
    again = io.ParquetDataset(urls, length_column="n", remote={"cache_dir": str(cache)})
    assert epochs(again, **dict(options, worker_mode="process")) == want
    assert again.stats()["file_downloads"] == 0


RANK_SCRIPT = """
import hashlib, json, sys
sys.path.insert(0, sys.argv[4])
from test_parquet_cache import digest
from feedline import io

rank, cache, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
remote = {"cache_dir": cache, "download_part_bytes": 1 << 20} if cache else None
data = io.ParquetDataset(paths, lengths_from="input_ids", remote=remote)
sampler = io.DistributedBatchSampler(data, 16, num_replicas=2, rank=rank, shuffle=True, seed=4)
loader = io.DataLoader(data, batch_sampler=sampler, num_workers=2, worker_mode="process",
                       seed=9)
epochs = [[digest(b) for b in loader] for _ in range(2)]
print(json.dumps({"rank": rank, "epochs": epochs}), flush=True)
"""


def _two_ranks(script, paths, cache):
    """Two processes at once, ranks 0 and 1 of 2, each loading with two
    worker processes; each rank's batch digests, by rank."""
    here = os.path.dirname(os.path.abspath(__file__))
    ranks = [subprocess.Popen([sys.executable, script, str(r), cache, ",".join(paths), here],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    got = {}
    for process in ranks:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, out[-3000:] + err[-3000:]
        record = json.loads(out.strip().splitlines()[-1])
        got[record["rank"]] = record["epochs"]
    return got


def test_two_ranks_sharing_a_cache_dir_download_each_file_once_per_node(
        corpus, nginx, tmp_path):
    root, names = corpus
    script = str(tmp_path / "rank.py")
    with open(script, "w") as f:
        f.write(RANK_SCRIPT)
    want = _two_ranks(script, [str(root / n) for n in names], "")
    got = _two_ranks(script, [nginx.url(n) for n in names], str(tmp_path / "cache"))
    assert got == want
    assert all(len(epoch) > 0 for epochs_ in got.values() for epoch in epochs_)
    # The server's log: each file's bytes from its first on (the whole
    # download) were sent once, in 1 MiB parts; the other GETs are the
    # footers' (the last 64 KiB) of a rank that found no copy yet.
    for name in names:
        size = os.path.getsize(root / name)
        gets = [g for g in nginx.ranged_gets() if g[0] == f"/{name}"]
        downloads = [g for g in gets if g[2].startswith("bytes=0-")]
        assert len(downloads) == 1, gets
        assert sum(sent for _, _, _, sent in gets) <= size + 2 * 65536, gets


@pytest.mark.parametrize("worker_mode", ["thread", "process"])
def test_the_cache_keeps_within_its_limit_and_gives_the_local_batches(corpus, nginx, tmp_path,
                                                                      worker_mode):
    root, names = corpus
    sizes = [os.path.getsize(root / n) for n in names]
    limit = sizes[0] + sizes[1] + 1000  # room for two files of four
    cache = tmp_path / "cache"
    local = io.ParquetDataset([str(root / n) for n in names], length_column="n")
    served = io.ParquetDataset([nginx.url(n) for n in names], length_column="n",
                               remote={"cache_dir": str(cache), "cache_limit": limit})
    want = epochs(local, batch_size=50, num_workers=2, worker_mode=worker_mode)
    loader = io.DataLoader(served, batch_size=50, num_workers=2, worker_mode=worker_mode)
    got, peak = epochs_watching_the_cache(loader, cache)
    assert got == want
    assert 0 < peak <= limit
    # In row order, the files one after the other: each downloaded once an
    # epoch (the first two evicted by the last two).
    assert served.stats()["file_downloads"] == 2 * FILES


@pytest.mark.parametrize("worker_mode", ["thread", "process"])
def test_a_shard_order_shuffle_downloads_each_file_once_an_epoch_within_the_limit(
        corpus, nginx, tmp_path, worker_mode):
    """A shuffled epoch over a corpus larger than cache_limit: a full shuffle
    needs nearly every file again soon after it is evicted (docs/text.md),
    ShardOrderSampler streams the files one after another in a random order,
    so with room for three files (the one a worker finishes, the one read,
    the one fetched ahead) each file is downloaded at most once an epoch,
    with thread and with process workers, and the batches are those of the
    same sampler over the local files."""
    from feedline.vision.datasets import ShardOrderSampler

    root, names = corpus
    sizes = [os.path.getsize(root / n) for n in names]
    limit = max(sizes) * 3 + 1000  # room for three files of four
    cache = tmp_path / "cache"
    local = io.ParquetDataset([str(root / n) for n in names], length_column="n")
    served = io.ParquetDataset([nginx.url(n) for n in names], length_column="n",
                               remote={"cache_dir": str(cache), "cache_limit": limit})
    options = dict(batch_size=50, num_workers=2, seed=1, worker_mode=worker_mode)
    want = epochs(local, sampler=ShardOrderSampler(local, seed=8), **options)
    assert want[0] != want[1]
    loader = io.DataLoader(served, sampler=ShardOrderSampler(served, seed=8), **options)
    got, peak = epochs_watching_the_cache(loader, cache)
    assert got == want
    assert 0 < peak <= limit
    # The server's log, which sees every process's downloads: each file's
    # bytes from its first on (a whole download) sent at most once an epoch
    # (once in all when it is still cached as the next epoch starts).
    for name in names:
        downloads = [g for g in nginx.ranged_gets()
                     if g[0] == f"/{name}" and g[2].startswith("bytes=0-")]
        assert 1 <= len(downloads) <= 2, (name, downloads)


def test_a_bad_credential_or_url_is_an_error_naming_the_url(corpus, seaweedfs, tmp_path,
                                                            monkeypatch):
    _, names = corpus
    url = f"s3://feedline/corpus/{names[0]}"
    remote = {"cache_dir": str(tmp_path / "cache"), "max_attempts": 1}
    absent = "s3://feedline/corpus/absent.parquet"
    with pytest.raises(ValueError, match=f"{absent}.*404"):
        io.ParquetDataset([absent], remote=remote)
    with pytest.raises(FileNotFoundError, match="no file matches .*corpus/\\*.arrow"):
        io.ParquetDataset("s3://feedline/corpus/*.arrow", remote=remote)
    with pytest.raises(ValueError, match="no-such-bucket.*404"):
        io.ParquetDataset("s3://no-such-bucket/corpus/*.parquet", remote=remote)
    # A file gone from the server after the dataset was made: the read that
    # needs it fails naming its URL (the loader's error policy decides).
    data = io.ParquetDataset([url, f"s3://feedline/corpus/{names[1]}"], length_column="n",
                             remote=dict(remote, prefetch_bytes=0))
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(
        f"{seaweedfs.filer}/buckets/feedline/corpus/{names[1]}", method="DELETE"),
        timeout=10).close()
    with pytest.raises(feedline.SampleError, match=f"s3://feedline/corpus/{names[1]}.*404"):
        list(io.DataLoader(data, batch_size=ROWS, num_workers=0))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(ValueError, match=f"{url}.*403"):
        io.ParquetDataset([url], remote=remote)
    with pytest.raises(ValueError, match="s3://feedline/corpus/.*403"):
        io.ParquetDataset("s3://feedline/corpus/*.parquet", remote=remote)


OUTAGE_S = 4.0  # past the 1.5 s that max_attempts' backoff alone once allowed


@pytest.mark.parametrize("cached", [False, True], ids=["ranged-reads", "node-cache"])
def test_a_server_stopped_for_seconds_mid_epoch_leaves_the_epoch_whole(
        corpus, nginx, tmp_path, cached):
    # Default retry options (docs/storage.md: retried for retry_budget_s,
    # 60 s): nginx is stopped after the epoch's second batch and started
    # again OUTAGE_S later. Ranged reads fetch each row group as it is read;
    # the cache fetches no file ahead (prefetch_bytes 0) and keeps two of
    # the four, so the epoch has files still to download during the outage.
    import threading
    import time

    root, names = corpus
    local = io.ParquetDataset([str(root / n) for n in names], length_column="n")
    remote = ({"cache_dir": str(tmp_path / "cache"), "prefetch_bytes": 0,
               "cache_limit": 2 * max(os.path.getsize(root / n) for n in names) + 1000}
              if cached else None)
    served = io.ParquetDataset([nginx.url(n) for n in names], length_column="n",
                               remote=remote)
    want = epochs(local, count=1, batch_size=50, num_workers=2)[0]
    got, restart, stopped = [], None, None
    loader = io.DataLoader(served, batch_size=50, num_workers=2)
    try:
        for batch in loader:
            got.append(digest(batch))
            if len(got) == 2:
                nginx.stop()
                stopped = time.monotonic()
                served_before = len(nginx.ranged_gets())
                restart = threading.Timer(OUTAGE_S, nginx.start)
                restart.start()
        ended = time.monotonic()
    finally:
        loader.close()
        if restart is not None:
            restart.join()  # started again before the fixture stops it
    assert got == want  # every batch, each once, equal to local
    # The epoch waited the outage out: its reads after the second batch
    # needed the server (an epoch served from memory would end at once).
    assert ended - stopped >= OUTAGE_S - 0.5
    # And what it read after the outage came from the restarted server.
    assert len(nginx.ranged_gets()) > served_before
