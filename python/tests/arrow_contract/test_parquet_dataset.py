"""feedline.io.ParquetDataset: Parquet files read lazily row group by row
group (pyarrow, the venv's: make test-peers runs this folder), their columns
as the samples' fields."""

import os
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import feedline
from feedline import io


def rows(n, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 40, n)
    return {
        "input_ids": [rng.integers(0, 50000, k, dtype=np.int32) for k in lengths],
        "id": np.arange(n, dtype=np.int64),
        "score": rng.random(n).astype(np.float32),
        "keep": rng.random(n) < 0.5,
        "text": [f"document {i} é" for i in range(n)],
        "raw": [bytes([i % 256]) * (i % 3) for i in range(n)],
        "num_tokens": lengths.astype(np.int32),
    }


def write(folder, data, files=3, row_group_size=16):
    n = len(data["id"])
    paths = []
    for f, part in enumerate(np.array_split(np.arange(n), files)):
        table = pa.table({
            "input_ids": pa.array([data["input_ids"][i] for i in part], pa.list_(pa.int32())),
            "id": pa.array(data["id"][part]),
            "score": pa.array(data["score"][part]),
            "keep": pa.array(data["keep"][part]),
            "text": pa.array([data["text"][i] for i in part], pa.string()),
            "raw": pa.array([data["raw"][i] for i in part], pa.binary()),
            "num_tokens": pa.array(data["num_tokens"][part]),
        })
        path = os.path.join(folder, f"part-{f}.parquet")
        pq.write_table(table, path, row_group_size=row_group_size)
        paths.append(path)
    return paths


def test_every_column_becomes_a_field_of_its_type(tmp_path):
    data = rows(100, seed=1)
    write(str(tmp_path), data)
    ds = io.ParquetDataset(str(tmp_path / "*.parquet"))
    assert len(ds) == 100
    assert ds.num_row_groups == 9  # 34, 33, 33 rows in groups of 16
    for i in (0, 17, 33, 34, 99):
        sample = ds[i]
        assert sample["input_ids"].dtype == np.int64
        assert sample["input_ids"].tolist() == data["input_ids"][i].tolist()
        assert sample["id"] == i and sample["id"].dtype == np.int64
        assert sample["score"] == data["score"][i] and sample["score"].dtype == np.float32
        assert bool(sample["keep"]) == bool(data["keep"][i])
        assert sample["text"] == data["text"][i]
        assert sample["raw"] == data["raw"][i] and isinstance(sample["raw"], bytes)
    assert ds.lengths.tolist() == [len(d) for d in data["input_ids"]]


def test_row_groups_are_read_lazily_once_each_in_a_sequential_epoch(tmp_path):
    data = rows(200, seed=2)
    write(str(tmp_path), data, files=2, row_group_size=10)
    ds = io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["input_ids", "id"],
                           max_row_groups=3)
    assert ds.stats() == {"row_group_reads": 0, "row_group_reads_ahead": 0,
                          "row_groups_held": 0, "rows_kept": 0, "kept_bytes": 0}
    loader = io.DataLoader(ds, batch_size=5, num_workers=2)
    ids = []
    for batch in loader:
        ids += batch["id"].tolist()
        assert ds.stats()["row_groups_held"] <= 3
        lengths = batch["input_ids_lengths"]
        for row, k in zip(batch["input_ids"], lengths):
            assert row[k:].tolist() == [0] * (len(row) - k)
    assert ids == list(range(200))
    assert ds.stats()["row_group_reads"] == 20


def test_a_shuffled_visit_reads_row_groups_ahead_in_the_order_the_epoch_needs_them(tmp_path):
    data = rows(200, seed=3)
    write(str(tmp_path), data, files=2, row_group_size=10)  # 20 groups of 10 rows
    ds = io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["id"], max_row_groups=4)
    rng = np.random.default_rng(0)
    groups = rng.permutation(20).tolist()
    order = [g * 10 + r for g in groups for r in rng.permutation(10).tolist()]
    loader = io.DataLoader(ds, batch_size=5, sampler=order, num_workers=1, prefetch_factor=1)
    ids = [i for batch in loader for i in batch["id"].tolist()]
    assert ids == order
    # Each group once, in first-use order (row order would read group g + 1
    # after g), all but the first before a worker asked for it.
    assert ds._native.row_group_read_log == groups
    stats = ds.stats()
    assert stats["row_group_reads"] == 20
    assert stats["row_group_reads_ahead"] >= 18
    assert stats["row_groups_held"] <= 4


