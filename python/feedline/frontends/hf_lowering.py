"""The one-line swap over a Hugging Face datasets.Dataset or
datasets.IterableDataset: read natively from its Arrow table or Parquet
files when feedline.io.hf_datasets can, with the Lowering that says so (or
why it stays in Python)."""

from feedline.frontends.lowering import Lowering
from feedline.io import hf_datasets as _hf


def lower_iterable(dataset, framework, collate_fn=None, enabled=True, ordering=(None,) * 3):
    """The map-style native dataset of a datasets.IterableDataset's rows
    when it can be read natively, carrying its Lowering for lower() to
    return; else `dataset` itself (the front end then iterates it, and
    lower() gives the reason). `ordering` is the loader's (shuffle, sampler,
    batch_sampler): any of them given, the stream is left as it is, for the
    front end to refuse them as it refuses them for any iterable."""
    if not _hf.is_hf_iterable_dataset(dataset):
        return dataset
    shuffle, sampler, batch_sampler = ordering
    if shuffle or sampler is not None or batch_sampler is not None:
        return dataset
    native, lowering = lower(dataset, framework, collate_fn, enabled)
    if lowering is not None and lowering.native:
        native.hf_lowering = lowering
    return native


def lower(dataset, framework, collate_fn=None, enabled=True):
    """(dataset to load, Lowering), or (dataset, None) when `dataset` is not
    a datasets.Dataset or IterableDataset."""
    lowered = getattr(dataset, "hf_lowering", None)
    if lowered is not None:  # an IterableDataset lower_iterable read natively
        return dataset, lowered
    iterable = _hf.is_hf_iterable_dataset(dataset)
    if not iterable and not _hf.is_hf_dataset(dataset):
        return dataset, None
    name = "datasets.IterableDataset" if iterable else "datasets.Dataset"
    try:
        if not enabled:
            raise _hf.StaysInPython("native_transforms=False")
        if collate_fn is not None:
            # A collate_fn is given exactly what torch's loader gives it: the
            # rows as datasets formats them (Python lists for a token column
            # under no format, however ragged; 0-d tensors under "torch";
            # Python ints, strs, decoded features ...). Native samples are
            # typed fields (int64 arrays, numpy scalars): remaking each row's
            # objects from them would be Python per row again, redoing what
            # datasets' formatters do, with every type to get right. In
            # Python, the dataset's own __getitem__ runs in the worker
            # processes, beside the collate_fn's Python per batch.
            raise _hf.StaysInPython("a collate_fn is given, and it would receive numpy arrays "
                                 "where the dataset gives its own format")
        native, description = (_hf.native_iterable_form if iterable else _hf.native_form)(dataset)
    except _hf.StaysInPython as stay:
        reason = str(stay)
    except Exception as error:  # a dataset this module misreads still loads, as it is
        reason = f"inspecting it raised {type(error).__name__}: {error}"
    else:
        source = "Parquet files" if type(native).__name__ == "ParquetDataset" else "Arrow table"
        summary = (f"feedline.{framework}: {name} ({description}) loads natively from its "
                   f"{source}" + (", in the stream's order" if iterable else ""))
        return native, Lowering(summary, [source], [], native=True)
    summary = f"feedline.{framework}: {name} runs in Python: {reason}"
    return dataset, Lowering(summary, [], [name], native=False, reason=reason)
