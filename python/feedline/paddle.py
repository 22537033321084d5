"""feedline for Paddle users: paddle.io.DataLoader's signature, paddle
Tensors out in the structures paddle.io gives. The one changed line::

    from feedline.paddle import DataLoader   # was: from paddle.io import DataLoader

An adapter over feedline.DataLoader with no loading logic of its own: it
checks paddle.io's arguments with Paddle's messages, sets up the worker
processes as Paddle's own are set up (dynamic graph on the CPU, seeds,
paddle.io.get_worker_info()), and turns each batch's numpy arrays into
paddle Tensors through DLPack, sharing their memory (in a static-graph
program, into the DenseTensors an Executor is fed: feedline/_paddle_static.py).
Without paddle, batches stay numpy arrays. docs/paddle.md maps every argument
and lists what differs on purpose; python/tests/paddle_contract runs the same
assertions against paddle.io.DataLoader and this one.
"""

import collections.abc
import importlib
import os
import sys
import weakref

import numpy as np

from feedline import _lowering, _paddle_static, io
from feedline._framework import ConvertingIterator, map_batch
from feedline.frontends import _shaping

__all__ = ["DataLoader"]


def _paddle_module():
    try:
        return importlib.import_module("paddle")
    except ImportError:
        return None


def _paddle_to_tensor():
    """A numpy array to a paddle Tensor through DLPack (sharing its memory),
    or None when paddle is not installed."""
    paddle = _paddle_module()
    if paddle is None:
        return None
    try:
        from_dlpack = importlib.import_module("paddle.utils.dlpack").from_dlpack
    except ImportError:
        return None

    def to_tensor(array):
        try:
            capsule = array.__dlpack__()
        except BufferError:
            # numpy before 1.25 exports no bool arrays through DLPack: a bool
            # field (a mask) is copied instead, and stays bool.
            return paddle.to_tensor(array)
        return from_dlpack(capsule)

    return to_tensor


def _is_paddle_tensor(value):
    paddle = sys.modules.get("paddle")
    cls = getattr(paddle, "Tensor", None)
    return isinstance(cls, type) and isinstance(value, cls)


def _in_dynamic_mode():
    """Whether paddle runs its dynamic graph; None without paddle."""
    paddle = sys.modules.get("paddle") or _paddle_module()
    check = getattr(paddle, "in_dynamic_mode", None)
    return None if check is None else bool(check())


def _paddle_places(places):
    """`places` as paddle.io.DataLoader keeps them (a list of Places), checked
    by Paddle's own conversion so that a wrong one fails with Paddle's
    message; as given when this paddle has no such conversion."""
    try:
        framework = importlib.import_module("paddle.base.framework")
        to_place = framework._get_paddle_place
        to_places = framework._get_paddle_place_list
        current = framework._current_expected_place
    except (ImportError, AttributeError):
        return places
    if places is None:
        places = current()
    places = to_places(places) if isinstance(places, (list, tuple)) else to_place(places)
    return list(places) if isinstance(places, (list, tuple)) else [places]


def _is_paddle_stream(dataset):
    """paddle.io's rule for a stream: an IterableDataset (Paddle's,
    feedline's, torch's); any other dataset is indexed, a BatchSampler given
    as the dataset too (its len() is its number of batches). An object with
    __iter__ and neither __getitem__ nor __len__, which paddle.io cannot
    index, stays a stream, as feedline.DataLoader takes it."""
    if not io._is_iterable_dataset(dataset):
        return False
    duck_typed = (not hasattr(dataset, "__getitem__")
                  and not isinstance(dataset, io.IterableDataset))
    return not (duck_typed and hasattr(dataset, "__len__"))