def run_with_slow_reads(folder, then):
    """Runs, in a child process (so that a hang is a timeout, not a hung
    suite), a loader over the Parquet files of `folder` whose row group
    reads after the first sleep 0.3 s in the Python read (the GIL let go,
    as pyarrow lets it go), takes its first batch, waits until a read ahead
    is inside the read, prints "ready" and runs the lines `then` (with
    `ds`, `loader` and `batches`)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import gc, sys, threading, time
        from feedline import io
        from feedline.io import columnar
        started = threading.Event()
        read = columnar._ParquetRowGroups.__call__
        def slow(self, g):
            if g > 0:
                started.set()
                time.sleep(0.3)
            return read(self, g)
        columnar._ParquetRowGroups.__call__ = slow
        ds = io.ParquetDataset({os.path.join(folder, "*.parquet")!r}, columns=["id"], readahead=3)
        loader = io.DataLoader(ds, batch_size=5, num_workers=2)
        batches = iter(loader)
        next(batches)
        assert started.wait(10)
        print("ready", flush=True)
    """) + textwrap.dedent(then)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)


def test_a_dataset_freed_while_a_read_ahead_runs_waits_for_it_and_ends(tmp_path):
    # The dataset freed by Python, the GIL held, while a reader thread is
    # inside the Python read (which needs the GIL to return): it must let
    # the GIL go while it waits, else neither ever ends.
    write(str(tmp_path), rows(200, seed=5), files=2, row_group_size=10)
    done = run_with_slow_reads(str(tmp_path), """
        del batches
        loader.close()
        del loader, ds
        gc.collect()
        print("freed")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ready", "freed"]


@pytest.mark.parametrize("ending", ["exit", "interrupt"])
def test_a_process_that_ends_while_reads_ahead_run_exits_cleanly(tmp_path, ending):
    # Left mid-epoch (sys.exit, or Ctrl-C's KeyboardInterrupt) while the
    # dataset's reader threads are inside the Python read: they are stopped
    # and joined before the interpreter finalizes (a reader taking the GIL
    # after that crashed the process: a segfault or a corrupted heap in 6
    # of 8 interrupted runs).
    write(str(tmp_path), rows(200, seed=6), files=2, row_group_size=10)
    done = run_with_slow_reads(str(tmp_path), "sys.exit(0)" if ending == "exit"
                               else "raise KeyboardInterrupt")
    assert done.stdout.strip() == "ready"
    # An uncaught KeyboardInterrupt ends Python by SIGINT, once finalized.
    assert done.returncode == (0 if ending == "exit" else -2), (done.returncode, done.stderr)
    assert "Fatal" not in done.stderr and "corrupted" not in done.stderr, done.stderr


def test_worker_processes_read_the_same_rows(tmp_path):
    data = rows(60, seed=10)
    write(str(tmp_path), data, files=2)
    ds = io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["id", "text"])
    loader = io.DataLoader(ds, batch_size=7, num_workers=2, worker_mode="process")
    got = [(i, t) for batch in loader for i, t in zip(batch["id"].tolist(), batch["text"])]
    assert got == list(zip(range(60), data["text"]))


def test_batches_hold_strings_as_lists_of_str(tmp_path):
    data = rows(30, seed=3)
    write(str(tmp_path), data, files=1)
    ds = io.ParquetDataset(str(tmp_path / "part-0.parquet"), columns=["text", "id"])
    batch = next(iter(io.DataLoader(ds, batch_size=4, num_workers=1)))
    assert batch["text"] == data["text"][:4]
    assert batch["id"].tolist() == [0, 1, 2, 3]


def test_a_parquet_dataset_packs_every_token_once_for_any_worker_count(tmp_path):
    data = rows(300, seed=4)
    write(str(tmp_path), data)
    ds = io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["input_ids"],
                           max_row_groups=2)
    epochs = []
    for workers in (0, 2):
        loader = io.DataLoader(ds, batch_size=4, shuffle=True, num_workers=workers, seed=5,
                               pack=io.PackOptions(128, max_segments=8))
        tokens = []
        for batch in loader:
            tokens += batch["input_ids"][batch["segment_ids"] != 0].tolist()
        epochs.append(tokens)
    assert epochs[0] == epochs[1]
    assert sorted(epochs[0]) == sorted(np.concatenate(data["input_ids"]).tolist())


def test_packing_in_file_order_reads_each_row_group_once_an_epoch(tmp_path):
    """pack= tells the documents' dataset the order its rows read them in, so
    that at the default settings (max_row_groups=4, readahead=1, best_fit
    over 64 open rows) each row group is read once an epoch, with 0 and 2
    workers and after a resume, though the rows still open hold documents of
    more groups than are held: the few they still need are kept."""
    data = rows(2000, seed=6)
    write(str(tmp_path), data, files=2, row_group_size=100)

    def loader_of(workers):
        ds = io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["input_ids"])
        return ds, io.DataLoader(ds, batch_size=4, num_workers=workers, seed=3,
                                 pack=io.PackOptions(64))

    def tokens(batch):
        return batch["input_ids"][batch["segment_ids"] != 0].tolist()

    epochs = {}
    for workers in (0, 2):
        ds, loader = loader_of(workers)
        assert ds.num_row_groups == 20
        for epoch in range(2):
            epochs[workers, epoch] = [tokens(b) for b in loader]
            assert ds.stats()["row_group_reads"] == 20 * (epoch + 1), (workers, epoch)
        stats = ds.stats()
        assert stats["row_groups_held"] <= 4
        # The rows kept for rows still open are let go as the plan passes them.
        assert stats["rows_kept"] == 0 and stats["kept_bytes"] == 0
    assert epochs[0, 0] == epochs[2, 0] == epochs[0, 1] == epochs[2, 1]
    assert sorted(sum(epochs[0, 0], [])) == sorted(np.concatenate(data["input_ids"]).tolist())

    _, first = loader_of(2)
    it = iter(first)
    head = [tokens(next(it)) for _ in range(40)]
    state = first.state_dict()
    resumed_ds, resumed = loader_of(2)
    resumed.load_state_dict(state)
    assert head + [tokens(b) for b in resumed] == epochs[0, 0]
    assert resumed_ds.stats()["row_group_reads"] <= 20


def test_a_shard_order_shuffle_reads_each_row_group_once_an_epoch(tmp_path):
    """ShardOrderSampler over a ParquetDataset: its files in a random order,
    their rows through a shuffle buffer of a row group's rows (the default
    window). Every row once an epoch, another order each epoch, the same
    batches for 0 and 2 workers and on resume, and each row group read once
    an epoch at the default max_row_groups, where a full shuffle reads a
    group for most rows; with pack=, every token once and each group read
    once when a group holds more documents than the packer's open rows."""
    from feedline.vision.datasets import ShardOrderSampler

    data = rows(1200, seed=9)
    write(str(tmp_path), data, files=4, row_group_size=50)
    pattern = str(tmp_path / "*.parquet")

    def ids_of(loader):
        return [b["id"].tolist() for b in loader]

    epochs = {}
    for workers in (0, 2):
        ds = io.ParquetDataset(pattern, columns=["id", "input_ids"])
        assert ds.file_starts.tolist() == [0, 300, 600, 900]
        assert ds.row_group_rows.tolist() == [50] * 24
        sampler = ShardOrderSampler(ds, seed=4)
        assert sampler.window == 50
        loader = io.DataLoader(ds, batch_size=16, sampler=sampler, num_workers=workers)
        for epoch in range(2):
            epochs[workers, epoch] = ids_of(loader)
            assert sorted(sum(epochs[workers, epoch], [])) == list(range(1200))
            assert ds.stats()["row_group_reads"] == 24 * (epoch + 1), (workers, epoch)
    assert epochs[0, 0] == epochs[2, 0] and epochs[0, 1] == epochs[2, 1]
    assert epochs[0, 0] != epochs[0, 1]
    order = sum(epochs[0, 0], [])
    assert order != sorted(order)
    # Files stream one after another: the rows of the first 300 come from
    # at most two files (the first and the one starting as it ends).
    assert len({i // 300 for i in order[:300]}) <= 2

    shuffled = io.ParquetDataset(pattern, columns=["id"])
    full = io.DataLoader(shuffled, batch_size=16, shuffle=True, seed=4)
    assert sorted(sum(ids_of(full), [])) == list(range(1200))
    assert shuffled.stats()["row_group_reads"] > 10 * 24

    ds = io.ParquetDataset(pattern, columns=["id", "input_ids"])
    first = io.DataLoader(ds, batch_size=16, sampler=ShardOrderSampler(ds, seed=4), seed=1)
    it = iter(first)
    head = [next(it)["id"].tolist() for _ in range(30)]
    state = first.state_dict()
    again = io.ParquetDataset(pattern, columns=["id", "input_ids"])
    resumed = io.DataLoader(again, batch_size=16, sampler=ShardOrderSampler(again, seed=4),
                            seed=1)
    resumed.load_state_dict(state)
    assert head + ids_of(resumed) == epochs[0, 0]

    # Packing: groups of 500 documents, more than the packer's 64 open rows
    # of 64 tokens hold (about 200), as a corpus's groups of ~1,000 documents
    # hold more than 64 rows of 2048 tokens do (~400).
    docs = rows(4000, seed=10)
    folder = tmp_path / "packed"
    folder.mkdir()
    write(str(folder), docs, files=4, row_group_size=500)
    for workers in (0, 2):
        tokens = io.ParquetDataset(str(folder / "*.parquet"), columns=["input_ids"])
        packed = io.DataLoader(tokens, batch_size=4, sampler=ShardOrderSampler(tokens, seed=4),
                               num_workers=workers, pack=io.PackOptions(64))
        got = [b["input_ids"][b["segment_ids"] != 0] for b in packed]
        assert sorted(np.concatenate(got).tolist()) == \
            sorted(np.concatenate(docs["input_ids"]).tolist())
        assert tokens.stats()["row_group_reads"] == 8, workers


def test_a_shard_order_sampler_names_what_it_cannot_take(tmp_path):
    from feedline.vision.datasets import ShardOrderSampler

    with pytest.raises(TypeError, match="ShardOrderSampler needs a ShardDataset or a "
                                        "ParquetDataset, got list"):
        ShardOrderSampler([1, 2, 3])
    empty = rows(0, seed=1)
    write(str(tmp_path), empty, files=1)
    with pytest.raises(ValueError, match="ShardOrderSampler: the ParquetDataset has no rows"):
        ShardOrderSampler(io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["id"]))
    data = rows(40, seed=2)
    write(str(tmp_path), data, files=2)
    with pytest.raises(ValueError, match="window"):
        ShardOrderSampler(io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["id"]),
                          window=0)


