"""Datasets (paddle.io's): the map-style Dataset and the IterableDataset a
Python dataset derives from, the native ones (NativeDataset, and Subset and
ConcatDataset of native datasets) that load in C++, and what a dataset
running on a worker knows about it (get_worker_info)."""

import bisect
import operator
import random
import sys

import numpy as np

from feedline import _feedline
from feedline.io.arguments import _seed_from


def _is_iterable_dataset(dataset):
    """True for a streaming dataset: feedline's IterableDataset, torch's or
    Paddle's (whose base Dataset classes define __getitem__, so the method
    alone does not tell), or any object with __iter__ and no __getitem__."""
    if isinstance(dataset, IterableDataset):
        return True
    for module, name in (("torch", "utils.data.IterableDataset"), ("paddle", "io.IterableDataset")):
        framework = sys.modules.get(module)
        if framework is None:
            continue
        cls = framework
        try:
            for part in name.split("."):
                cls = getattr(cls, part)
        except AttributeError:
            continue
        if isinstance(dataset, cls):
            return True
    return hasattr(dataset, "__iter__") and not hasattr(dataset, "__getitem__")


def _native_dataset(dataset):
    """The C++ dataset the loader runs without the GIL, or None: a Python
    dataset, or a native one with a Python transform, whose samples need the
    interpreter (and so load in worker processes)."""
    if (getattr(dataset, "_python_transform", None) is not None
            or getattr(dataset, "_python_target_transform", None) is not None):
        return None
    return getattr(dataset, "_native", None)


def _run_python_transform(transform, image, image_type):
    """`transform` on a decoded uint8 [H, W, 3] image, handed over as a PIL
    image ("pil"), the array ("numpy") or a uint8 [3, H, W] torch tensor
    ("tensor"), as torchvision takes them.

    torchvision's random transforms draw from torch's global generator,
    which a forked worker inherits from the training process: every worker
    would draw the same numbers, every epoch. It is seeded here for the
    sample from `random`, which the loader seeds from (seed, epoch, index)
    in worker processes and with num_workers=0, so the draws are the same
    for any number of workers; the caller's torch state is put back after."""
    if image_type == "pil":
        from PIL import Image

        image = Image.fromarray(image, "RGB")
    elif image_type == "tensor":
        import torch

        image = torch.from_numpy(image).permute(2, 0, 1)
    torch = sys.modules.get("torch")
    if torch is None:
        return transform(image)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(random.getrandbits(63))
        return transform(image)


class WorkerInfo:
    """What a Python dataset running on a loader worker knows about it."""

    def __init__(self, id, num_workers, seed, epoch, dataset):
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.epoch = epoch
        self.dataset = dataset

    def __repr__(self):
        return (
            f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
            f"epoch={self.epoch})"
        )


def get_worker_info():
    """The WorkerInfo of the worker running the calling dataset code, or None
    when it runs in the main thread (num_workers=0), as in paddle.io."""
    info = _feedline._worker_info()
    return None if info is None else WorkerInfo(**info)


class Dataset:
    """A map-style dataset: subclasses define __getitem__ and __len__.

    A sample is a tuple (or list) of numpy arrays and numbers, a dict of
    them, or a single array or number. Dtypes are kept (a Python float is
    float64, an int int64, as in torch and Paddle; uint32 and uint64 widen
    to int64); strings and other objects come back as one list per batch,
    one object per sample.
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class IterableDataset(Dataset):
    """A streaming dataset: subclasses define __iter__. Each worker iterates
    its own copy and should read only its part, using get_worker_info()."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __getitem__(self, index):
        raise TypeError(f"{type(self).__name__} is an IterableDataset: it has no __getitem__")

    def __len__(self):
        raise TypeError(f"{type(self).__name__} is an IterableDataset: it has no __len__")


