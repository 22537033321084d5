"""A Hugging Face datasets.Dataset loaded from its Arrow table in C++: the
one-line swap (feedline.torch.DataLoader(hf_dataset, ...)) recognizes it and
reads the table's columns as a ColumnarDataset (columnar.py), honoring the
dataset's selected columns and indices mapping (select, shuffle, filter),
its numbers in the dtypes torch's DataLoader gives under its format
(scalar_dtypes).
What cannot be read so (a transform, a format that is not numpy / torch /
plain, a column type without a native form, a collate_fn) runs in Python as
before, and the log says why. `datasets` is never imported here: a dataset
is recognized by its class.

A datasets.IterableDataset is read natively when its examples come straight
from Arrow data feedline can open: local Parquet files (load_dataset(
"parquet", ..., streaming=True)) or a datasets.Dataset's shards
(Dataset.to_iterable_dataset()), with no map, filter, shuffle, skip, take or
split by node over them. It then loads as the map-style dataset of its rows
in the stream's order (file by file, row group by row group), so that
state_dict() / load_state_dict() resume it exactly as any other; anything
else is iterated in Python as before, and the log says which."""

import itertools
import os

import numpy as np

from feedline.io.columnar import (ArrowRowGroups, ColumnarSamples, column_of, given_as,
                                   list_lengths)

_NATIVE_FORMATS = (None, "python", "numpy", "torch")
# Formats whose formatter makes arrays of the columns it formats
# (datasets/formatting/np_formatter.py, torch_formatter.py).
_TENSOR_FORMATS = ("numpy", "torch")


def is_hf_dataset(dataset):
    """Whether `dataset` is a datasets.Dataset (map-style, Arrow-backed)."""
    return any(c.__name__ == "Dataset" and c.__module__.split(".")[0] == "datasets"
               for c in type(dataset).__mro__)


class ArrowTableDataset(ColumnarSamples):
    """The rows of an Arrow table (or of its rows `row_map` selects), the
    columns `columns` as the samples' fields, read in C++ record batch by
    record batch. `dtypes` maps a scalar column to the dtype (columnar.py's
    codes) its values are given as, when not its own (scalar_dtypes()).
    Lengths (for pack= and DynamicBatchSampler) are the list lengths of the
    first list column."""

    def __init__(self, table, columns, row_map=None, what="Arrow table", dtypes=None):
        from feedline import _feedline

        kinds = [column_of(c, table.schema.field(c).type, what) for c in columns]
        given_as(kinds, dtypes)
        groups = ArrowRowGroups(table.select(list(columns)), kinds, what)
        lengths = None
        lists = [k.name for k in kinds if k.kind == "list"]
        if lists:
            lengths = list_lengths(table.column(lists[0]))
            if row_map is not None:
                lengths = lengths[row_map]
        native = _feedline.text.ColumnarDataset(
            groups, groups.rows, groups.names, [k.spec() for k in kinds],
            max(1, len(groups.rows)), 0, row_map, lengths)
        super().__init__(native)
        self.columns = list(columns)

    @property
    def lengths(self):
        from feedline import _feedline

        return _feedline.text.lengths_of(self._native)