def test_packing_a_mix_reads_each_sources_row_groups_once_an_epoch(tmp_path):
    """A MixedDataset passes the loader's plan on to its sources, split:
    packing a mix of two Parquet corpora reads each row group once an epoch,
    as packing either alone does."""
    web, code = rows(1200, seed=7), rows(800, seed=8)
    for name in ("web", "code"):
        os.makedirs(tmp_path / name)
    write(str(tmp_path / "web"), web, files=2, row_group_size=100)
    write(str(tmp_path / "code"), code, files=1, row_group_size=100)
    sources = [io.ParquetDataset(str(tmp_path / name / "*.parquet"), columns=["input_ids"])
               for name in ("web", "code")]
    assert [s.num_row_groups for s in sources] == [12, 8]
    mix = io.MixedDataset(sources, [0.6, 0.4], stopping="all_exhausted")
    loader = io.DataLoader(mix, batch_size=4, num_workers=2, seed=3, pack=io.PackOptions(64))
    every = np.concatenate(web["input_ids"] + code["input_ids"]).tolist()
    for epoch in range(2):
        tokens = [t for b in loader for t in b["input_ids"][b["segment_ids"] != 0].tolist()]
        assert sorted(tokens) == sorted(every)
        assert [s.stats()["row_group_reads"] for s in sources] == [12 * (epoch + 1),
                                                                  8 * (epoch + 1)], epoch


