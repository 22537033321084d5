"""The one-line swap over a Hugging Face datasets.Dataset (the real package,
the venv's): feedline.torch.DataLoader reads its Arrow table natively,
honoring its selected columns and indices mapping, says so in its log, and
loads what it cannot read so in Python as before."""

import logging

import datasets
import numpy as np
import pytest
import torch

import feedline.torch as ft
from feedline import io


def corpus(n, seed=0):
    rng = np.random.default_rng(seed)
    docs = [rng.integers(0, 1000, int(k)).tolist() for k in rng.integers(1, 30, n)]
    return datasets.Dataset.from_dict({
        "input_ids": docs,
        "label": [i % 3 for i in range(n)],
        "text": [f"row {i}" for i in range(n)],
    })


def rows_of(loader):
    out = []
    for batch in loader:
        for r in range(len(batch["label"])):
            # The lengths come when a batch's documents differ in length.
            k = (int(batch["input_ids_lengths"][r]) if "input_ids_lengths" in batch
                 else batch["input_ids"].shape[1])
            out.append((batch["input_ids"][r, :k].tolist(), int(batch["label"][r]),
                        batch["text"][r]))
    return out


def expected(ds):
    return [(row["input_ids"], row["label"], row["text"]) for row in ds]


def test_a_datasets_dataset_loads_natively_and_says_so(caplog):
    ds = corpus(50)
    with caplog.at_level(logging.INFO, logger="feedline"):
        loader = ft.DataLoader(ds, batch_size=8, num_workers=2)
        got = rows_of(loader)
    assert got == expected(ds)
    native = loader.stats()["native_transforms"]
    assert native["native"] is True and native["reason"] is None
    assert any("datasets.Dataset (50 rows, columns input_ids, label, text) loads natively "
               "from its Arrow table" in r.getMessage() for r in caplog.records)
    batch = next(iter(loader))
    assert isinstance(batch["input_ids"], torch.Tensor) and batch["input_ids"].dtype == torch.int64


def test_its_indices_mapping_and_selected_columns_are_honored():
    ds = corpus(80).shuffle(seed=3).select(range(30)).filter(lambda row: row["label"] != 1)
    assert ds._indices is not None
    assert rows_of(ft.DataLoader(ds, batch_size=4)) == expected(ds)
    ds.set_format("torch", columns=["input_ids"])
    batch = next(iter(ft.DataLoader(ds, batch_size=2)))
    assert set(batch) - {"input_ids_lengths"} == {"input_ids"}
    assert batch["input_ids"][0, :len(ds[0]["input_ids"])].tolist() == \
        ds[0]["input_ids"].tolist()


def test_it_packs_every_token_once():
    ds = corpus(200, seed=1).select_columns(["input_ids"])
    loader = ft.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2,
                           pack=io.PackOptions(64, max_segments=8))
    assert loader.stats()["native_transforms"]["native"] is True
    tokens = []
    for batch in loader:
        tokens += batch["input_ids"][batch["segment_ids"] != 0].tolist()
    assert sorted(tokens) == sorted(t for row in ds["input_ids"] for t in row)


def test_feedline_dataloader_packs_it_from_its_arrow_table(monkeypatch):
    ds = corpus(120, seed=2).select_columns(["input_ids"]).shuffle(seed=1)
    monkeypatch.setattr(type(ds), "__getitem__", None)  # not read through Python
    loader = io.DataLoader(ds, batch_size=4, num_workers=2, pack=io.PackOptions(48))
    tokens = []
    for batch in loader:
        tokens += batch["input_ids"][batch["segment_ids"] != 0].tolist()
    assert sorted(tokens) == sorted(t for row in ds.data.table.column(0).to_pylist()
                                    for t in row)


def test_what_it_cannot_read_natively_runs_in_python_as_before(caplog):
    ds = corpus(20).with_transform(lambda batch: {"n": [len(x) for x in batch["input_ids"]]})
    with caplog.at_level(logging.INFO, logger="feedline"):
        loader = ft.DataLoader(ds, batch_size=5)
        batch = next(iter(loader))
    assert batch["n"].tolist() == [len(x) for x in corpus(20)["input_ids"][:5]]
    native = loader.stats()["native_transforms"]
    assert native["native"] is False and "transform" in native["reason"]
    assert any("datasets.Dataset runs in Python: it has a transform" in r.getMessage()
               for r in caplog.records)
    nested = datasets.Dataset.from_dict({"x": [[[1, 2]], [[3]]]})
    loader = ft.DataLoader(nested, batch_size=1)
    assert loader.stats()["native_transforms"]["native"] is False
    assert "column 'x' is list<item: list<item: int64>>" in \
        loader.stats()["native_transforms"]["reason"]
    assert next(iter(loader))["x"] is not None
    holes = datasets.Dataset.from_dict({"x": [1, None, 3]})
    reason = ft.DataLoader(holes, batch_size=1).stats()["native_transforms"]["reason"]
    assert reason == "column 'x' has 1 nulls (None in Python)"


