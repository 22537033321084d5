"""Datasets, samplers and the DataLoader, named as in paddle.io.

Native objects (the samplers here, feedline.vision.datasets) run in C++ and
are handed to the loader as they are; Python datasets and samplers (any
object with __getitem__/__len__, or __iter__/__len__) work too and are called
under the GIL.
"""

import atexit
import bisect
import logging
import numbers
import operator
import os
import random
import sys
import warnings
import weakref

import numpy as np

from feedline import _feedline

__all__ = [
    "BatchSampler",
    "ClassBalancedSampler",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedBatchSampler",
    "DynamicBatchSampler",
    "HardExampleSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequenceSampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "get_worker_info",
    "random_split",
    "resolve_launch",
]


def _draw_seed():
    # A seed left unset comes from NumPy's global generator, as Paddle's
    # samplers draw from it: np.random.seed(s) makes a run repeatable.
    return int(np.random.randint(0, 2**63 - 1, dtype=np.int64))


def _seed_from(generator, seed):
    if seed is not None:
        return int(seed)
    if generator is None:
        return _draw_seed()
    if isinstance(generator, (int, np.integer)):
        return int(generator)
    if isinstance(generator, np.random.Generator):
        return int(generator.integers(0, 2**63 - 1))
    if hasattr(generator, "initial_seed"):  # torch.Generator
        return int(generator.initial_seed())
    raise TypeError(
        "generator must be None, an int seed, a numpy Generator or a torch.Generator, "
        f"got {type(generator).__name__}"
    )


def _native(obj):
    return getattr(obj, "_native", obj)


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


# ---------------------------------------------------------------------------
# Datasets


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


# ---------------------------------------------------------------------------
# Samplers. Each native sampler is a pure function of the epoch; iterating one
# from Python walks epochs 0, 1, 2, ... so that every pass gives a new order,
# while the DataLoader asks it for its own epoch.


class Sampler:
    """Base of samplers (paddle.io.Sampler): __iter__ yields indices and
    __len__ counts them. A Python subclass is called under the GIL, once per
    epoch."""

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        if not hasattr(self, "_native"):
            raise NotImplementedError(f"{type(self).__name__} must define __iter__")
        epoch = self._epoch
        self._epoch += 1
        return iter(self._native.indices(epoch).tolist())

    def __len__(self):
        if not hasattr(self, "_native"):
            raise NotImplementedError(f"{type(self).__name__} must define __len__")
        return len(self._native)


class SequenceSampler(Sampler):
    """0, 1, ..., len(data_source) - 1 (paddle.io.SequenceSampler)."""

    def __init__(self, data_source):
        super().__init__(data_source)
        self._native = _feedline._SequentialSampler(len(data_source))
        self._epoch = 0


SequentialSampler = SequenceSampler


class RandomSampler(Sampler):
    """A new random order every epoch (paddle.io.RandomSampler): a permutation,
    or with replacement num_samples uniform draws. `generator` (an int seed, a
    numpy Generator or a torch.Generator) or `seed` fixes the orders."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None, seed=None):
        super().__init__(data_source)
        self.replacement = replacement
        self.seed = _seed_from(generator, seed)
        self._native = _feedline._RandomSampler(
            len(data_source), self.seed, bool(replacement), num_samples
        )
        self._epoch = 0

    @property
    def num_samples(self):
        return len(self._native)


class SubsetRandomSampler(Sampler):
    """A random permutation of `indices` each epoch."""

    def __init__(self, indices, generator=None, seed=None):
        super().__init__(None)
        self.indices = [int(i) for i in indices]
        self._native = _feedline._SubsetRandomSampler(self.indices, _seed_from(generator, seed))
        self._epoch = 0


class WeightedRandomSampler(Sampler):
    """num_samples draws of index i with probability weights[i] / sum(weights)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None, seed=None):
        super().__init__(None)
        weights = np.asarray(weights, dtype=np.float64).ravel().tolist()
        self._native = _feedline._WeightedRandomSampler(
            weights, int(num_samples), _seed_from(generator, seed), bool(replacement)
        )
        self._epoch = 0