def test_token_budget_batches_over_a_length_column(tmp_path):
    data = rows(120, seed=6)
    write(str(tmp_path), data)
    ds = io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["input_ids", "id"],
                           length_column="num_tokens")
    sampler = io.DynamicBatchSampler(ds, max_tokens=100, shuffle=False)
    assert sampler.lengths is None  # read in C++, no Python list
    seen = []
    for batch in io.DataLoader(ds, batch_sampler=sampler, num_workers=2):
        lengths = [len(data["input_ids"][i]) for i in batch["id"].tolist()]
        assert max(lengths) * len(lengths) <= 100 or len(lengths) == 1
        seen += batch["id"].tolist()
    assert sorted(seen) == list(range(120))


def test_feedline_torch_gives_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    import feedline.torch as ft

    data = rows(20, seed=7)
    write(str(tmp_path), data, files=1)
    ds = io.ParquetDataset(str(tmp_path / "part-0.parquet"), columns=["input_ids", "score"])
    batch = next(iter(ft.DataLoader(ds, batch_size=4, num_workers=2)))
    assert isinstance(batch["input_ids"], torch.Tensor)
    assert batch["score"].dtype == torch.float32


def test_pickled_it_reads_the_same_files(tmp_path):
    data = rows(40, seed=8)
    write(str(tmp_path), data, files=2)
    ds = io.ParquetDataset(str(tmp_path / "*.parquet"), columns=["input_ids", "text"])
    again = pickle.loads(pickle.dumps(ds))
    assert len(again) == 40 and again[39]["text"] == data["text"][39]
    assert again[5]["input_ids"].tolist() == data["input_ids"][5].tolist()


