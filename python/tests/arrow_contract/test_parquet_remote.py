"""ParquetDataset over http:// URLs that a real nginx serves on 127.0.0.1
(python/tests/nginx_server.py): the rows equal the local files',
each row group is read by ranged GETs of its column chunks (the access log
shows 206 answers for parts of the file, never the whole), pickling keeps
the URLs and remote options, and a missing file is an error naming its URL."""

import os
import pickle
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from feedline import io

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from nginx_server import Nginx  # noqa: E402  python/tests


@pytest.fixture
def served(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    rng = np.random.default_rng(7)
    paths = []
    for f in range(2):
        ids = np.arange(f * 50, (f + 1) * 50)
        lengths = rng.integers(0, 30, len(ids))
        table = pa.table({
            "input_ids": pa.array([rng.integers(0, 50000, k, dtype=np.int32) for k in lengths],
                                  pa.list_(pa.int32())),
            "id": pa.array(ids),
            "n": pa.array(lengths.astype(np.int32)),
        })
        paths.append(str(root / f"part-{f}.parquet"))
        pq.write_table(table, paths[-1], row_group_size=10)
    nginx = Nginx(str(root), str(tmp_path))
    nginx.start()
    yield nginx, paths
    nginx.stop()


def requests(nginx):
    lines = open(os.path.join(nginx.scratch, "access.log")).read().splitlines()
    return [(line.split('"')[1].split()[1], int(line.split('"')[2].split()[0])) for line in lines]


def test_served_parquet_files_give_the_local_rows_by_ranged_reads(served):
    nginx, paths = served
    urls = [nginx.url(f"part-{f}.parquet") for f in range(2)]
    local = io.ParquetDataset(paths, length_column="n")
    remote = io.ParquetDataset(urls, length_column="n", remote={"max_attempts": 2})
    assert len(remote) == 100 and remote.num_row_groups == 10
    assert remote.lengths.tolist() == local.lengths.tolist()
    before = len(requests(nginx))
    want = [(b["id"].tolist(), b["input_ids"].tolist())
            for b in io.DataLoader(local, batch_size=7, num_workers=2)]
    got = [(b["id"].tolist(), b["input_ids"].tolist())
           for b in io.DataLoader(remote, batch_size=7, num_workers=2)]
    assert got == want
    assert remote.stats()["row_group_reads"] == 10
    reads = requests(nginx)[before:]
    # Each row group's column chunks, as ranged GETs (206), nothing whole.
    assert len(reads) >= 10 and all(status == 206 for _, status in reads)
    assert {path for path, _ in reads} == {"/part-0.parquet", "/part-1.parquet"}
    again = pickle.loads(pickle.dumps(remote))
    assert again.paths == urls and again[57]["id"] == 57


def test_a_missing_served_file_is_an_error_naming_its_url(served):
    nginx, _ = served
    url = nginx.url("absent.parquet")
    with pytest.raises(ValueError, match="absent.parquet"):
        io.ParquetDataset([url], remote={"max_attempts": 1})
    with pytest.raises(ValueError, match="a URL cannot be a glob"):
        io.ParquetDataset(nginx.url("*.parquet"))