def parquet_corpus(folder, files=2, rows=30):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    paths = []
    for f in range(files):
        ids = range(f * rows, (f + 1) * rows)
        table = pa.table({
            "input_ids": pa.array([rng.integers(0, 1000, int(k)).tolist()
                                   for k in rng.integers(1, 20, rows)], pa.list_(pa.int32())),
            "label": pa.array(list(ids), pa.int64()),
            "text": pa.array([f"row {i}" for i in ids]),
        })
        paths.append(str(folder / f"part-{f}.parquet"))
        pq.write_table(table, paths[-1], row_group_size=7)
    return paths


def streamed(it):
    return [(row["input_ids"], row["label"], row["text"]) for row in it]


def test_a_streaming_parquet_dataset_loads_natively_in_its_order_and_resumes(tmp_path, caplog):
    paths = parquet_corpus(tmp_path)
    it = datasets.load_dataset("parquet", data_files=paths, split="train", streaming=True)
    assert type(it).__name__ == "IterableDataset"
    want = streamed(it)
    with caplog.at_level(logging.INFO, logger="feedline"):
        loader = ft.DataLoader(it, batch_size=4, num_workers=2)
        got = rows_of(loader)
    assert got == want
    native = loader.stats()["native_transforms"]
    assert native["native"] is True
    assert any("datasets.IterableDataset (2 Parquet files, 60 rows, columns input_ids, label, "
               "text) loads natively from its Parquet files, in the stream's order"
               in r.getMessage() for r in caplog.records)
    # A resume mid-epoch gives the rest of the stream, at another worker count.
    first = ft.DataLoader(it, batch_size=4, num_workers=2,
                          generator=torch.Generator().manual_seed(0))
    head = []
    for i, batch in enumerate(first):
        head += [int(x) for x in batch["label"]]
        if i == 3:
            break
    state = first.state_dict()
    second = ft.DataLoader(it, batch_size=4, num_workers=1,
                           generator=torch.Generator().manual_seed(0))
    second.load_state_dict(state)
    assert head + [row[1] for row in rows_of(second)] == [row[1] for row in want]


def test_a_stream_refuses_shuffle_and_samplers_as_any_iterable(tmp_path):
    it = datasets.load_dataset("parquet", data_files=parquet_corpus(tmp_path), split="train",
                               streaming=True)
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        ft.DataLoader(it, batch_size=4, shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler"):
        ft.DataLoader(it, batch_size=4, sampler=range(60))


def test_a_datasets_dataset_as_iterable_loads_its_shards_natively(caplog):
    ds = corpus(40).select(range(5, 35))
    it = ds.to_iterable_dataset(num_shards=3)
    with caplog.at_level(logging.INFO, logger="feedline"):
        loader = ft.DataLoader(it, batch_size=8)
        got = rows_of(loader)
    assert got == streamed(it)
    assert loader.stats()["native_transforms"]["native"] is True
    assert any("datasets.IterableDataset (3 shards of a datasets.Dataset, 30 rows, columns "
               "input_ids, label, text) loads natively from its Arrow table"
               in r.getMessage() for r in caplog.records)


def test_a_stream_it_cannot_read_natively_is_iterated_in_python_and_says_why(tmp_path, caplog):
    paths = parquet_corpus(tmp_path)
    it = datasets.load_dataset("parquet", data_files=paths, split="train", streaming=True)
    # Only the labels, so that Python's collate can batch them.
    def doubled(stream):
        return stream.map(lambda row: {"label": row["label"] * 2},
                          remove_columns=["input_ids", "text"])

    cases = [(doubled(it), "its examples come through"),
             (doubled(it.shuffle(seed=0, buffer_size=10)), "it is shuffled")]
    for stream, reason in cases:
        with caplog.at_level(logging.INFO, logger="feedline"):
            loader = ft.DataLoader(stream, batch_size=4)
            got = sorted(int(x) for batch in loader for x in batch["label"])
        assert got == sorted(row["label"] for row in stream)
        native = loader.stats()["native_transforms"]
        assert native["native"] is False and reason in native["reason"]
        assert any("datasets.IterableDataset runs in Python: " + reason in r.getMessage()
                   for r in caplog.records)