def test_errors_name_the_file_the_column_and_the_reason(tmp_path):
    data = rows(20, seed=9)
    (path,) = write(str(tmp_path), data, files=1)
    with pytest.raises(ValueError, match=r"part-0\.parquet has no column 'tokens' \(its "
                                         r"columns: input_ids, id"):
        io.ParquetDataset(path, columns=["tokens"])
    floats = str(tmp_path / "floats.parquet")
    pq.write_table(pa.table({"x": pa.array([[1.0], [2.0]], pa.list_(pa.float32()))}), floats)
    with pytest.raises(TypeError, match=r"floats\.parquet: column 'x' is list<.*float>: a list "
                                          "column must hold integers"):
        io.ParquetDataset(floats)
    nested = str(tmp_path / "nested.parquet")
    pq.write_table(pa.table({"s": pa.array([{"a": 1}])}), nested)
    with pytest.raises(TypeError, match=r"nested\.parquet: column 's' is struct.* not read "
                                        "natively"):
        io.ParquetDataset(nested)
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match=r"junk\.parquet: not a readable Parquet file"):
        io.ParquetDataset(str(junk))
    with pytest.raises(FileNotFoundError, match="no file matches"):
        io.ParquetDataset(str(tmp_path / "none-*.parquet"))
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"input_ids": pa.array([[1]], pa.list_(pa.int64()))}),
                   str(other / "a.parquet"))
    pq.write_table(pa.table({"input_ids": pa.array([1], pa.int64())}), str(other / "b.parquet"))
    with pytest.raises(TypeError, match=r"b\.parquet: column 'input_ids' is int64, unlike in "
                                        r".*a\.parquet"):
        io.ParquetDataset(str(other / "*.parquet"))


