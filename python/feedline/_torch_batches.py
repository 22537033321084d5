"""Batches shaped as torch's default_collate (batched) and default_convert
(batch_size=None) shape them, from feedline's batch and the sample's
skeleton (feedline/_skeleton.py): a namedtuple stays that namedtuple, a dict
subclass that class, tuples and lists become lists, numbers and arrays
become tensors; unbatched, a Python number stays a Python number and a
tuple becomes a list, as in torch."""

import pickle

import numpy as np
import torch


def load_skeleton(pickled):
    if not pickled:
        return None
    try:
        return pickle.loads(pickled)
    except Exception:  # noqa: BLE001 (a class gone since: feedline's own shapes)
        return None


def shape(batch, skeleton, unbatched, to_tensor):
    """`batch` (feedline's nesting of tuples, dicts and leaves) as torch
    gives it. `to_tensor` turns a numpy array into the delivered tensor."""
    kind = skeleton[0]
    if kind == "leaf":
        return _leaf(batch, skeleton[1], unbatched, to_tensor)
    if kind in ("tuple", "list"):
        cls, children = skeleton[1], skeleton[2]
        values = list(batch) if isinstance(batch, (tuple, list)) else [batch]
        parts = [_in_sequence(shape(v, c, unbatched, to_tensor), c, unbatched)
                 for v, c in zip(values, children)]
        # Arrays the loader adds after the sample's elements ("<i>_lengths",
        # the "replaced" mask) follow, converted.
        extras = [_leaf(v, "numpy", False, to_tensor) for v in values[len(children):]]
        if cls is not tuple and cls is not list and not extras:
            return cls(*parts)  # a namedtuple
        return parts + extras
    if kind == "dict":
        cls, children = skeleton[1], skeleton[2]
        out = {}
        for key, value in batch.items():
            child = children.get(key)
            out[key] = (shape(value, child, unbatched, to_tensor) if child is not None
                        else _leaf(value, "numpy", False, to_tensor))
        return _as_mapping(cls, out)
    raise ValueError(f"unknown skeleton kind {kind!r}")


def _in_sequence(part, skeleton, unbatched):
    """torch collates a sequence's elements from zip(*batch): strings and
    other objects there come out as a tuple (in a dict, as a list)."""
    if not unbatched and skeleton == ("leaf", "object") and isinstance(part, list):
        return tuple(part)
    return part


def _as_mapping(cls, items):
    """`items` (a dict) as the sample's mapping class, when that class can
    be made from a dict (torch's collate tries the same, else a dict)."""
    if cls is dict:
        return items
    try:
        return cls(items)
    except TypeError:
        return items


def _leaf(value, kind, unbatched, to_tensor):
    if isinstance(value, list):  # an object field: one object per sample
        return value[0] if unbatched and len(value) == 1 else value
    if isinstance(value, torch.Tensor):  # a bfloat16 field
        return value[0] if unbatched else value
    if not isinstance(value, np.ndarray):
        return value
    if not unbatched:
        return to_tensor(value)
    value = value[0]
    if kind in ("int", "float", "bool"):
        return value.item()  # default_convert leaves Python numbers as they are
    if kind == "numpy-scalar" or not isinstance(value, np.ndarray):
        return to_tensor(np.asarray(value))
    return to_tensor(value)


def restore_sample(sample, skeleton):
    """One sample as its dataset returned it, from the copy feedline hands a
    collate_fn (tuples, dicts and numpy values): the namedtuple or dict
    class, lists and tuples, Python numbers, numpy scalars and arrays, and
    torch tensors (as tensors) restored. A collate_fn gets what torch's
    would."""
    kind = skeleton[0]
    if kind == "leaf":
        return _restore_leaf(sample, skeleton[1])
    if kind in ("tuple", "list"):
        cls, children = skeleton[1], skeleton[2]
        values = list(sample) if isinstance(sample, (tuple, list)) else [sample]
        parts = [restore_sample(v, c) for v, c in zip(values, children)]
        if cls is list:
            return parts
        if cls is tuple:
            return tuple(parts)
        return cls(*parts)
    if kind == "dict":
        cls, children = skeleton[1], skeleton[2]
        out = {k: restore_sample(v, children[k]) if k in children else v for k, v in sample.items()}
        return _as_mapping(cls, out)
    raise ValueError(f"unknown skeleton kind {kind!r}")


def _restore_leaf(value, kind):
    if not isinstance(value, (np.ndarray, np.generic)):
        return value
    if kind in ("int", "float", "bool"):
        return value.item()
    if kind == "numpy-scalar":
        return value[()] if isinstance(value, np.ndarray) else value
    if kind == "tensor":
        return torch.from_numpy(np.array(value, copy=True))
    return value