class ClassBalancedSampler(Sampler):
    """Every class equally likely whatever its size: each draw picks a class
    uniformly, then one of its samples (with replacement). labels[i] is the
    class of sample i; num_samples defaults to len(labels). For native image
    datasets pass dataset.targets."""

    def __init__(self, labels, num_samples=None, generator=None, seed=None):
        super().__init__(None)
        labels = np.asarray(labels, dtype=np.int64).ravel().tolist()
        self._native = _feedline._ClassBalancedSampler(
            labels, _seed_from(generator, seed), num_samples
        )
        self._epoch = 0


def _as_array(values, name, dtype):
    # A torch tensor (even one that requires grad, on any device) or anything
    # numpy takes; flattened.
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    if dtype is np.int64 and array.size and array.dtype.kind not in "iu":
        raise TypeError(
            f"HardExampleSampler.update: {name} must hold integers, got dtype {array.dtype}"
        )
    if array.dtype.kind not in "biuf":
        raise TypeError(f"HardExampleSampler.update: {name} must hold numbers, got dtype {array.dtype}")
    return np.ascontiguousarray(array.ravel(), dtype=dtype)


class HardExampleSampler(Sampler):
    """Draws the samples with a high recent loss more often; the training loop
    reports losses with update(indices, losses).

    Each sample's score is a moving average of its losses (the first loss
    sets it, then score = decay * score + (1 - decay) * loss); a sample never
    reported scores like the hardest one seen, so new samples come early.
    Index i is drawn with probability floor / n + (1 - floor) * score_i /
    sum(scores): loss-proportional, and never below floor / n, so no sample
    starves. An epoch is num_samples (default n) draws with replacement,
    planned when the epoch starts: losses reported during an epoch shape the
    next one (a small num_samples re-plans often). Deterministic for a seed
    and a sequence of updates; DataLoader.state_dict() carries this sampler's
    state, so a checkpoint resumes exactly. docs/samplers.md has the details.

    `data_source` is the dataset (or its length).
    """

    def __init__(self, data_source, num_samples=None, decay=0.5, floor=0.1, generator=None,
                 seed=None):
        if isinstance(data_source, numbers.Integral) and not isinstance(data_source, bool):
            n, data_source = int(data_source), None
        else:
            n = len(data_source)
        super().__init__(data_source)
        self.seed = _seed_from(generator, seed)
        self.decay = float(decay)
        self.floor = float(floor)
        self._native = _feedline._HardExampleSampler(
            n, self.seed, None if num_samples is None else operator.index(num_samples),
            self.decay, self.floor
        )
        self._epoch = 0

    @property
    def num_samples(self):
        return len(self._native)

    def update(self, indices, losses):
        """Reports losses[k] for sample indices[k] (arrays, lists or torch
        tensors of equal length; a batch's per-sample losses, e.g. from
        reduction="none"). Raises ValueError or IndexError naming the argument
        and entry for a length mismatch, an index outside [0, n), or a loss
        that is negative or not finite; then nothing is applied."""
        self._native.update(_as_array(indices, "indices", np.int64),
                            _as_array(losses, "losses", np.float64))

    def probabilities(self):
        """The probability of each index in the next epoch planned (a numpy array)."""
        return self._native.probabilities()

    def state_dict(self):
        """The scores and the probabilities of the last planned epoch (plain
        lists, O(n)); DataLoader.state_dict() includes it."""
        return self._native.state()

    def load_state_dict(self, state):
        """Continues from state_dict(). Raises ValueError naming the field
        if it does not fit this sampler."""
        if not isinstance(state, dict):
            raise TypeError(
                f"HardExampleSampler.load_state_dict takes a dict from state_dict(), "
                f"got {type(state).__name__}"
            )
        self._native.restore(state)


class BatchSampler:
    """Groups a sampler's indices into lists of batch_size (paddle.io.BatchSampler).

    Give either `dataset` (with `shuffle`) or `sampler`; the last, shorter
    batch is dropped when `drop_last`.
    """

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler needs exactly one of dataset and sampler")
        if sampler is None:
            sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        elif shuffle:
            raise ValueError("shuffle must be False when a sampler is given")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last
        self._native = _feedline._FixedBatchSampler(_native(sampler), batch_size, drop_last)
        self._epoch = 0

    def _next_epoch(self):
        epoch = self._epoch
        self._epoch += 1
        return epoch

    def __iter__(self):
        indices, offsets = self._native.plan(self._next_epoch())
        indices = indices.tolist()
        for b in range(len(offsets) - 1):
            yield indices[offsets[b] : offsets[b + 1]]

    def __len__(self):
        return len(self._native)


