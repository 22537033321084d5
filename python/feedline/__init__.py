"""feedline: a C++ data loader for deep-learning training.

The API follows paddle.io (and torch.utils.data where the two agree)::

    import feedline
    from feedline.vision import datasets, transforms

    train = datasets.ImageFolder("/data/train", transform=transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ]))
    loader = feedline.DataLoader(train, batch_size=64, shuffle=True, num_workers=8)
    for epoch in range(10):
        for images, labels in loader:      # numpy arrays viewing the batch memory
            x = torch.from_numpy(images)   # no copy
            ...

Native datasets (feedline.vision.datasets) load at full speed on C++ worker
threads; Python datasets work too, one sample at a time under the GIL.
See docs/python.md.
"""

import numpy as _numpy

from feedline import _feedline

# A module built with pybind11 older than 2.12 (Debian 12's is 2.10) misreads
# numpy 2's arrays: batches would hold wrong values. Refuse, saying why.
if int(_numpy.__version__.split(".")[0]) >= 2 and tuple(_feedline._pybind11_version) < (2, 12):
    raise ImportError(
        f"feedline: this build of the module uses pybind11 "
        f"{'.'.join(map(str, _feedline._pybind11_version))}, which reads numpy "
        f"{_numpy.__version__}'s arrays wrong; use numpy < 2 with it, or build feedline with "
        f"pybind11 >= 2.12 (pip install . does)")

from feedline._feedline import SampleError, TimeoutError  # noqa: A004 (a built-in TimeoutError too)
from feedline._feedline import WorkerInitError

# Tracebacks and pickles name them where users import them from.
for _error in (SampleError, TimeoutError, WorkerInitError):
    _error.__module__ = "feedline"
del _error
from feedline import io
from feedline.io import DataLoader, get_worker_info

__version__ = "0.1.0"

__all__ = ["DataLoader", "SampleError", "TimeoutError", "WorkerInitError", "get_worker_info", "io",
           "vision"]


def __getattr__(name):
    # feedline.vision loads on first use, so `import feedline` stays light.
    if name == "vision":
        import importlib

        return importlib.import_module("feedline.vision")
    raise AttributeError(f"module 'feedline' has no attribute {name!r}")