class _NotSubscriptable:
    """A dataset paddle.io indexes though it has no __getitem__ (a
    BatchSampler given as the dataset): its len() counts, and reading a
    sample fails with the TypeError paddle.io's fetcher meets."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        raise TypeError(f"'{type(self.dataset).__name__}' object is not subscriptable")


class _StreamHasNoLength(ValueError, TypeError):
    """Paddle's error for len() of a loader over an IterableDataset, a
    ValueError. Also a TypeError, so that list(loader) (which asks len() for
    a size hint and ignores only TypeError) still lists the stream."""


# ---------------------------------------------------------------------------
# Worker processes


def _set_paddle_worker_info(worker_id, num_workers, seed, dataset):
    # paddle.io.get_worker_info() reads this module global: setting it is the
    # only way to make Paddle's public function answer in feedline's workers.
    try:
        paddle_worker = importlib.import_module("paddle.io.dataloader.worker")
        paddle_worker._worker_info = paddle_worker.WorkerInfo(
            id=worker_id, num_workers=num_workers, dataset=dataset, seed=seed)
    except (ImportError, AttributeError, TypeError):
        pass  # another paddle: get_worker_info() stays None


class _PaddleWorkerInit:
    """The worker_init_fn this adapter gives feedline: in a worker process it
    sets the process up as Paddle's worker loop does, then calls the user's
    worker_init_fn. Paddle's dynamic-graph mode is per thread and feedline
    forks its workers from a loader thread, so a worker starts in static
    mode: paddle.to_tensor in __getitem__ would return a graph Value. Paddle
    runs its workers' code in dynamic mode on the CPU, and seeds paddle's
    generator with base_seed + worker_id (feedline seeds `random` and numpy
    per sample itself). In the training process (worker threads, for native
    datasets) only the user's function runs."""

    def __init__(self, user_fn, num_workers, dataset):
        self.user_fn = user_fn
        self.num_workers = num_workers
        self.dataset = dataset
        self.base_seed = 0  # drawn by the loader for each iteration, as Paddle does
        self.parent_pid = os.getpid()

    def __call__(self, worker_id):
        if os.getpid() != self.parent_pid:
            paddle = sys.modules.get("paddle")
            if paddle is not None:
                try:
                    paddle.disable_static(paddle.CPUPlace())
                    paddle.set_device("cpu")
                    paddle.seed(self.base_seed + worker_id)
                except (AttributeError, ValueError, RuntimeError):
                    pass  # a stand-in paddle without these: nothing to set up
                info = io.get_worker_info()  # the worker count "auto" resolved to
                num_workers = info.num_workers if info is not None else self.num_workers
                _set_paddle_worker_info(worker_id, num_workers, self.base_seed, self.dataset)
        if self.user_fn is not None:
            self.user_fn(worker_id)


# ---------------------------------------------------------------------------
# Batches


class _PaddleShaping(_shaping.Shaping):
    """paddle.io's structure: default_collate_fn gives lists for sequences
    (namedtuples too) and plain dicts for mappings; unbatched
    (default_convert_fn) a Python number stays a Python number and a numpy
    scalar stays one. `to_tensor` None leaves arrays numpy arrays."""

    def leaf(self, value, kind, unbatched, to_tensor):
        if isinstance(value, list):  # an object field: one object per sample
            return value[0] if unbatched and len(value) == 1 else value
        if not isinstance(value, np.ndarray):
            return value
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


_POLICY = _PaddleShaping()


def _load_tree(loader):
    # The first sample's schema, its classes resolved; False when there is
    # none (a native dataset) or a class cannot be found.
    return _shaping.load_tree(loader._loader) or False


def _first_sample(collate_fn):
    """collate_fn called with the one sample of a batch (batch_size=None)."""
    return lambda samples: collate_fn(samples[0])