class DynamicBatchSampler(BatchSampler):
    """Batches of samples of similar length under a token budget: a batch of k
    samples whose longest has length L costs k * L, at most max_tokens.
    Samples are sorted by length within buckets of bucket_size (0: the whole
    epoch), cut into batches, and the batches shuffled, from (seed, epoch).
    lengths[i] is the length of sample i."""

    def __init__(self, lengths, max_tokens, max_batch_size=0, bucket_size=0, shuffle=True,
                 seed=None):
        self.lengths = np.asarray(lengths, dtype=np.int64).ravel().tolist()
        self._native = _feedline._DynamicBatchSampler(
            self.lengths, int(max_tokens), int(max_batch_size), int(bucket_size), bool(shuffle),
            _seed_from(None, seed)
        )
        self._epoch = 0


def resolve_launch(num_replicas=None, rank=None):
    """Where this process stands in a distributed job, without a process group.

    Explicit arguments win; a missing one comes from the launcher's
    environment, first match: torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
    LOCAL_WORLD_SIZE), paddle.distributed.launch (PADDLE_TRAINER_ID,
    PADDLE_TRAINERS_NUM, PADDLE_LOCAL_RANK, PADDLE_LOCAL_SIZE), OpenMPI
    (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE), PMI (PMI_RANK,
    PMI_SIZE); else one process. Returns a dict with rank, world_size,
    local_rank, local_world_size and source. A malformed or inconsistent
    variable raises ValueError naming it (docs/distributed.md)."""
    return _feedline._resolve_launch(
        None if num_replicas is None else int(num_replicas), None if rank is None else int(rank)
    )