def scalar_dtypes(schema, columns, format_type, formatted=None):
    """{column: dtype code} for the scalar columns among `columns` (of the
    Arrow `schema`) whose values torch's DataLoader gives in another dtype
    than the column's own, under datasets' format `format_type`; the
    columns not in `formatted` (set_format(columns=..., output_all_columns=
    True)) are given unformatted, as Python objects.

    torch's loader collates what datasets gives: the rows of __getitems__,
    which formats the batch's rows together (format_batch), for a Dataset,
    and the formatted rows of a stream. Unformatted, numbers are Python
    ints and floats, which default_collate makes int64 and float64 (a
    float16 column's values are numpy float16 scalars, and stay float16).
    The numpy and torch formatters make every integer array int64 and every
    floating array float32 (uint64 values above int64's range wrap, in both
    and here). bool stays bool in all three. Lists of integers are int64
    already (the C++ side widens them).

    The cast is numpy's, of a record batch's column when the batch is read
    (columnar.column_buffers), not of each batch the loader delivers: a
    scalar column is small (4 or 8 bytes a row, held as the cast copy
    rather than a view of the table, as bool and uint32 columns always
    are), and list columns, the large ones, are never cast. float64 to
    float32 rounds to nearest as torch.tensor does; the other casts are
    exact."""
    import pyarrow as pa

    dtypes = {}
    for name in columns:
        kind = schema.field(name).type
        tensors = format_type in _TENSOR_FORMATS and (formatted is None or name in formatted)
        if pa.types.is_integer(kind):
            wanted = "i64"
        elif pa.types.is_floating(kind):
            wanted = "f32" if tensors else "f16" if pa.types.is_float16(kind) else "f64"
        else:
            continue
        if column_of(name, kind, "").dtype != wanted:
            dtypes[name] = wanted
    return dtypes


def is_hf_iterable_dataset(dataset):
    """Whether `dataset` is a datasets.IterableDataset (streaming)."""
    return any(c.__name__ == "IterableDataset" and c.__module__.split(".")[0] == "datasets"
               for c in type(dataset).__mro__)


def native_form(dataset):
    """(ArrowTableDataset, description) for a datasets.Dataset, or raises
    StaysInPython with the reason."""
    table, columns, row_map = _table_of(dataset)
    fmt = dataset.format
    formatted = fmt.get("columns") if fmt.get("output_all_columns") else None
    dtypes = scalar_dtypes(table.schema, columns, fmt.get("type"), formatted)
    try:
        native = ArrowTableDataset(table, columns, row_map, "datasets.Dataset's Arrow table",
                                   dtypes)
    except TypeError as error:
        raise StaysInPython(str(error).split(": ", 1)[-1]) from None
    selected = "" if row_map is None else f", {len(row_map)} selected by its indices"
    return native, f"{table.num_rows} rows{selected}, columns {', '.join(columns)}"


def _table_of(dataset, check_format=True):
    """(Arrow table, columns, row map or None) of a datasets.Dataset, or
    raises StaysInPython with the reason."""
    fmt = dataset.format
    if not check_format:
        fmt = {"type": None, "columns": None}
    kind = fmt.get("type")
    if kind not in _NATIVE_FORMATS:
        raise StaysInPython(f"its format is {kind!r} (native: numpy, torch or none)"
                             if kind != "custom" else "it has a transform (set_transform / "
                             "with_transform)")
    if fmt.get("format_kwargs"):
        raise StaysInPython(f"its format has arguments {fmt['format_kwargs']!r}")
    columns = list(dataset.column_names)
    if fmt.get("columns") is not None and not fmt.get("output_all_columns"):
        columns = [c for c in fmt["columns"]]
    table = dataset.data.table
    for name in columns:
        nulls = table.column(name).null_count
        if nulls:
            raise StaysInPython(f"column {name!r} has {nulls} nulls (None in Python)")
    row_map = None
    if dataset._indices is not None:
        row_map = np.asarray(dataset._indices.column(0).to_numpy(), dtype=np.int64)
    return table, columns, row_map


def native_iterable_form(dataset):
    """(native dataset, description) for a datasets.IterableDataset, or
    raises StaysInPython with the reason."""
    if dataset._shuffling is not None:
        raise StaysInPython("it is shuffled (IterableDataset.shuffle: a buffer shuffle "
                             "of its own)")
    if dataset._distributed is not None:
        raise StaysInPython("it is split by node (split_dataset_by_node)")
    kind = dataset._formatting.format_type if dataset._formatting is not None else None
    if kind not in _NATIVE_FORMATS:
        raise StaysInPython(f"its format is {kind!r} (native: numpy, torch or none)")
    examples = dataset._ex_iterable
    if type(examples).__name__ != "ArrowExamplesIterable":
        raise StaysInPython(f"its examples come through {type(examples).__name__} (a map, "
                             "filter, shuffle, skip, take or a generator over them)")
    tables = examples.generate_tables_fn
    builder = getattr(tables, "__self__", None)
    if getattr(tables, "__name__", "") == "_generate_tables_from_shards":
        return _shards_form(examples.kwargs["shards"], kind)
    if (builder is not None and type(builder).__name__ == "Parquet"
            and type(builder).__module__.startswith("datasets.packaged_modules.parquet")):
        return _parquet_form(dataset, builder, examples.kwargs["files"], kind)
    raise StaysInPython(f"its examples come from {getattr(tables, '__qualname__', tables)}, "
                         "not Parquet files or a datasets.Dataset")