class _SamplesAsReturned:
    """Calls the user's collate_fn with the samples as the dataset returned
    them (tuples, Python numbers, numpy scalars restored from the sample's
    schema), as paddle.io's collate_fn receives them. `per_sample`
    (batch_size=None): collate_fn gets each sample alone, as in Paddle."""

    def __init__(self, loader, collate_fn, per_sample):
        # Weakly: the native loader holds this function, and a strong
        # reference back would be a cycle through C++ that Python's garbage
        # collector cannot see (the loader and its workers never freed).
        self.loader = weakref.ref(loader)
        self.collate_fn = collate_fn
        self.per_sample = per_sample
        self.tree = None
        # What a worker process calls with the samples it loaded, which are
        # as the dataset returned them (docs/python.md, "collate_fn").
        self.in_worker = _first_sample(collate_fn) if per_sample else collate_fn

    def __call__(self, samples):
        loader = self.loader()
        if self.tree is None and loader is not None:
            self.tree = _load_tree(loader)
        if self.tree and loader is not None:
            to_tensor = loader._to_tensor
            samples = [_shaping.restore_sample(s, self.tree, to_tensor, _POLICY) for s in samples]
        if self.per_sample:
            return self.collate_fn(samples[0])
        return self.collate_fn(samples)


def _as_paddle_returns(value, to_tensor):
    """A collate_fn's result as paddle.io hands it on: arrays become Tensors,
    Tensors stay, tuples and lists become lists, mappings dicts, and
    numbers, strings and other objects are left as they are."""
    if isinstance(value, np.ndarray):
        return to_tensor(np.ascontiguousarray(value)) if to_tensor is not None else value
    if _is_paddle_tensor(value) or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {k: _as_paddle_returns(v, to_tensor) for k, v in value.items()}
    if isinstance(value, collections.abc.Sequence):
        return [_as_paddle_returns(v, to_tensor) for v in value]
    return value


# ---------------------------------------------------------------------------
# The loader


