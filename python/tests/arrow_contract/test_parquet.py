"""Token documents from Arrow data and Parquet files (pyarrow, the venv's:
make test-peers runs this folder), packed by feedline.DataLoader."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from feedline import io


def documents(n, seed):
    rng = np.random.default_rng(seed)
    lengths = np.exp(rng.normal(4.0, 1.0, n)).astype(np.int64) + 1
    return [rng.integers(0, 50000, k, dtype=np.int32) for k in lengths]


def write_corpus(folder, docs, files=3, row_group_size=50, large=False):
    kind = pa.large_list(pa.int32()) if large else pa.list_(pa.int32())
    paths = []
    for f, part in enumerate(np.array_split(np.arange(len(docs)), files)):
        table = pa.table({"id": pa.array(part, pa.int64()),
                          "input_ids": pa.array([docs[i] for i in part], type=kind)})
        path = os.path.join(folder, f"part-{f:03d}.parquet")
        pq.write_table(table, path, row_group_size=row_group_size)
        paths.append(path)
    return paths


def as_lists(dataset):
    return [dataset[i]["input_ids"].tolist() for i in range(len(dataset))]


@pytest.mark.parametrize("large", [False, True])
def test_parquet_files_by_glob_read_every_document_in_order(tmp_path, large):
    docs = documents(400, seed=1)
    paths = write_corpus(str(tmp_path), docs, large=large)
    assert pq.ParquetFile(paths[0]).num_row_groups > 1
    data = io.TokenDataset.from_parquet(str(tmp_path / "*.parquet"))
    assert len(data) == 400
    assert as_lists(data) == [d.tolist() for d in docs]
    assert as_lists(io.TokenDataset.from_parquet(paths)) == as_lists(data)


def test_a_parquet_corpus_packs_every_token_once(tmp_path):
    docs = documents(600, seed=2)
    write_corpus(str(tmp_path), docs)
    data = io.TokenDataset.from_parquet(str(tmp_path / "*.parquet"))
    loader = io.DataLoader(data, batch_size=4, shuffle=True, num_workers=2, seed=0,
                           pack=io.PackOptions(512, max_segments=16))
    tokens = []
    for batch in loader:
        tokens += batch["input_ids"][batch["segment_ids"] != 0].tolist()
    assert sorted(tokens) == sorted(np.concatenate(docs).tolist())


def test_arrow_tables_arrays_and_slices():
    docs = documents(50, seed=3)
    table = pa.table({"input_ids": pa.array(docs, type=pa.list_(pa.int64()))})
    assert as_lists(io.TokenDataset.from_arrow(table)) == [d.tolist() for d in docs]
    chunked = pa.chunked_array([pa.array(docs[:20]), pa.array(docs[20:])])
    assert as_lists(io.TokenDataset.from_arrow(chunked)) == [d.tolist() for d in docs]
    sliced = pa.array(docs).slice(7, 10)
    assert as_lists(io.TokenDataset.from_arrow(sliced)) == [d.tolist() for d in docs[7:17]]


def test_bad_input_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file matches"):
        io.TokenDataset.from_parquet(str(tmp_path / "*.parquet"))
    bogus = tmp_path / "bogus.parquet"
    bogus.write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match="bogus.parquet: not a readable Parquet file"):
        io.TokenDataset.from_parquet(str(bogus))
    (tmp_path / "good").mkdir()
    good = write_corpus(str(tmp_path / "good"), documents(5, seed=4), files=1)[0]
    with pytest.raises(ValueError, match="has no column 'tokens'"):
        io.TokenDataset.from_parquet(good, column="tokens")
    with pytest.raises(TypeError, match="not a list of integers"):
        io.TokenDataset.from_arrow(pa.table({"input_ids": pa.array([1.0, 2.0])}))
    with pytest.raises(ValueError, match="1 null documents"):
        io.TokenDataset.from_arrow(pa.array([[1, 2], None]))