def test_a_row_group_with_nulls_is_a_sample_error_naming_it(tmp_path):
    path = str(tmp_path / "nulls.parquet")
    pq.write_table(pa.table({"input_ids": pa.array([[1, 2], [3], None, [4]],
                                                   pa.list_(pa.int32()))}), path,
                   row_group_size=2)
    ds = io.ParquetDataset(path, lengths_from=None, length_column=None)
    assert ds[0]["input_ids"].tolist() == [1, 2]
    with pytest.raises(feedline.SampleError,
                       match=r"nulls\.parquet, row group 1: column 'input_ids' has 1 null rows"):
        ds[3]


def test_an_int64_token_beyond_32_bits_is_a_sample_error_naming_the_document(tmp_path):
    """Packing reads an int64 token column in place, and refuses a token
    TokenDataset would refuse."""
    path = str(tmp_path / "wide.parquet")
    tokens = [[1, 2, 3], [4, 2**40, 6], [7, 8]]
    pq.write_table(pa.table({"input_ids": pa.array(tokens, pa.list_(pa.int64()))}), path)
    ds = io.ParquetDataset(path)
    loader = io.DataLoader(ds, batch_size=1, pack=io.PackOptions(4))
    with pytest.raises(feedline.SampleError,
                       match=r"document 1 \(.*wide\.parquet, row group 0, row 1\)\): schema: "
                             r"field \"input_ids\" holds token 1099511627776 at 1, which does "
                             r"not fit in 32 bits"):
        list(loader)
    packed = io.DataLoader(ds, batch_size=1, pack=io.PackOptions(4), error_policy="skip")
    assert sorted(t for b in packed for t in b["input_ids"][b["segment_ids"] != 0].tolist()) \
        == [1, 2, 3, 7, 8]


@pytest.mark.parametrize("error", [-2, +3])
def test_a_length_column_that_disagrees_with_its_document_is_a_sample_error(tmp_path, error):
    """Shorter or longer than the tokens, the length is refused when the
    document is packed: no token is dropped or invented silently."""
    path = str(tmp_path / "lengths.parquet")
    tokens = [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10]]
    lengths = [len(t) for t in tokens]
    lengths[0] += error
    pq.write_table(pa.table({"input_ids": pa.array(tokens, pa.list_(pa.int32())),
                             "n": pa.array(lengths, pa.int64())}), path)
    ds = io.ParquetDataset(path, columns=["input_ids"], length_column="n")
    loader = io.DataLoader(ds, batch_size=1, pack=io.PackOptions(16))
    with pytest.raises(feedline.SampleError,
                       match=rf"document 0 has 5 tokens, but its length said {5 + error}"):
        list(loader)
    skipping = io.DataLoader(ds, batch_size=1, pack=io.PackOptions(16), error_policy="skip")
    assert sum(int((b["segment_ids"] != 0).sum()) for b in skipping) <= 5


def test_a_folder_given_as_a_path_is_an_error_saying_so(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    pq.write_table(pa.table({"input_ids": pa.array([[1]], pa.list_(pa.int64()))}),
                   str(folder / "a.parquet"))
    with pytest.raises((ValueError, IsADirectoryError), match=r"corpus is a folder.*corpus/\*\.parquet"):
        io.ParquetDataset(str(folder))


def test_a_corrupt_data_page_is_an_error_naming_the_file_row_group_and_column(tmp_path):
    path = str(tmp_path / "corrupt.parquet")
    pq.write_table(pa.table({"input_ids": pa.array([[1, 2, 3]] * 40, pa.list_(pa.int32())),
                             "n": pa.array([3] * 40, pa.int64())}), path, row_group_size=20)
    page = pq.ParquetFile(path).metadata.row_group(1).column(0).data_page_offset
    with open(path, "r+b") as f:  # the page header of input_ids in row group 1
        f.seek(page)
        f.write(b"\xff" * 16)
    ds = io.ParquetDataset(path, length_column="n")
    assert ds[0]["input_ids"].tolist() == [1, 2, 3]  # row group 0 is whole
    with pytest.raises(feedline.SampleError,
                       match=r"corrupt\.parquet, row group 1: column 'input_ids' unreadable \("):
        ds[25]