class DistributedBatchSampler(BatchSampler):
    """Each of num_replicas ranks gets its share of every epoch's batches
    (paddle.io.DistributedBatchSampler). num_replicas and rank default to the
    launcher's environment (resolve_launch: torchrun, paddle, OpenMPI, PMI),
    else 1 and 0. The shuffle depends on (seed, epoch), so every rank must use
    the same seed; call set_epoch(epoch) before each epoch as with Paddle and
    torch.

    partition="paddle" (default) deals batch-sized blocks round-robin as
    Paddle does; partition="torch" strides by rank as torch's
    DistributedSampler does. pad=False (evaluation) sees every sample exactly
    once over all ranks: no padding, so ranks may get one batch fewer or a
    short last batch. resume=global_position(...) from a job of any world
    size continues that epoch with what no rank has seen (docs/distributed.md).
    """

    def __init__(
        self,
        dataset,
        batch_size,
        num_replicas=None,
        rank=None,
        shuffle=False,
        drop_last=False,
        seed=0,
        partition="paddle",
        pad=True,
        resume=None,
    ):
        self.dataset = dataset
        self.batch_size = batch_size
        self.launch = resolve_launch(num_replicas, rank)
        self.nranks = self.launch["world_size"]
        self.local_rank = self.launch["rank"]
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.partition = partition
        self.pad = pad
        self.epoch = 0
        self._native = _feedline._DistributedBatchSampler(
            len(dataset), batch_size, self.nranks, self.local_rank, shuffle, drop_last, seed,
            partition, pad
        )
        self.num_samples = self._native.num_samples
        if resume is not None:
            self.resume_from(resume)

    def resume_from(self, position):
        """Continues position["epoch"] (from global_position(), taken by a job
        of any world size) with the samples no rank has consumed, split across
        this job's ranks; pins that epoch like set_epoch. Call it on every rank
        before iterating; later epochs are whole. Raises ValueError when the
        position belongs to another dataset size, seed or shuffle."""
        # The global order depends on these only; the world size, rank,
        # partition and padding may change.
        if not isinstance(position, dict) or "epoch" not in position or "position" not in position:
            raise ValueError(
                f"resume_from takes a dict from global_position() with epoch and position, "
                f"got {position!r}"
            )
        for key, mine in (("dataset_size", len(self.dataset)), ("seed", self.seed),
                          ("shuffle", bool(self.shuffle))):
            if key in position and position[key] != mine:
                raise ValueError(
                    f"resume_from: {key} differs: the position was taken with "
                    f"{position[key]!r}, this sampler has {mine!r}"
                )
        epoch = int(position["epoch"])
        self._native.resume_from(epoch, int(position["position"]))
        self.epoch = epoch

    def set_epoch(self, epoch):
        """Fixes the epoch that shuffles the next pass. It is also the
        loader's epoch (one source: loader.epoch and state_dict() report it,
        and a loader.set_epoch with another value raises ValueError);
        set_epoch(-1) lets the loader count epochs again."""
        self.epoch = int(epoch)
        self._native.set_epoch(self.epoch)

    def global_position(self, state=None, epoch=None):
        """The epoch's samples consumed over all ranks, for a checkpoint that
        a job with another world size can resume from (resume=...).

        `state` is the loader's state_dict() (its epoch and next_batch), or the
        number of batches every rank has taken of `epoch` (default: the
        current one). Every rank must have taken the same number; the result is
        a small dict (epoch, position, epoch_start, dataset_size, seed, shuffle)."""
        if isinstance(state, dict):
            for key, mine in (("num_replicas", self.nranks), ("rank", self.local_rank)):
                if key in state and state[key] != mine:
                    raise ValueError(
                        f"global_position: the state's {key} is {state[key]}, this sampler's "
                        f"is {mine}"
                    )
            epoch, batches_done = int(state["epoch"]), int(state["next_batch"])
        else:
            batches_done = 0 if state is None else int(state)
            epoch = self.epoch if epoch is None else int(epoch)
        return {
            "epoch": epoch,
            "position": self._native.global_position(epoch, batches_done),
            # Where this epoch began: > 0 when it was itself resumed.
            "epoch_start": self._native.global_position(epoch, 0),
            "dataset_size": len(self.dataset),
            "seed": self.seed,
            "shuffle": bool(self.shuffle),
        }

    def valid_masks(self, epoch=None):
        """One bool array per batch of `epoch` (default: the current one),
        aligned with this rank's batches: False for padding rows that repeat a
        sample. Over all ranks the True rows are each sample exactly once, so
        an evaluation can keep pad=True (equal steps on every rank) and still
        count exactly: sum only the rows whose mask is True."""
        epoch = self.epoch if epoch is None else int(epoch)
        mask = self._native.valid_mask(epoch)
        _, offsets = self._native.plan(epoch)
        return [mask[offsets[b]:offsets[b + 1]] for b in range(len(offsets) - 1)]

    def _position_to_restore(self, state):
        # A state taken by another world size (or rank) continues from the
        # global position: this sampler splits the rest of that epoch, and the
        # loader starts it at batch 0. Otherwise the exact, fingerprinted path,
        # which refuses a different num_replicas or rank.
        state = dict(state)
        position = state.pop("global_position", None)
        mine = (self.nranks, self.local_rank)
        other_job = (state.get("num_replicas", mine[0]), state.get("rank", mine[1])) != mine
        if position is None:
            return state
        if not other_job:
            # The same job: the exact path. An epoch that was itself resumed
            # (epoch_start > 0) must be cut the same way for its digest to match.
            if position.get("epoch_start", 0) > 0 and position.get("epoch") == state.get("epoch"):
                self.resume_from(dict(position, position=position["epoch_start"]))
            return state
        if position.get("epoch") != state.get("epoch"):
            raise ValueError(
                f"load_state_dict: global_position is of epoch {position.get('epoch')}, the "
                f"state of epoch {state.get('epoch')}"
            )
        self.resume_from(position)
        return {"epoch": int(position["epoch"]), "next_batch": 0}

    def _next_epoch(self):
        return self.epoch


# ---------------------------------------------------------------------------
# The loader

_live_loaders = weakref.WeakSet()


@atexit.register
def _close_live_loaders():
    # Workers must be joined before the interpreter starts to finalize: a
    # worker taking the GIL after that point would never get it.
    for loader in list(_live_loaders):
        loader.close()


