"""feedline.paddle.DataLoader (re-exported by feedline/paddle.py, the
public import path): paddle.io.DataLoader's signature, paddle Tensors out in
the structures paddle.io gives.

An adapter over feedline.DataLoader with no loading logic of its own: it
checks paddle.io's arguments with Paddle's messages, sets up the worker
processes as Paddle's own are set up (dynamic graph on the CPU, seeds,
paddle.io.get_worker_info()), and turns each batch's numpy arrays into
paddle Tensors through DLPack, sharing their memory (in a static-graph
program, into the DenseTensors an Executor is fed: frontends/paddle/static.py).
Without paddle, batches stay numpy arrays. docs/paddle.md maps every argument
and lists what differs on purpose; python/tests/paddle_contract runs the same
assertions against paddle.io.DataLoader and this one.
"""

import importlib
import sys

import numpy as np

from feedline import io
from feedline.frontends import _shaping
from feedline.frontends.frontend import FrontendPolicy
from feedline.frontends.iterator import ConvertingIterator, map_batch
from feedline.frontends.paddle import batches as _batches
from feedline.frontends.paddle import lowering as _lowering
from feedline.frontends.paddle import static as _static
from feedline.frontends.paddle.errors import StreamHasNoLength
from feedline.frontends.paddle.seeding import PaddleWorkerInit
from feedline.frontends.samples import SamplesAsReturned

__all__ = ["DataLoader"]


def _paddle_module():
    try:
        return importlib.import_module("paddle")
    except ImportError:
        return None


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


class DataLoader(io.DataLoader):
    """paddle.io.DataLoader (3.x), loaded by feedline.

    Every argument of paddle.io.DataLoader is accepted, in Paddle's order,
    and checked as Paddle checks it (AssertionError or ValueError, Paddle's
    messages):

      dataset             a paddle.io.Dataset or IterableDataset (or any
                          dataset feedline.DataLoader takes).
      feed_list           static-graph feeds (paddle.static.data variables):
                          outside dynamic mode, return_list=False batches are
                          keyed by their names (frontends/paddle/static.py);
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
        # loads through the native pipeline (frontends/lowering.py).
        dataset, self._lowering = _lowering.lower(dataset, native_transforms,
                                                  collate_fn=collate_fn)
        self._to_tensor = _batches.paddle_to_tensor() if to_tensor is None else to_tensor
        frontend = FrontendPolicy(
            name="paddle",
            delivers_torch_bfloat16=False,
            # A collate_fn's return value is the batch (Paddle's contract):
            # the engine hands it on as it is, and _convert makes its arrays
            # Tensors.
            keeps_collate_result=collate_fn is not None,
            seeds_samples=True,
            # Worker w loads batches w, w + n, ... whole, as Paddle hands its
            # workers their batches (a dataset that reads get_worker_info()
            # per batch sees what it would see under Paddle).
            assigns_batches_to_workers=True,
            # A BatchSampler given as the dataset is indexed, as in paddle.io.
            stream_rule=_is_paddle_stream,
            # Batch fields go to paddle through DLPack when the loader makes
            # its own tensors; a to_tensor given takes numpy arrays.
            imports_through_dlpack=to_tensor is None and self._to_tensor is not None,
        )
        # With batch_size=None, collate_fn gets one sample (default_convert_fn
        # otherwise, which PaddleShaping follows).
        wrapped_collate = (None if collate_fn is None else
                           SamplesAsReturned(self, collate_fn, _batches.POLICY,
                                             per_sample=unbatched))
        # Worker processes, which run Python datasets, are set up as Paddle's;
        # a native dataset's worker threads run no paddle code.
        self._worker_init = None
        if num_workers != 0 and io._native_dataset(dataset) is None:
            self._worker_init = PaddleWorkerInit(worker_init_fn, num_workers, dataset)
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
            frontend=frontend,
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
        # Native transforms (frontends/lowering.py): what runs natively, said once.
        if self._lowering is not None:
            self._lowering.log_once()
        if _in_dynamic_mode() is False:
            # Paddle's static graph, as paddle.io decides it: each time
            # batches are read. Same epoch, re-dressed for an Executor.
            names = _static.feed_names(self.feed_list)
            return _static.StaticGraphBatches(
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
            raise StreamHasNoLength("length of IterableDataset not supported")
        return super().__len__()

    def _convert(self, batch):
        return self._paddle_batch(batch, self._to_tensor)

    def _host_batch(self, batch):
        return self._paddle_batch(batch, None)

    def _paddle_batch(self, batch, to_tensor):
        """feedline's batch in paddle.io's structure, its arrays made
        tensors by `to_tensor` (None: left numpy arrays)."""
        if self._frontend.keeps_collate_result:
            return _batches.as_paddle_returns(batch, to_tensor)
        if self._schema_tree is None:
            # False when there is none (a native dataset) or a class cannot be found.
            self._schema_tree = _shaping.load_tree(self._loader) or False
        if self._schema_tree:
            return _shaping.shape(batch, self._schema_tree, self._unbatched, to_tensor,
                                  _batches.POLICY)
        # A native dataset's batch, or a sample whose classes cannot be found:
        # tuples become lists, dicts stay dicts.
        unbatched = self._unbatched
        return map_batch(batch, lambda value: _batches.POLICY.leaf(value, "numpy", unbatched, to_tensor))
