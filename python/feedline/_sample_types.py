"""Where a sample's container classes are found (a namedtuple, a dict
subclass), so that a sample's schema (feedline._feedline.SampleSchema) can
name them by module and attribute path and a front end can give batches
the same classes. Called by the engine once per class, in the process that
loads the sample (a worker process too)."""

import importlib
import sys


def resolve(module, path):
    """The object at attribute path `path` ("Outer.Batch") in `module`."""
    obj = importlib.import_module(module)
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


def locate(cls):
    """The attribute path that finds `cls` in its module: its qualified name,
    or, for a class that name does not find, where it is, looking one class
    deep (a namedtuple made inside a class body, Dataset.Batch, is named by
    its own name, which its module does not have). None for a class its
    module does not hold (one defined inside a function)."""
    try:
        if resolve(cls.__module__, cls.__qualname__) is cls:
            return cls.__qualname__
    except (ImportError, AttributeError):
        pass
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
