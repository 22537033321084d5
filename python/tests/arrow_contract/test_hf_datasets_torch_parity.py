"""feedline.torch.DataLoader over a Hugging Face datasets.Dataset gives the
batches torch.utils.data.DataLoader gives: a tokenized dataset with a
padding collate_fn (the rows reach it as datasets formats them, ragged
Python lists included), and the dtypes datasets' formats give the columns
read natively (float32 and int64 under "numpy" and "torch", float64 and
int64 under no format)."""

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import feedline.torch as ft


def same(a, b, where="batch"):
    """Asserts that two batches are equal: the same types and structure,
    tensors of the same dtype, shape and values. Strings may be str or
    numpy.str_ (a str, which datasets' numpy format gives)."""
    if isinstance(a, str) and isinstance(b, str):
        assert str(a) == str(b), f"{where}: {a!r} != {b!r}"
        return
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype, f"{where}: {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"{where}: {tuple(a.shape)} != {tuple(b.shape)}"
        assert torch.equal(a, b), f"{where}: {a} != {b}"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: {len(a)} != {len(b)} elements"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def batches(loader):
    return list(loader)


# A tokenized dataset and a padding collate_fn, as a tokenizer's map and a
# DataCollatorWithPadding-like function make them.

def tokenized(n=70, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "input_ids": [rng.integers(1, 30000, int(k)).tolist() for k in rng.integers(1, 40, n)],
        "label": [int(x) for x in rng.integers(0, 2, n)],
    }


