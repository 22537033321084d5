"""A Hugging Face datasets.Dataset loaded from its Arrow table in C++: the
one-line swap (feedline.torch.DataLoader(hf_dataset, ...)) recognizes it and
reads the table's columns as a ColumnarDataset (columnar.py), honoring the
dataset's selected columns and indices mapping (select, shuffle, filter).
What cannot be read so (a transform, a format that is not numpy / torch /
plain, a column type without a native form, a collate_fn) runs in Python as
before, and the log says why. `datasets` is never imported here: a dataset
is recognized by its class."""

import numpy as np

from feedline.io.columnar import ArrowRowGroups, ColumnarSamples, column_of, list_lengths

_NATIVE_FORMATS = (None, "python", "numpy", "torch")


def is_hf_dataset(dataset):
    """Whether `dataset` is a datasets.Dataset (map-style, Arrow-backed)."""
    return any(c.__name__ == "Dataset" and c.__module__.split(".")[0] == "datasets"
               for c in type(dataset).__mro__)


class ArrowTableDataset(ColumnarSamples):
    """The rows of an Arrow table (or of its rows `row_map` selects), the
    columns `columns` as the samples' fields, read in C++ record batch by
    record batch. Lengths (for pack= and DynamicBatchSampler) are the list
    lengths of the first list column."""

    def __init__(self, table, columns, row_map=None, what="Arrow table"):
        from feedline import _feedline

        kinds = [column_of(c, table.schema.field(c).type, what) for c in columns]
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


def _native_form(dataset):
    """(ArrowTableDataset, description) for a datasets.Dataset, or raises
    _StaysInPython with the reason."""
    fmt = dataset.format
    kind = fmt.get("type")
    if kind not in _NATIVE_FORMATS:
        raise _StaysInPython(f"its format is {kind!r} (native: numpy, torch or none)"
                             if kind != "custom" else "it has a transform (set_transform / "
                             "with_transform)")
    if fmt.get("format_kwargs"):
        raise _StaysInPython(f"its format has arguments {fmt['format_kwargs']!r}")
    columns = list(dataset.column_names)
    if fmt.get("columns") is not None and not fmt.get("output_all_columns"):
        columns = [c for c in fmt["columns"]]
    table = dataset.data.table
    for name in columns:
        nulls = table.column(name).null_count
        if nulls:
            raise _StaysInPython(f"column {name!r} has {nulls} nulls (None in Python)")
    row_map = None
    if dataset._indices is not None:
        row_map = np.asarray(dataset._indices.column(0).to_numpy(), dtype=np.int64)
    try:
        native = ArrowTableDataset(table, columns, row_map, "datasets.Dataset's Arrow table")
    except TypeError as error:
        raise _StaysInPython(str(error).split(": ", 1)[-1]) from None
    selected = "" if row_map is None else f", {len(row_map)} selected by its indices"
    return native, f"{table.num_rows} rows{selected}, columns {', '.join(columns)}"


class _StaysInPython(Exception):
    pass


def native_documents(dataset):
    """The native dataset of a datasets.Dataset's rows, or None when it is
    not one or cannot be read natively (for pack=, which otherwise reads a
    Python dataset's documents once through __getitem__)."""
    if not is_hf_dataset(dataset):
        return None
    try:
        return _native_form(dataset)[0]
    except _StaysInPython:
        return None


def lower(dataset, framework, collate_fn=None, enabled=True):
    """(dataset to load, Lowering), or (dataset, None) when `dataset` is not
    a datasets.Dataset."""
    if not is_hf_dataset(dataset):
        return dataset, None
    from feedline.frontends.lowering import Lowering

    name = "datasets.Dataset"
    try:
        if not enabled:
            raise _StaysInPython("native_transforms=False")
        if collate_fn is not None:
            raise _StaysInPython("a collate_fn is given, and it would receive numpy arrays "
                                 "where the dataset gives its own format")
        native, description = _native_form(dataset)
    except _StaysInPython as stay:
        reason = str(stay)
    except Exception as error:  # a dataset this module misreads still loads, as it is
        reason = f"inspecting it raised {type(error).__name__}: {error}"
    else:
        summary = (f"feedline.{framework}: {name} ({description}) loads natively from its "
                   "Arrow table")
        return native, Lowering(summary, ["Arrow table"], [], native=True)
    summary = f"feedline.{framework}: {name} runs in Python: {reason}"
    return dataset, Lowering(summary, [], [name], native=False, reason=reason)
