"""The skeleton of a sample: the types of its containers and the kinds of its
leaves, recorded once from the first sample a loader (or a worker process)
sees. feedline carries samples as flat numeric fields; the skeleton lets a
framework adapter give batches the types its own collate would: a namedtuple
sample gives a namedtuple batch, and with batch_size=None a Python int stays
an int (feedline.torch, as torch's default_collate and default_convert)."""

import importlib
import io
import pickle
import sys

import numpy as np


def describe(value):
    """A tree of tuples: ("tuple", cls, [children]) for a tuple (cls is the
    namedtuple class, or tuple), ("list", list, [children]), ("dict", cls,
    {key: child}) with the keys as the loader names them (str), and
    ("leaf", kind) with kind one of "bool", "int", "float", "numpy-scalar",
    "numpy", "tensor", "object"."""
    if isinstance(value, tuple):
        cls = type(value) if hasattr(type(value), "_fields") else tuple
        return ("tuple", cls, [describe(v) for v in value])
    if isinstance(value, list):
        return ("list", list, [describe(v) for v in value])
    if isinstance(value, dict):
        return ("dict", type(value), {str(k): describe(v) for k, v in value.items()})
    return ("leaf", _leaf_kind(value))


def _leaf_kind(value):
    # numpy scalars first: np.float64 is also a Python float.
    if isinstance(value, np.generic):
        return "numpy-scalar"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, np.ndarray):
        return "numpy"
    paddle = sys.modules.get("paddle")
    if paddle is not None and isinstance(value, getattr(paddle, "Tensor", ())):
        return "paddle-tensor"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return "tensor"
    return "object"


def describe_pickled(value):
    """describe(value), pickled (it crosses from worker processes), or b""
    when a type in it cannot be pickled (a class defined in a function)."""
    out = io.BytesIO()
    try:
        _ClassLocatingPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(describe(value))
    except Exception:  # noqa: BLE001 (any pickling failure: no skeleton, batches keep feedline's shape)
        return b""
    return out.getvalue()


def _find_class(module, path):
    obj = importlib.import_module(module)
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


def _locate(cls):
    """The attribute path of `cls` in its module, looking one class deep:
    a namedtuple made inside a class body (Dataset.Batch) is named by its
    own name, which its module does not have."""
    module = sys.modules.get(cls.__module__)
    if module is None:
        return None
    for name, obj in vars(module).items():
        if obj is cls:
            return name
        if isinstance(obj, type):
            for inner, member in vars(obj).items():
                if member is cls:
                    return f"{name}.{inner}"
    return None


class _ClassLocatingPickler(pickle.Pickler):
    """Pickles a class its qualified name does not find by where it is."""

    def reducer_override(self, obj):
        if not isinstance(obj, type) or obj.__module__ == "builtins":
            return NotImplemented
        try:
            if _find_class(obj.__module__, obj.__qualname__) is obj:
                return NotImplemented
        except (ImportError, AttributeError):
            pass
        path = _locate(obj)
        if path is None:
            return NotImplemented  # pickle fails and says why
        return _find_class, (obj.__module__, path)