class DataLoader(io.DataLoader):
    """paddle.io.DataLoader (3.x), loaded by feedline.

    Every argument of paddle.io.DataLoader is accepted, in Paddle's order,
    and checked as Paddle checks it (AssertionError or ValueError, Paddle's
    messages):

      dataset             a paddle.io.Dataset or IterableDataset (or any
                          dataset feedline.DataLoader takes).
      feed_list           static-graph feeds (paddle.static.data variables):
                          outside dynamic mode, return_list=False batches are
                          keyed by their names (feedline/_paddle_static.py);
                          unused in dynamic mode.
      places              checked and kept as Paddle keeps them (loader.places);
                          in dynamic mode batches are on the host (CPU), as
                          paddle.io gives them on a CPU device: move them with
                          .cuda() or paddle.to_tensor(..., place=). In static
                          mode each step has a batch per place, on that place.
      return_list         as in paddle.io: in static mode False gives a dict of
                          DenseTensors per place (feed_list required), True the
                          batch's structure per place; in dynamic mode the
                          same lists either way.
      batch_sampler, batch_size, shuffle, drop_last
                          as in paddle.io; batch_size=None loads one sample per
                          step with no batch dimension (Python numbers stay
                          Python numbers).
      collate_fn          called with the list of samples as the dataset
                          returned them (one sample with batch_size=None); what
                          it returns is the batch, its arrays made Tensors and
                          its tuples lists, as in paddle.io.
      num_workers         feedline workers: processes for Python datasets, set up
                          as Paddle's (dynamic graph on the CPU, paddle.seed,
                          paddle.io.get_worker_info()); "auto" lets the loader
                          choose (docs/tuning.md).
      use_buffer_reader, reader_buffer_size
                          accepted: feedline always prefetches (prefetch_factor).
      prefetch_factor     batches in flight per worker.
      use_shared_memory   as in feedline.DataLoader (False with num_workers=0, as
                          Paddle sets it).
      timeout             seconds a sample may take (0: no limit).
      worker_init_fn      f(worker_id), in each worker, after Paddle's set-up.
      persistent_workers  keep the workers between epochs.

    Extra keywords go to feedline.DataLoader (seed, error_policy, ...).
    `to_tensor` converts a numpy array to the delivered tensor; it defaults to
    paddle's DLPack import when paddle is importable, else arrays are
    returned as they are.

    Batches are what paddle.io gives: a list for tuple or list samples, a
    dict for dict samples, one Tensor for single arrays or numbers, lists of
    strings; dtypes as Paddle gives them (a Python int is int64, a float
    float64). A dataset error raises feedline.SampleError naming the sample
    (Paddle raises SystemError from its reader thread).
    """

    # Worker w loads batches w, w + n, ... whole, as Paddle hands its workers
    # their batches (a dataset that reads get_worker_info() per batch sees
    # what it would see under Paddle).
    _assigns_batches_to_workers = True
    # A BatchSampler given as the dataset is indexed, as in paddle.io.
    _is_stream = staticmethod(_is_paddle_stream)

    def __init__(
        self,
        dataset,
        feed_list=None,
        places=None,
        return_list=True,
        batch_sampler=None,
        batch_size=1,
        shuffle=False,
        drop_last=False,
        collate_fn=None,
        num_workers=0,
        use_buffer_reader=True,
        reader_buffer_size=2,
        prefetch_factor=2,
        use_shared_memory=True,
        timeout=0,
        worker_init_fn=None,
        persistent_workers=False,
        *,
        to_tensor=None,
        native_transforms=True,
        **feedline_options,
    ):
        # Paddle's checks, with Paddle's messages, in Paddle's order. "auto"
        # (docs/tuning.md) is feedline's, and feedline.DataLoader checks it.
        if not return_list and _in_dynamic_mode() is False:
            assert feed_list is not None, "feed_list should be set when return_list=False"
        self.places = _paddle_places(places)
        if not isinstance(num_workers, str):
            assert num_workers >= 0, "num_workers should be a non-negative value"
        if not isinstance(prefetch_factor, str):
            assert prefetch_factor > 0, "prefetch_factor should be a positive value"
        assert timeout >= 0, "timeout should be a non-negative value"
        iterable = _is_paddle_stream(dataset)
        if iterable:
            if shuffle:
                raise ValueError(f"IterableDataset not support shuffle, but got shuffle={shuffle}")
            if batch_sampler is not None:
                raise ValueError("IterableDataset expect unspecified batch_sampler")
        if batch_sampler is not None:
            assert batch_size == 1 and not shuffle and not drop_last, (
                "batch_size/shuffle/drop_last should not be set when batch_sampler is given")
        elif batch_size is not None:
            assert batch_size > 0, (
                "batch_size should be None or a positive value when batch_sampler is not given")
            if not iterable:  # the checks of the BatchSampler Paddle makes
                assert isinstance(shuffle, bool), (
                    f"shuffle should be a boolean value, but got {type(shuffle)}")
                assert isinstance(batch_size, int), (
                    f"batch_size should be a positive integer, but got {batch_size}")
                assert isinstance(drop_last, bool), (
                    f"drop_last should be a boolean value, but got {type(drop_last)}")

        unbatched = batch_size is None and batch_sampler is None
        if not iterable and not hasattr(dataset, "__getitem__"):
            dataset = _NotSubscriptable(dataset)
        # A paddle.vision DatasetFolder whose transforms feedline has natively
        # loads through the native pipeline (feedline/_lowering.py).
        dataset, self._lowering = _lowering.lower(dataset, "paddle", native_transforms,
                                                  collate_fn=collate_fn)
        self._to_tensor = _paddle_to_tensor() if to_tensor is None else to_tensor
        # A collate_fn's return value is the batch (Paddle's contract): the
        # engine hands it on as it is, and _convert makes its arrays Tensors.
        # With batch_size=None, collate_fn gets one sample (default_convert_fn
        # otherwise, which _PaddleShaping follows).
        self._keeps_collate_result = collate_fn is not None
        wrapped_collate = (None if collate_fn is None
                           else _SamplesAsReturned(self, collate_fn, per_sample=unbatched))
        # Worker processes, which run Python datasets, are set up as Paddle's;
        # a native dataset's worker threads run no paddle code.
        self._worker_init = None
        if num_workers != 0 and io._native_dataset(dataset) is None:
            self._worker_init = _PaddleWorkerInit(worker_init_fn, num_workers, dataset)
        super().__init__(
            dataset,
            batch_size=1 if unbatched or batch_sampler is not None else batch_size,
            shuffle=bool(shuffle),
            batch_sampler=batch_sampler,
            num_workers=num_workers,
            collate_fn=wrapped_collate,
            drop_last=bool(drop_last) and batch_sampler is None,
            prefetch_factor=prefetch_factor,
            persistent_workers=persistent_workers,
            use_shared_memory=bool(use_shared_memory) and num_workers != 0,
            timeout=timeout,
            worker_init_fn=self._worker_init or worker_init_fn,
            **feedline_options,
        )
        # The attributes paddle.io.DataLoader has, for scripts that read them.
        if isinstance(self.dataset, _NotSubscriptable):
            self.dataset = self.dataset.dataset
        self.feed_list = feed_list
        self.return_list = return_list
        self.collate_fn = collate_fn
        self.worker_init_fn = worker_init_fn
        self.use_buffer_reader = use_buffer_reader
        self.reader_buffer_size = reader_buffer_size
        self.prefetch_factor = prefetch_factor
        self.drop_last = drop_last
        self.batch_size = None if batch_sampler is not None or unbatched else batch_size
        self.auto_collate_batch = not unbatched
        if batch_sampler is None and not unbatched and not iterable:
            # Paddle's loader always has a batch sampler when it batches a
            # map-style dataset; this one describes the order the loader
            # uses (feedline's samplers with its seed).
            sampler = (io.RandomSampler(dataset, seed=self.seed) if shuffle
                       else io.SequenceSampler(dataset))
            self.batch_sampler = io.BatchSampler(sampler=sampler, batch_size=batch_size,
                                                 drop_last=drop_last)
        self._unbatched = unbatched
        self._schema_tree = None

    def __iter__(self):
        if self._worker_init is not None:
            # Paddle draws its workers' base seed from numpy for each iteration
            # (persistent workers keep the one they started with).
            self._worker_init.base_seed = int(np.random.randint(0, sys.maxsize))
        # Native transforms (feedline/_lowering.py): what runs natively, said once.
        if self._lowering is not None:
            self._lowering.log_once()
        if _in_dynamic_mode() is False:
            # Paddle's static graph, as paddle.io decides it: each time
            # batches are read. Same epoch, re-dressed for an Executor.
            names = _paddle_static.feed_names(self.feed_list)
            return _paddle_static.StaticGraphBatches(
                super().__iter__(), self._host_batch, self.places, names, self.return_list,
                self.__len__)
        return ConvertingIterator(self, super().__iter__())

    def stats(self):
        """feedline.DataLoader.stats(), and "native_transforms": what of a
        paddle.vision image dataset runs natively (docs/python.md, "Native
        transforms"), or None for other datasets."""
        stats = super().stats()
        stats["native_transforms"] = None if self._lowering is None else self._lowering.stats()
        return stats

    def __call__(self):
        """iter(self): `for batch in loader():`, as paddle.io allows."""
        return self.__iter__()

    def __len__(self):
        if self._iterable:
            raise _StreamHasNoLength("length of IterableDataset not supported")
        return super().__len__()

    def _convert(self, batch):
        return self._paddle_batch(batch, self._to_tensor)

    def _host_batch(self, batch):
        return self._paddle_batch(batch, None)

    def _paddle_batch(self, batch, to_tensor):
        """feedline's batch in paddle.io's structure, its arrays made
        tensors by `to_tensor` (None: left numpy arrays)."""
        if self._keeps_collate_result:
            return _as_paddle_returns(batch, to_tensor)
        if self._schema_tree is None:
            self._schema_tree = _load_tree(self)
        if self._schema_tree:
            return _shaping.shape(batch, self._schema_tree, self._unbatched, to_tensor, _POLICY)
        # A native dataset's batch, or a sample whose classes cannot be found:
        # tuples become lists, dicts stay dicts.
        unbatched = self._unbatched
        return map_batch(batch, lambda value: _POLICY.leaf(value, "numpy", unbatched, to_tensor))
