"""Batches in paddle.io's structures (frontends/_shaping.py with Paddle's
policy), their arrays made paddle Tensors through DLPack, sharing their
memory; without paddle, arrays stay numpy arrays."""

import collections.abc
import importlib
import sys

import numpy as np

from feedline.frontends import _shaping


def paddle_to_tensor():
    """A numpy array to a paddle Tensor through DLPack (sharing its memory),
    or None when paddle is not installed."""
    try:
        paddle = importlib.import_module("paddle")
    except ImportError:
        return None
    try:
        from_dlpack = importlib.import_module("paddle.utils.dlpack").from_dlpack
    except ImportError:
        return None

    def to_tensor(array):
        # A numpy array or a batch field (BatchArray): both export DLPack.
        try:
            capsule = array.__dlpack__()
        except BufferError:
            # numpy before 1.25 exports no bool arrays through DLPack: a bool
            # field (a mask) is copied instead, and stays bool.
            return paddle.to_tensor(array)
        return from_dlpack(capsule)

    return to_tensor


def is_paddle_tensor(value):
    paddle = sys.modules.get("paddle")
    cls = getattr(paddle, "Tensor", None)
    return isinstance(cls, type) and isinstance(value, cls)


class PaddleShaping(_shaping.Shaping):
    """paddle.io's structure: default_collate_fn gives lists for sequences
    (namedtuples too) and plain dicts for mappings; unbatched
    (default_convert_fn) a Python number stays a Python number and a numpy
    scalar stays one. `to_tensor` None leaves arrays numpy arrays."""

    def leaf(self, value, kind, unbatched, to_tensor):
        if isinstance(value, list):  # an object field: one object per sample
            return value[0] if unbatched and len(value) == 1 else value
        if isinstance(value, _shaping.BatchArray):
            if not unbatched and to_tensor is not None:
                return to_tensor(value)  # through DLPack
            value = value.numpy()
        if not isinstance(value, np.ndarray):
            return _shaping.numpy_leaves(value)
        if unbatched:
            value = value[0]
            if kind in ("int", "float", "bool", "numpy-scalar"):
                return _shaping.restore_number(value, kind)
            value = np.asarray(value)
        return to_tensor(value) if to_tensor is not None else value

    def restore_leaf(self, value, kind, to_tensor):
        """A sample's value as its dataset returned it, from the numpy copy the
        engine hands a collate_fn."""
        if not isinstance(value, (np.ndarray, np.generic)):
            return value
        if kind == "paddle-tensor" and to_tensor is not None:
            # A paddle Tensor the dataset returned (the engine carries its values).
            return to_tensor(np.array(value, copy=True))
        if kind == "numpy" and isinstance(value, np.generic):
            return np.asarray(value)  # a 0-d array
        return _shaping.restore_number(value, kind)


POLICY = PaddleShaping()


def as_paddle_returns(value, to_tensor):
    """A collate_fn's result as paddle.io hands it on: arrays become Tensors,
    Tensors stay, tuples and lists become lists, mappings dicts, and
    numbers, strings and other objects are left as they are."""
    if isinstance(value, np.ndarray):
        return to_tensor(np.ascontiguousarray(value)) if to_tensor is not None else value
    if is_paddle_tensor(value) or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {k: as_paddle_returns(v, to_tensor) for k, v in value.items()}
    if isinstance(value, collections.abc.Sequence):
        return [as_paddle_returns(v, to_tensor) for v in value]
    return value
