"""Batches shaped as torch's default_collate (batched) and default_convert
(batch_size=None) shape them, from feedline's batch and the sample's schema
(feedline/frontends/_shaping.py): a namedtuple stays that namedtuple, a dict
subclass that class, tuples and lists become lists, numbers and arrays
become tensors; unbatched, a Python number stays a Python number and a
tuple becomes a list, as in torch."""

import numpy as np
import torch

from feedline.frontends import _shaping

load_tree = _shaping.load_tree


class TorchShaping(_shaping.Shaping):
    def sequence(self, cls, parts, extras):
        if cls is not tuple and cls is not list and not extras:
            return cls(*parts)  # a namedtuple
        return parts + extras

    def mapping(self, cls, items):
        return _shaping.as_mapping(cls, items)

    def in_sequence(self, part, tree, unbatched):
        """torch collates a sequence's elements from zip(*batch): strings and
        other objects there come out as a tuple (in a dict, as a list)."""
        if not unbatched and tree == ("leaf", "object") and isinstance(part, list):
            return tuple(part)
        return part

    def leaf(self, value, kind, unbatched, to_tensor):
        if isinstance(value, list):  # an object field: one object per sample
            return value[0] if unbatched and len(value) == 1 else value
        if isinstance(value, torch.Tensor):  # a bfloat16 field
            return value[0] if unbatched else value
        if isinstance(value, _shaping.BatchArray):
            if not unbatched:
                return to_tensor(value)  # through DLPack
            value = value.numpy()  # one sample of it, below
        if not isinstance(value, np.ndarray):
            return _shaping.numpy_leaves(value)
        if not unbatched:
            return to_tensor(value)
        value = value[0]
        if kind in ("int", "float", "bool"):
            return value.item()  # default_convert leaves Python numbers as they are
        if kind == "numpy-scalar" or not isinstance(value, np.ndarray):
            return to_tensor(np.asarray(value))
        return to_tensor(value)

    def restore_leaf(self, value, kind, to_tensor):
        if not isinstance(value, (np.ndarray, np.generic)):
            return value
        if kind == "tensor":
            return torch.from_numpy(np.array(value, copy=True))
        return _shaping.restore_number(value, kind)


POLICY = TorchShaping()


def shape(batch, tree, unbatched, to_tensor):
    """`batch` (feedline's nesting of tuples, dicts and leaves) as torch
    gives it. `to_tensor` turns a numpy array or a BatchArray into the
    delivered tensor."""
    return _shaping.shape(batch, tree, unbatched, to_tensor, POLICY)


def restore_sample(sample, tree):
    """One sample as its dataset returned it (namedtuples, Python numbers,
    numpy scalars and torch tensors restored): a collate_fn gets what
    torch's would."""
    return _shaping.restore_sample(sample, tree, None, POLICY)