def _shards_form(shards, format_type):
    """The rows of a datasets.Dataset's shards, one after another, as the
    stream's format `format_type` gives them."""
    import pyarrow as pa

    parts = [_table_of(shard, check_format=False) for shard in shards]
    columns = parts[0][1]
    if any(p[1] != columns for p in parts):
        raise StaysInPython("its shards have other columns")
    tables = [table.select(columns) for table, _, _ in parts]
    row_map = None
    if any(r is not None for _, _, r in parts):
        maps, start = [], 0
        for table, _, r in parts:
            maps.append(start + (np.arange(table.num_rows, dtype=np.int64) if r is None else r))
            start += table.num_rows
        row_map = np.concatenate(maps)
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    what = "datasets.IterableDataset's Arrow table"
    try:
        native = ArrowTableDataset(table, columns, row_map, what,
                                   scalar_dtypes(table.schema, columns, format_type))
    except TypeError as error:
        raise StaysInPython(str(error).split(": ", 1)[-1]) from None
    rows = table.num_rows if row_map is None else len(row_map)
    return native, (f"{len(shards)} shard{'s' * (len(shards) > 1)} of a datasets.Dataset, "
                    f"{rows} rows, columns {', '.join(columns)}")


def _parquet_form(dataset, builder, file_lists, format_type):
    """A ParquetDataset over the local Parquet files the stream reads, as
    its format `format_type` gives them."""
    import pyarrow.parquet as pq

    from feedline.io.columnar import ParquetDataset

    config = builder.config
    if config.filters is not None:
        raise StaysInPython(f"it filters rows ({config.filters!r})")
    files = list(itertools.chain.from_iterable(file_lists))
    remote = [f for f in files if not os.path.isfile(f)]
    if remote:
        raise StaysInPython(f"{remote[0]} is not a local file")
    if not files:
        raise StaysInPython("it reads no files")
    columns = list(config.columns) if config.columns else None
    features = dataset.features
    schema = pq.read_schema(files[0])
    if features is not None:
        # The stream casts each table to its features: natively, only when
        # that changes nothing.
        wanted = features.arrow_schema
        for field in wanted:
            if field.name in schema.names and schema.field(field.name).type != field.type:
                raise StaysInPython(f"its features cast column {field.name!r} from "
                                     f"{schema.field(field.name).type} to {field.type}")
        if columns is None:
            columns = [f.name for f in wanted]
    named = [c for c in (columns or schema.names) if c in schema.names]
    try:
        native = ParquetDataset(files, columns=columns,
                                _dtypes=scalar_dtypes(schema, named, format_type))
    except (TypeError, ValueError) as error:
        raise StaysInPython(str(error).split(": ", 1)[-1]) from None
    return native, (f"{len(files)} Parquet file{'s' * (len(files) > 1)}, {len(native)} rows, "
                    f"columns {', '.join(native.columns)}")


class StaysInPython(Exception):
    """Why a dataset is not read natively (its message says)."""


def native_documents(dataset):
    """The native dataset of a datasets.Dataset's rows, or None when it is
    not one or cannot be read natively (for pack=, which otherwise reads a
    Python dataset's documents once through __getitem__)."""
    if not is_hf_dataset(dataset):
        return None
    try:
        return native_form(dataset)[0]
    except StaysInPython:
        return None