class NativeDataset(Dataset):
    """A dataset implemented in C++ (`_native`); the loader runs it without
    the GIL. `_fields` names the fields a sample is a tuple of, in order, or
    is None for samples that are dicts.

    With a `_python_transform` (a torchvision or PIL transform, any
    callable) the C++ dataset reads and decodes, and the transform runs in
    Python on the sample's first field (the image) in __getitem__, as a
    `_python_target_transform` does on the label: the loader then treats the
    dataset as a Python one (worker processes by default)."""

    _python_transform = None
    _python_target_transform = None
    _image_type = "pil"

    def __init__(self, native, fields=None):
        self._native = native
        self._fields = tuple(fields) if fields is not None else None

    def __len__(self):
        return len(self._native)

    def __getitem__(self, index):
        index = operator.index(index)
        n = len(self)
        # Checked here so that the message shows the index as given (-100),
        # not as wrapped (-90).
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of range for a dataset of {n} samples")
        if index < 0:
            index += n
        if self._python_transform is None and self._python_target_transform is None:
            sample = self._native.get(index)
            if self._fields is None:
                return sample
            return tuple(sample[name] for name in self._fields)
        # Loaded as a Python dataset: the native transforms' random draws
        # come from `random`, which the loader seeds per sample from (seed,
        # epoch, index) in worker processes and with num_workers=0.
        sample = self._native.get(index, 0, random.getrandbits(63))
        sample = tuple(sample[name] for name in self._fields)
        image, label = sample[0], sample[1:]
        if self._python_transform is not None:
            image = _run_python_transform(self._python_transform, image, self._image_type)
        label = tuple(int(v) if v.ndim == 0 else v for v in label)
        if self._python_target_transform is not None and label:
            label = (self._python_target_transform(label[0]),) + label[1:]
        return (image,) + label

    def source(self, index):
        """Where sample `index` comes from (a file name)."""
        return self._native.source(int(index))


class TensorDataset(Dataset):
    """Samples are the rows of equally long arrays (paddle.io.TensorDataset)."""

    def __init__(self, tensors):
        tensors = [np.asarray(t) for t in tensors]
        if not tensors or any(len(t) != len(tensors[0]) for t in tensors):
            raise ValueError("TensorDataset needs one or more arrays of the same length")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class Subset(Dataset):
    """The samples of `dataset` at `indices` (paddle.io.Subset). Native when
    `dataset` is."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = [int(i) for i in indices]
        native = _native_dataset(dataset)
        if native is not None:
            self._native = _feedline._Subset(native, self.indices)
            self._fields = getattr(dataset, "_fields", None)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)

    # Pickled without the native view, which is rebuilt from the parts
    # (spawned workers, torch.save of a dataset).
    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_native"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        native = _native_dataset(self.dataset)
        if native is not None:
            self._native = _feedline._Subset(native, self.indices)


class ConcatDataset(Dataset):
    """Datasets end to end (paddle.io.ConcatDataset). Native when all are."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()
        natives = [_native_dataset(d) for d in self.datasets]
        if all(n is not None for n in natives):
            self._native = _feedline._Concat(natives)
            self._fields = getattr(self.datasets[0], "_fields", None)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} is out of range for a dataset of {len(self)} samples")
        part = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[part - 1] if part > 0 else 0
        return self.datasets[part][index - start]

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_native"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        natives = [_native_dataset(d) for d in self.datasets]
        if all(n is not None for n in natives):
            self._native = _feedline._Concat(natives)


def random_split(dataset, lengths, generator=None):
    """Splits `dataset` into non-overlapping Subsets of the given lengths
    (counts, or fractions summing to 1)."""
    n = len(dataset)
    if all(0 <= x <= 1 for x in lengths) and abs(sum(lengths) - 1) < 1e-6 and sum(lengths) != n:
        counts = [int(np.floor(n * x)) for x in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"the lengths sum to {sum(lengths)}, but the dataset has {n} samples")
    order = np.random.default_rng(_seed_from(generator, None)).permutation(n)
    splits, start = [], 0
    for length in lengths:
        splits.append(Subset(dataset, order[start : start + length].tolist()))
        start += length
    return splits