def pad(rows):
    """Pads input_ids to the longest of the batch; also says what each
    row's fields were, so that a row delivered in another type than the
    dataset gives (an array for a list, a tensor for an int) is seen."""
    longest = max(len(row["input_ids"]) for row in rows)
    ids = torch.zeros(len(rows), longest, dtype=torch.long)
    mask = torch.zeros(len(rows), longest, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, :len(row["input_ids"])] = torch.as_tensor(row["input_ids"])
        mask[i, :len(row["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([int(row["label"]) for row in rows]),
            "types": [(type(row).__name__, type(row["input_ids"]).__name__,
                       type(row["label"]).__name__) for row in rows]}


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_a_tokenized_dataset_with_a_padding_collate_fn_gives_torchs_batches(workers):
    ds = datasets.Dataset.from_dict(tokenized())
    want = batches(torch.utils.data.DataLoader(ds, batch_size=16, collate_fn=pad,
                                               num_workers=workers))
    assert want[0]["types"][0] == ("dict", "list", "int")
    loader = ft.DataLoader(ds, batch_size=16, collate_fn=pad, num_workers=workers)
    same(batches(loader), want)
    # The collate_fn receives the dataset's rows, so the dataset runs in Python.
    native = loader.stats()["native_transforms"]
    assert native["native"] is False and "collate_fn" in native["reason"]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_list_of_tokenized_dicts_with_a_padding_collate_fn_gives_torchs_batches(workers):
    columns = tokenized(seed=1)
    rows = [{"input_ids": ids, "label": label}
            for ids, label in zip(columns["input_ids"], columns["label"])]
    want = batches(torch.utils.data.DataLoader(rows, batch_size=16, collate_fn=pad,
                                               num_workers=workers))
    same(batches(ft.DataLoader(rows, batch_size=16, collate_fn=pad, num_workers=workers)), want)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_torch_formatted_tokenized_dataset_reaches_the_collate_fn_as_tensors(workers):
    ds = datasets.Dataset.from_dict(tokenized(seed=2)).with_format("torch")
    want = batches(torch.utils.data.DataLoader(ds, batch_size=16, collate_fn=pad,
                                               num_workers=workers))
    assert want[0]["types"][0] == ("dict", "Tensor", "Tensor")
    same(batches(ft.DataLoader(ds, batch_size=16, collate_fn=pad, num_workers=workers)), want)


# Column dtypes under each format, read natively.

ROWS = 40


def typed_table(rows=ROWS, seed=3):
    rng = np.random.default_rng(seed)
    floats = rng.standard_normal(rows) * 1e3
    ints = rng.integers(-2**31, 2**31, rows)
    return pa.table({
        "f64": pa.array(floats, pa.float64()),
        "f32": pa.array(floats.astype(np.float32), pa.float32()),
        "f16": pa.array(floats.astype(np.float16), pa.float16()),
        "i32": pa.array(ints.astype(np.int32), pa.int32()),
        "i64": pa.array(ints * 3, pa.int64()),
        "i16": pa.array(ints.astype(np.int16), pa.int16()),
        "u8": pa.array(ints.astype(np.uint8), pa.uint8()),
        "u16": pa.array(ints.astype(np.uint16), pa.uint16()),
        "u32": pa.array(ints.astype(np.uint32), pa.uint32()),
        "b": pa.array(ints % 3 == 0, pa.bool_()),
        # Lists of the same length, so that torch's default_collate stacks them.
        "l32": pa.array(rng.integers(0, 50000, (rows, 5)).tolist(), pa.list_(pa.int32())),
        "l64": pa.array(rng.integers(0, 50000, (rows, 5)).tolist(), pa.list_(pa.int64())),
        "lu8": pa.array(rng.integers(0, 256, (rows, 5)).tolist(), pa.list_(pa.uint8())),
        "text": pa.array([f"row {i}" for i in range(rows)]),
    })


def unformatted_lists(batch, table):
    """torch's batch with its list columns as feedline gives them: under no
    format a row's list is a Python list, which default_collate transposes
    into one tensor per position; feedline gives the [batch, length] tensor
    (docs/text.md)."""
    out = dict(batch)
    for name in table.column_names:
        if pa.types.is_list(table.schema.field(name).type) and isinstance(out.get(name), list):
            out[name] = torch.stack(out[name], dim=1)
    return out


def expected_dtypes(fmt):
    tensors = fmt in ("numpy", "torch")
    f = torch.float32 if tensors else torch.float64
    return {"f64": f, "f32": f, "f16": torch.float32 if tensors else torch.float16,
            "i32": torch.int64, "i64": torch.int64, "i16": torch.int64, "u8": torch.int64,
            "u16": torch.int64, "u32": torch.int64, "b": torch.bool, "l32": torch.int64,
            "l64": torch.int64, "lu8": torch.int64}


@pytest.mark.parametrize("fmt", [None, "numpy", "torch"])
def test_columns_have_the_dtypes_and_values_torch_gives_under_each_format(fmt):
    table = typed_table()
    ds = datasets.Dataset(table).with_format(fmt)
    want = [unformatted_lists(b, table) for b in
            torch.utils.data.DataLoader(ds, batch_size=8)]
    loader = ft.DataLoader(ds, batch_size=8, num_workers=2)
    got = batches(loader)
    assert loader.stats()["native_transforms"]["native"] is True
    # What this test expects of torch, so that a datasets release that
    # changes its formatters is seen here first.
    for name, dtype in expected_dtypes(fmt).items():
        assert want[0][name].dtype == dtype, (fmt, name)
    same(got, want)


def test_a_selection_shuffle_and_selected_columns_keep_torchs_dtypes():
    table = typed_table(seed=4)
    ds = datasets.Dataset(table).shuffle(seed=1).select(range(5, 33))
    ds = ds.with_format("torch", columns=["f64", "i32", "u8", "b", "l32"])
    want = batches(torch.utils.data.DataLoader(ds, batch_size=6, shuffle=False))
    loader = ft.DataLoader(ds, batch_size=6)
    assert loader.stats()["native_transforms"]["native"] is True
    same(batches(loader), want)


def test_columns_outside_the_format_are_given_as_python_gives_them():
    # output_all_columns: the format's columns are tensors, the others
    # Python objects (a float32 column's values collate as float64).
    table = typed_table(seed=5)
    ds = datasets.Dataset(table).with_format("torch", columns=["f64", "i32"],
                                              output_all_columns=True)
    want = [unformatted_lists(b, table) for b in
            torch.utils.data.DataLoader(ds, batch_size=8)]
    assert want[0]["f64"].dtype == torch.float32 and want[0]["f32"].dtype == torch.float64
    loader = ft.DataLoader(ds, batch_size=8)
    assert loader.stats()["native_transforms"]["native"] is True
    got = batches(loader)
    # torch gives the format's columns first; the fields are the same.
    assert [set(b) for b in got] == [set(w) for w in want]
    same([{k: b[k] for k in w} for b, w in zip(got, want)], want)


@pytest.mark.parametrize("fmt", [None, "torch"])
def test_a_stream_of_a_datasets_shards_has_torchs_dtypes(fmt):
    table = typed_table(seed=6)
    it = datasets.Dataset(table).to_iterable_dataset(num_shards=3).with_format(fmt)
    want = [unformatted_lists(b, table) for b in
            torch.utils.data.DataLoader(it, batch_size=8)]
    loader = ft.DataLoader(it, batch_size=8)
    assert loader.stats()["native_transforms"]["native"] is True
    same(batches(loader), want)


@pytest.mark.parametrize("fmt", [None, "numpy", "torch"])
def test_a_stream_of_parquet_files_has_torchs_dtypes(tmp_path, fmt):
    table = typed_table(seed=7)
    paths = []
    for part in range(2):
        paths.append(str(tmp_path / f"part-{part}.parquet"))
        pq.write_table(table.slice(part * 20, 20), paths[-1], row_group_size=7)
    it = datasets.load_dataset("parquet", data_files=paths, split="train",
                               streaming=True).with_format(fmt)
    want = [unformatted_lists(b, table) for b in
            torch.utils.data.DataLoader(it, batch_size=8)]
    loader = ft.DataLoader(it, batch_size=8, num_workers=2)
    assert loader.stats()["native_transforms"]["native"] is True
    same(batches(loader), want)