_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def _int_argument(name, value, low, high):
    # Ints only (TypeError for "2" or 2.5), and only what the engine's types
    # hold: a clear error naming the argument rather than a failed cast. The
    # engine then checks what makes sense (batch_size >= 1, ...).
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"DataLoader: {name} must be an int, got {type(value).__name__}") from None
    if not low <= number <= high:
        raise ValueError(f"DataLoader: {name} must be from {low} to {high}, got {number}")
    return number


_AUTO = -1  # feedline::kAuto: the loader sets the value while it runs


def _user_stacklevel():
    # The stacklevel of a warning that names the user's line, past the frames
    # of feedline's own modules (feedline.torch's DataLoader calls this one's).
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("feedline."):
        level, frame = level + 1, frame.f_back
    return level


def _auto_or_int_argument(name, value, low):
    # "auto" (docs/tuning.md) or an int from `low`; a negative int is refused
    # here, since the engine reads -1 as "auto".
    if isinstance(value, str):
        if value == "auto":
            return _AUTO
        raise TypeError(f'DataLoader: {name} must be an int or "auto", got {value!r}')
    number = _int_argument(name, value, *_INT32)
    if number < low:
        raise ValueError(f'DataLoader: {name} must be >= {low}, got {number} (or "auto")')
    return number


def _byte_size_argument(name, value):
    """`value` as a number of bytes: an int as it is, a string read by the one
    rule for sizes (src/core/byte_size.h) that the command line's options
    follow too: "256M", "2GiB", "512 MiB" (K, M, G, T, KiB, ...: 1024-based),
    "1.5GB", "512MB" (KB, MB, GB, TB: 1000-based). `name` begins the
    messages ("DataLoader: memory_budget"); bounds are the caller's."""
    if isinstance(value, str):
        try:
            return _feedline._parse_byte_size(value)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f'{name} must be an int (bytes) or a string such as "2GiB" or "1.5GB", '
                        f"got {value!r}")
    return int(value)


def _memory_budget_argument(value, tuned):
    # None: a share of the available memory (docs/tuning.md). Else bytes, as
    # an int or a size string (_byte_size_argument); it bounds the slots only
    # the tuner sets, so it needs num_workers or prefetch_factor "auto".
    if value is None:
        return 0
    number = _byte_size_argument("DataLoader: memory_budget", value)
    if not 1 <= number <= _INT64[1]:
        raise ValueError(f"DataLoader: memory_budget must be from 1 byte to 8 EiB, got {value!r} "
                         "(None: a quarter of the available memory)")
    if not tuned:
        raise ValueError('DataLoader: memory_budget bounds the batch slots the tuner sets; it '
                         'needs num_workers="auto" or prefetch_factor="auto"')
    return number


def _reporter(report):
    # Where the loop's reports go: a callable gets the report dict, a Logger
    # (default: the "feedline" logger) gets its line at INFO.
    if report is None:
        report = logging.getLogger("feedline")
    if isinstance(report, logging.Logger):
        logger = report
        return lambda r: logger.info("%s", r["text"])
    if callable(report):
        return report
    raise TypeError(
        f"DataLoader: report must be a callable, a logging.Logger or None, got "
        f"{type(report).__name__}"
    )


def _report_every(value):
    # In steps; "epoch" (0 for the engine): at the end of each epoch only.
    if isinstance(value, str):
        if value == "epoch":
            return 0
        raise ValueError(f'DataLoader: report_every must be an int >= 1 or "epoch", got {value!r}')
    number = _int_argument("report_every", value, *_INT64)
    if number < 1:
        raise ValueError(f'DataLoader: report_every must be >= 1 (or "epoch"), got {number}')
    return number


def _seconds_argument(name, value):
    if isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real):
        raise TypeError(f"DataLoader: {name} must be a number of seconds, got {type(value).__name__}")
    return float(value)  # the engine refuses nan, infinities and negatives


class _EpochIterator:
    # A class, not a generator: a suspended generator would keep the last
    # batch alive, and with it a slot of the pool.
    __slots__ = ("_owner", "_iteration", "_exhausted")

    def __init__(self, owner, iteration):
        self._owner = owner
        self._iteration = iteration
        self._exhausted = False

    def __iter__(self):
        return self

    def __next__(self):
        # An exhausted iterator stays exhausted, as Python's do: asking the
        # loader again would start its next epoch.
        if self._exhausted:
            raise StopIteration
        if self._iteration != self._owner._iteration:
            raise RuntimeError("a newer iteration over this DataLoader replaced this one")
        batch = self._owner._loader.next()
        if batch is None:
            self._exhausted = True
            raise StopIteration
        return batch


class DataLoader:
    """Batches from a dataset, loaded by C++ worker threads (paddle.io.DataLoader).

    Arguments keep the names and defaults of paddle.io.DataLoader (and
    torch.utils.data.DataLoader where the two agree):

      dataset             a native dataset (feedline.vision.datasets, Subset or
                          ConcatDataset of native ones), a Python Dataset or any
                          object with __getitem__ and __len__, or an
                          IterableDataset.
      batch_size          samples per batch (ignored with a batch_sampler).
      shuffle             a new random order each epoch.
      sampler             a Sampler (or iterable of indices with __len__).
      batch_sampler       a BatchSampler (or iterable of index lists with __len__);
                          excludes batch_size, shuffle, sampler and drop_last.
      num_workers         workers; 0 loads in the calling thread. "auto": the
                          loader runs as many as help, up to the cores it may
                          use (shared among the ranks of the host), fewer when
                          the training step is the bottleneck (docs/tuning.md).
      collate_fn          f(list of samples) -> the batch (tuple, dict or array of
                          numbers). Default: stack each field; fields whose shape
                          varies are padded, with a "<field>_lengths" array.
      drop_last           drop the last, short batch.
      prefetch_factor     batches in flight per worker (at most
                          max(2, num_workers * prefetch_factor) exist at once).
                          "auto": the loader sets how many batches it keeps,
                          more when a few slow batches make the loop wait,
                          within a memory budget (docs/tuning.md). With
                          num_workers=0 nothing is prefetched: an int is
                          ignored, "auto" warns that no tuner runs.
      memory_budget       with num_workers or prefetch_factor "auto": the bytes the
                          batch slots may take together, an int or a string such
                          as "2GiB", "2G" or "512MB" (K, M, G, T and KiB, MiB, ...
                          are 1024-based as on the command line; KB, MB, GB, TB
                          are 1000-based). None (the default): a quarter of
                          the available memory (the cgroup's limit respected),
                          shared among the ranks of the host.
      persistent_workers  keep the workers between epochs.
      use_shared_memory   with worker processes, samples cross through shared
                          memory (memfd, not bound by /dev/shm's size); False
                          sends them through the worker's socket instead.
      timeout             seconds a sample may take before it fails (0: no limit).
      worker_init_fn      f(worker_id), called in each worker when it starts.
      seed                seeds the shuffle and every sample's random transforms;
                          None draws one from NumPy's global generator. Batches
                          are identical for any num_workers given the seed.
      worker_mode         "thread", "process" or "auto" (the default): "auto" loads a
                          Python dataset, map-style or iterable, in worker
                          processes (its __getitem__ / __next__ holds the GIL)
                          and native datasets on threads. A worker process that
                          dies is replaced and its sample loaded again; under an
                          IterableDataset (whose iterator cannot be replayed) its
                          death ends the epoch with a RuntimeError naming it.
      in_order            True (the default): batches in sampler order. False: a
                          complete batch may overtake an earlier, slower one.
      error_policy        what a sample that fails to load does: "raise" (the
                          loop raises feedline.SampleError), "skip" (its batch
                          comes out one shorter) or "replace" (another sample,
                          chosen from the seed, takes its place; a "replaced"
                          mask is added to the batch).
      report_every        None (the default): no reports. N: every N training
                          steps and at the end of each epoch, report where the
                          loop's time goes (step time, data wait and its share,
                          samples/s and a verdict such as "loader-bound: the
                          loop waited 41% of the time; decode is 83% of worker
                          time; ..."). "epoch": at the end of each epoch only.
                          stats()["loop"] gives the same on demand
                          (docs/monitoring.md).
      report              where reports go: a logging.Logger (default: the
                          "feedline" logger, at INFO), or a callable taking the
                          report dict (its "text" is the line).

    Iterating yields one batch per step: a tuple of numpy arrays when samples
    are tuples (native image datasets give (image, label)), a dict when they
    are dicts, one array when they are single arrays. Extra arrays the loader
    adds (lengths of padded fields, the "replaced" mask) follow the fields of a
    tuple. The arrays view the batch's memory without a copy; while any of
    them is alive its batch slot stays out of the loader's pool.

    Each `for batch in loader` runs one epoch; starting a new iteration
    abandons an unfinished one.
    """

    # numpy has no bfloat16: a torch.bfloat16 field is refused here, naming
    # it. feedline.torch.DataLoader, whose batches are torch tensors, sets this.
    _delivers_torch_bfloat16 = False
    # What a collate_fn returns is the batch as it is (no copy into the
    # batch's arrays): feedline.torch sets this, torch's contract.
    _keeps_collate_result = False
    # Seed `random`, numpy and torch per sample from (seed, epoch, index), so
    # that batches do not depend on num_workers; feedline.torch seeds each
    # worker as torch does instead (feedline/_torch_seeding.py).
    _seeds_samples = True
    # A Python dataset's batch loads whole in worker b % num_workers, as
    # torch assigns them (LoaderOptions::batch_per_worker): feedline.torch.
    _assigns_batches_to_workers = False

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=False,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        drop_last=False,
        prefetch_factor=2,
        persistent_workers=False,
        use_shared_memory=True,
        timeout=0,
        worker_init_fn=None,
        seed=None,
        error_policy="raise",
        worker_mode="auto",
        in_order=True,
        report_every=None,
        report=None,
        memory_budget=None,
    ):
        if worker_mode not in ("thread", "process", "auto"):
            raise ValueError(
                f'worker_mode must be "thread", "process" or "auto", got {worker_mode!r}'
            )
        self.dataset = dataset
        self.batch_size = batch_size
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.use_shared_memory = use_shared_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.seed = _draw_seed() if seed is None else _int_argument("seed", seed, 0, 2**64 - 1)
        self.error_policy = error_policy

        native = _native_dataset(dataset)
        self._iterable = native is None and _is_iterable_dataset(dataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError(
                "an IterableDataset has no indices: shuffle, sampler and batch_sampler "
                "must be left unset"
            )
        fields = getattr(dataset, "_fields", None) if native is not None else None
        workers = _auto_or_int_argument("num_workers", num_workers, 0)
        prefetch = _auto_or_int_argument("prefetch_factor", prefetch_factor, 1)
        # The tuner runs with num_workers "auto", or prefetch "auto" and workers.
        tuned = workers == _AUTO or (prefetch == _AUTO and workers != 0)
        if prefetch == _AUTO and workers == 0:
            warnings.warn('DataLoader: prefetch_factor="auto" has no effect with num_workers=0 '
                          '(batches load in the calling thread, nothing is prefetched); use '
                          'num_workers > 0 or "auto" to let the loader tune its batch slots',
                          stacklevel=_user_stacklevel())
        self.memory_budget = memory_budget
        budget = _memory_budget_argument(memory_budget, tuned)
        self._loader = _feedline._Loader(
            native if native is not None else dataset,
            self._iterable,
            None if batch_size is None else _int_argument("batch_size", batch_size, *_INT64),
            bool(shuffle),
            None if sampler is None else _native(sampler),
            None if batch_sampler is None else _native(batch_sampler),
            workers,
            collate_fn,
            bool(drop_last),
            prefetch,
            bool(persistent_workers),
            _seconds_argument("timeout", timeout),
            worker_init_fn,
            self.seed,
            str(error_policy),
            None if fields is None else list(fields),
            worker_mode,
            bool(use_shared_memory),
            bool(in_order),
            budget,
            torch_bfloat16=self._delivers_torch_bfloat16,
            keep_collate_result=self._keeps_collate_result,
            seed_samples=self._seeds_samples,
            batch_per_worker=self._assigns_batches_to_workers and native is None,
        )
        if report_every is not None:
            self._loader.set_report(_report_every(report_every), _reporter(report))
        elif report is not None:
            raise ValueError("DataLoader: report is given but report_every is None")
        self.worker_mode = self._loader.worker_mode()  # "auto" resolved
        self.in_order = bool(in_order)
        self._iteration = 0
        _live_loaders.add(self)

    def __iter__(self):
        # Abandons an unfinished epoch, unless load_state_dict just restored
        # one: then this iteration continues it. Counted only once started:
        # a refused iteration (from the loader's own dataset) replaces none.
        self._loader.start_iteration()
        self._iteration += 1
        return _EpochIterator(self, self._iteration)

    def __len__(self):
        if self._iterable:
            raise TypeError("a DataLoader over an IterableDataset has no length")
        return len(self._loader)

    def set_epoch(self, epoch):
        """Sets the epoch the next iteration runs (it shuffles and seeds the
        random transforms); later iterations count up from it. With a
        DistributedBatchSampler whose set_epoch was called, that sampler's
        epoch is the loader's: another value here raises ValueError."""
        self._loader.set_epoch(int(epoch))

    @property
    def epoch(self):
        """The epoch the next (or running) iteration uses."""
        return self._loader.epoch()

    def state_dict(self):
        """Where iteration stands, as a plain dict of ints and strings (safe for
        torch.save and JSON): inside an epoch, that epoch and the batches
        delivered so far; between epochs, the next epoch at batch 0. It also
        records what the position belongs to (seed, dataset size, sampler,
        batch size, drop_last, ranks, the epoch's batch count and a digest of
        its batches), so that load_state_dict can refuse a mismatch. With a
        DistributedBatchSampler it also holds `global_position`, what all ranks
        consumed, from which a job of another world size resumes."""
        state = self._loader.state()
        if isinstance(self.batch_sampler, DistributedBatchSampler):
            state["global_position"] = self.batch_sampler.global_position(state)
        if isinstance(self._sampler_with_state(), HardExampleSampler):
            # The sampler's draws depend on the losses reported so far.
            state["sampler_state"] = self._sampler_with_state().state_dict()
        return state

    def _sampler_with_state(self):
        sampler = self.sampler
        if sampler is None and self.batch_sampler is not None:
            sampler = getattr(self.batch_sampler, "sampler", None)
        return sampler

    def load_state_dict(self, state):
        """Continues from a state_dict(): the next iteration (`for`, or
        iter()/next()) yields the rest of the recorded epoch, bit-identical
        to the uninterrupted run for any num_workers, and the iteration after
        it runs the following epoch. Raises ValueError naming the first
        recorded field that differs from this loader."""
        if not isinstance(state, dict):
            raise TypeError(f"load_state_dict takes a dict from state_dict(), got {type(state).__name__}")
        if isinstance(self.batch_sampler, DistributedBatchSampler):
            state = self.batch_sampler._position_to_restore(state)
        if "sampler_state" in state:
            sampler = self._sampler_with_state()
            if not isinstance(sampler, HardExampleSampler):
                raise ValueError(
                    "load_state_dict: the state has a sampler_state, but this DataLoader has no "
                    "HardExampleSampler"
                )
            state = dict(state)
            sampler.load_state_dict(state.pop("sampler_state"))
        self._loader.restore(state)
        # An iterator from before belongs to the epoch it was iterating: it
        # must not take the restored position's batches.
        self._iteration += 1

    def stats(self):
        """What the loader measured: samples, batches, errors, seconds per
        stage, consumer wait, per-worker busy time, worker processes restarted
        after they died (worker_restarts), and the training loop since the
        start: "loop" holds the step time, data wait per batch and its share,
        samples/s and the verdict (docs/monitoring.md). With num_workers or
        prefetch_factor "auto", "tuner" holds what the loader chose, when and
        why (docs/tuning.md)."""
        stats = self._loader.stats()
        stats["tuner"] = self._loader.tuner_stats()
        return stats

    @property
    def worker_pids(self):
        """The process id of each worker process, by worker id; None for a
        worker whose process is not running now (being replaced, or not
        started yet). Empty when workers are threads. Never 0 or negative,
        so os.kill on an entry cannot signal a process group by mistake."""
        return [pid if pid > 0 else None for pid in self._loader.worker_pids()]

    def close(self):
        """Stops and joins the workers. Batches already returned stay valid."""
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


from feedline.hdf5 import HDF5Dataset  # noqa: E402 (feedline.hdf5 builds on NativeDataset)
