"""feedline.torch.DataLoader (re-exported by feedline/torch.py, the public
import path): torch.utils.data.DataLoader's signature, torch tensors out.

An adapter over feedline.DataLoader that behaves as torch's loader does:
torch's argument checks and messages, torch's batch types (what
default_collate gives, or exactly what a collate_fn returned), torch's
worker seeding and get_worker_info(), the dataset's own exception types.
torch's own DataLoader test suite runs against it in make test
(tests/peers/run_torch_suite.py). See docs/python.md, "Coming from torch".
"""

import math
import multiprocessing
import os
import signal
import time
import types
import warnings
import weakref

import numpy as np
import torch
from torch.utils.dlpack import from_dlpack as _from_dlpack

from feedline import _feedline, io
from feedline.frontends import _shaping
from feedline.frontends.frontend import FrontendPolicy
from feedline.frontends.iterator import ConvertingIterator, map_batch
from feedline.frontends.samples import SamplesAsReturned
from feedline.frontends.torch import batches as _batches
from feedline.frontends.torch import datapipes as _datapipes
from feedline.frontends.torch import errors as _errors
from feedline.frontends.torch import detection_lowering as _detection_lowering
from feedline.frontends.torch import detection_v2_lowering as _detection_v2_lowering
from feedline.frontends.torch import lowering as _lowering
from feedline.frontends.torch import seeding as _seeding
from feedline.frontends import hf_lowering as _hf_lowering

__all__ = ["DataLoader"]

_pin_warning_given = False

# Set after construction, these would make the loader disagree with itself:
# torch refuses it, and so does this adapter.
_FROZEN_ATTRIBUTES = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                      "persistent_workers")


def _seed_from_torch(generator):
    # The shuffle's and native transforms' seed, drawn from `generator` or
    # torch's default generator: torch.manual_seed(s) makes a run repeatable.
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item()) & (2**63 - 1)


def _check_multiprocessing_context(context, num_workers):
    """torch's checks of multiprocessing_context. feedline starts its own
    worker processes (fork), so a valid context is accepted and not used."""
    if context is None:
        return
    if isinstance(num_workers, int) and num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        valid = multiprocessing.get_all_start_methods()
        if context not in valid:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {valid!r}, but got multiprocessing_context={context!r}")
        return
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        "string specifying the start method, but got "
                        f"multiprocessing_context={context}")


def _warn_if_excessive(num_workers):
    # torch's warning, worded as torch words it (scripts filter on it).
    if not isinstance(num_workers, int) or num_workers == 0:
        return
    try:
        suggested = len(os.sched_getaffinity(0))
        cpuset = True
    except (AttributeError, OSError):
        suggested, cpuset = os.cpu_count(), False
    if suggested is not None and num_workers <= suggested:
        return
    limit = (f"Our suggested max number of worker in current system is {suggested}"
             f"{'' if cpuset else ' (`cpuset` is not taken into account)'}, which is smaller "
             "than what this DataLoader is going to create." if suggested is not None else
             "DataLoader is not able to compute a suggested max number of worker in current "
             "system.")
    warnings.warn(f"This DataLoader will create {num_workers} worker processes in total. {limit} "
                  "Please be aware that excessive worker creation might get DataLoader running "
                  "slow or even freeze, lower the worker number to avoid potential "
                  "slowness/freeze if necessary.", stacklevel=3)


class _WorkerProcess:
    """A worker process as torch's iterator lists them (`_workers`, which
    scripts read for the pids): pid, is_alive() and join(timeout)."""

    def __init__(self, pid):
        self.pid = pid

    def is_alive(self):
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except (OSError, IndexError):
            return False

    @property
    def exitcode(self):
        """None while it runs; then its exit status, or minus the signal
        that ended it, as feedline saw it when it reaped the process."""
        return None if self.is_alive() else _feedline._worker_exitcode(self.pid)

    def terminate(self):
        if self.is_alive():
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def join(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.is_alive() and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.01)


class _TorchIterator(ConvertingIterator):
    """Iterates the loader's batches as torch's iterator does: errors in
    torch's types and wordings (frontends/torch/errors.py), and the warning
    torch gives when an IterableDataset yields more than its len() said."""

    __slots__ = ("_yielded", "_processes")

    def __init__(self, loader, batches):
        super().__init__(loader, batches)
        self._yielded = 0
        self._processes = {}

    @property
    def _workers(self):
        """The worker processes started so far, by worker id (torch's
        iterator attribute); empty with worker threads or num_workers=0."""
        for worker, pid in enumerate(self._loader.worker_pids):
            if pid is not None:
                self._processes.setdefault(worker, _WorkerProcess(pid))
                if self._processes[worker].pid != pid:  # replaced after a death
                    self._processes[worker] = _WorkerProcess(pid)
        return [self._processes[w] for w in sorted(self._processes)]

    def __next__(self):
        try:
            batch = next(self._batches)
        except StopIteration:
            raise
        except Exception as error:
            torch_error = _errors.as_torch_error(error, self._loader.timeout)
            if torch_error is None:
                raise
            raise torch_error from error
        self._yielded += 1
        reported = self._loader._length_reported
        if reported is not None and self._yielded > reported:
            message = (f"Length of IterableDataset {self._loader.dataset} was reported to be "
                       f"{reported} (when accessing len(dataloader)), but {self._yielded} samples "
                       "have been fetched. ")
            if self._loader.num_workers:
                message += ("For multiprocessing data-loading, this could be caused by not "
                            "properly configuring the IterableDataset replica at each worker.")
            warnings.warn(message)
        return self._loader._convert(batch)


class DataLoader(io.DataLoader):
    """torch.utils.data.DataLoader, loaded by feedline.

    Every argument of torch's DataLoader (1.13 and 2.x) is accepted and
    validated as torch does:

      dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
      collate_fn, drop_last, timeout, worker_init_fn, persistent_workers
                              as in torch (num_workers are feedline workers;
                              "auto" lets the loader choose, docs/tuning.md);
                              a collate_fn's return value is the batch, as it
                              is;
      pin_memory              batches are copied into pinned memory when CUDA
                              is available; without it a warning says so once
                              and batches stay in the loader's memory;
      pin_memory_device       accepted ("" or a CUDA device);
      generator               a torch.Generator: it seeds the shuffle and the
                              native transforms once, and each iteration's
                              worker seeds (default: torch's global
                              generator, so torch.manual_seed repeats a run);
      multiprocessing_context checked as torch checks it; feedline starts its
                              own worker processes;
      prefetch_factor         None (torch 2's default), an int: batches in
                              flight per worker, or "auto" (docs/tuning.md);
                              with num_workers=0 anything but None or 2 is
                              refused, as torch does;
      in_order                False lets a complete batch overtake an earlier,
                              slower one (torch 2.6's meaning).

    feedline's own keywords: seed_per_sample=True seeds `random`, numpy and
    torch before each sample from (seed, epoch, index), so that batches are
    the same for any num_workers (default False: worker w is seeded with
    base_seed + w, as torch does); native_transforms=False keeps a
    torchvision ImageFolder in Python (docs/python.md, "Native transforms");
    any other keyword goes to feedline.DataLoader (seed, error_policy, ...).

    Batches are what torch gives: default_collate's types (a list for tuple
    samples, the namedtuple or dict class of the sample, tensors for numbers
    and arrays, lists of strings) sharing the batch's memory, dtypes kept
    (float64 stays float64, a torch.bfloat16 tensor stays torch.bfloat16).
    """

    def __class_getitem__(cls, item):
        return types.GenericAlias(cls, item)  # DataLoader[List[Tensor]], as torch's is generic

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers=False,
        pin_memory_device="",
        in_order=True,
        native_transforms=True,
        seed_per_sample=False,
        **feedline_options,
    ):
        # torch's checks, with torch's messages, in torch's order. "auto"
        # (docs/tuning.md) is feedline's, and feedline.DataLoader checks it
        # and any other string.
        workers_given = not isinstance(num_workers, str)
        prefetch_given = prefetch_factor is not None and not isinstance(prefetch_factor, str)
        if workers_given and num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor not in (None, 2):
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing."
            )
        if prefetch_given and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        _check_multiprocessing_context(multiprocessing_context, num_workers)
        dataset = _hf_lowering.lower_iterable(dataset, "torch", collate_fn, native_transforms,
                                              ordering=(shuffle, sampler, batch_sampler))
        iterable = io._is_iterable_dataset(dataset)
        if iterable:
            if _datapipes.is_iter_datapipe(dataset):
                if shuffle is not None:  # a datapipe shuffles itself, as torch sets it up
                    dataset = torch.utils.data.graph_settings.apply_shuffle_settings(
                        dataset, shuffle=shuffle)
            elif shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
            shuffle = None
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (
            batch_size != 1 or shuffle or sampler is not None or drop_last
        ):
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                "and drop_last"
            )
        if batch_size is None and batch_sampler is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if pin_memory_device and not str(pin_memory_device).startswith("cuda"):
            raise ValueError(f"pin_memory_device must be '' or a CUDA device, got {pin_memory_device!r}")
        _warn_if_excessive(num_workers)

        users_dataset, users_collate_fn = dataset, collate_fn
        # torchvision's detection references (get_coco + utils.collate_fn)
        # load through feedline.vision.datasets.CocoDetection, and their
        # batches come out as the references' (detection_lowering.py).
        batched = batch_size is not None or batch_sampler is not None
        detection = _detection_lowering.lower(dataset, native_transforms, collate_fn, batched)
        if detection is None:  # the same written with transforms.v2 (detection_v2_lowering.py)
            detection = _detection_v2_lowering.lower(dataset, native_transforms, collate_fn,
                                                     batched)
        self._detection_batches = None
        if detection is not None:
            dataset, self._lowering = detection.dataset, detection.lowering
            if detection.batches is not None:
                # The native collate pads; the references' layout is made from it.
                self._detection_batches, collate_fn = detection.batches, None
        else:
            # A torchvision ImageFolder whose transforms feedline has natively
            # loads through the native pipeline (frontends/lowering.py).
            dataset, self._lowering = _lowering.lower(dataset, native_transforms,
                                                      collate_fn=collate_fn)
        if self._lowering is None:  # a Hugging Face datasets.Dataset: its Arrow table natively
            dataset, self._lowering = _hf_lowering.lower(dataset, "torch", collate_fn,
                                                          native_transforms)
        seed = feedline_options.pop("seed", None)
        if seed is None:
            seed = _seed_from_torch(generator)
        unbatched = batch_size is None and batch_sampler is None
        frontend = FrontendPolicy(
            name="torch",
            delivers_torch_bfloat16=True,  # the loader carries its bits (feedline.io)
            # A collate_fn's return value is the batch, untouched (torch's
            # contract); feedline's own shapes are what the default collate gives.
            keeps_collate_result=collate_fn is not None,
            seeds_samples=bool(seed_per_sample),
            # Worker w loads batches w, w + n, ... whole, as torch assigns
            # them; with seed_per_sample (feedline's mode) any idle worker
            # loads any row.
            assigns_batches_to_workers=not seed_per_sample,
            imports_through_dlpack=True,
        )
        if collate_fn is not None:
            collate_fn = SamplesAsReturned(self, collate_fn, _batches.POLICY)
        # An IterDataPipe loads as torch loads it: each worker its shard of the
        # pipe, all of them seeded alike each iteration (frontends/torch/datapipes.py).
        datapipe_stream = (_datapipes.DataPipeStream(dataset)
                           if iterable and _datapipes.is_iter_datapipe(dataset) else None)
        self._datapipe_stream = datapipe_stream
        self._worker_init = _seeding.TorchWorkerInit(
            worker_init_fn, num_workers, dataset, seed_generators=not seed_per_sample,
            datapipe_stream=datapipe_stream)
        self._arguments = dict(
            dataset=dataset if datapipe_stream is None else datapipe_stream,
            batch_size=1 if unbatched or batch_sampler is not None else batch_size,
            shuffle=bool(shuffle),
            sampler=sampler,
            batch_sampler=batch_sampler,
            num_workers=num_workers,
            collate_fn=collate_fn,
            drop_last=drop_last,
            prefetch_factor=(2 if prefetch_factor is None
                             else max(1, prefetch_factor) if prefetch_given else prefetch_factor),
            persistent_workers=persistent_workers,
            timeout=timeout,
            worker_init_fn=self._worker_init,
            seed=seed,
            in_order=in_order,
            frontend=frontend,
            **feedline_options,
        )
        super().__init__(**self._arguments)
        # The pipe, not the stream loaded in its place; the references' own
        # dataset, whose .coco their evaluation reads, not the native one.
        self.dataset = users_dataset if self._detection_batches is not None else dataset
        self._planned_length = None if self._iterable else len(dataset)
        self._torch_attributes(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last,
                               unbatched)
        self.worker_init_fn = worker_init_fn  # the user's, as torch shows them
        self.collate_fn = users_collate_fn
        self.prefetch_factor = prefetch_factor
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.generator = generator
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._unbatched = unbatched
        self._schema_tree = None
        self._length_reported = None
        self._pin = self.pin_memory and torch.cuda.is_available()
        global _pin_warning_given
        if self.pin_memory and not self._pin and not _pin_warning_given:
            _pin_warning_given = True
            warnings.warn(
                "feedline.torch.DataLoader: pin_memory=True, but CUDA is not available: "
                "batches are not pinned",
                stacklevel=2,
            )
        object.__setattr__(self, "_initialized", True)

    def _torch_attributes(self, dataset, batch_size, shuffle, sampler, batch_sampler, drop_last,
                          unbatched):
        """The attributes torch's loader has, for scripts that read them:
        it always has a sampler and, when batching, a batch sampler (feedline's
        samplers with its seed, describing the order the loader uses)."""
        self.batch_size = None if unbatched else (None if batch_sampler is not None else batch_size)
        self.drop_last = bool(drop_last) if batch_sampler is None else False
        if sampler is None and batch_sampler is None and not self._iterable:
            self.sampler = (io.RandomSampler(dataset, seed=self.seed) if shuffle
                            else io.SequenceSampler(dataset))
            if not unbatched:
                self.batch_sampler = io.BatchSampler(sampler=self.sampler, batch_size=batch_size,
                                                     drop_last=drop_last)

    def __setattr__(self, name, value):
        if getattr(self, "_initialized", False) and name in _FROZEN_ATTRIBUTES:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        object.__setattr__(self, name, value)

    def __len__(self):
        if self._iterable:
            # torch: the dataset's own length, in batches (TypeError without one).
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(
                    length / self.batch_size)
            self._length_reported = length  # iterating past it warns, as in torch
            return length
        self._replan_if_resized()
        return super().__len__()

    def _replan_if_resized(self):
        """A map-style dataset whose length changed since the loader planned
        it (torch's len() follows len(dataset)): planned again, with the same
        arguments and seed, before the next len() or iteration."""
        if self._iterable or len(self.dataset) == self._planned_length:
            return
        if self._detection_batches is not None:
            # Lowered from the dataset as it was: what changed is not in the
            # native copy, and planning that again would load the old one.
            raise RuntimeError(
                f"feedline.torch: the detection dataset has {len(self.dataset)} "
                f"samples now, {self._planned_length} when this DataLoader loaded it natively: "
                "make a new DataLoader after changing it (or pass native_transforms=False)")
        arguments = self._arguments
        if arguments["sampler"] is not None or arguments["batch_sampler"] is not None:
            return  # the user's sampler says how long an epoch is
        self._loader.close()
        object.__setattr__(self, "_initialized", False)
        io.DataLoader.__init__(self, **arguments)
        self._planned_length = len(self.dataset)
        self._torch_attributes(self.dataset, None if self._unbatched else arguments["batch_size"],
                               arguments["shuffle"], None, None, arguments["drop_last"],
                               self._unbatched)
        object.__setattr__(self, "_initialized", True)

    def __iter__(self):
        self._replan_if_resized()
        # Native transforms (frontends/lowering.py): what runs natively, said once.
        if self._lowering is not None:
            self._lowering.log_once()
        # An IterDataPipe's shared seed is drawn first, then the workers' base
        # seed, each iteration, as torch's iterator draws them (persistent
        # workers keep the base seeds they started with; the shared seed
        # reaches them).
        if self._datapipe_stream is not None:
            self._datapipe_stream.start_iteration(self.generator)
        self._worker_init.base_seed = _seeding.draw_base_seed(self.generator)
        return _TorchIterator(self, super().__iter__())

    def stats(self):
        """feedline.DataLoader.stats(), and "native_transforms": what of a
        torchvision image dataset runs natively (docs/python.md, "Native
        transforms"), or None for other datasets."""
        stats = super().stats()
        stats["native_transforms"] = None if self._lowering is None else self._lowering.stats()
        return stats

    def _to_tensor(self, array):
        # A batch field (BatchArray) through DLPack: the tensor holds the
        # batch's memory itself, with no numpy array in between.
        if isinstance(array, _shaping.BatchArray):
            value = _from_dlpack(array.__dlpack__())
        else:
            value = torch.from_numpy(array)
        return value.pin_memory() if self._pin else value

    def _convert(self, batch):
        if self._detection_batches is not None:
            return self._detection_batches(self._convert_without_schema(batch))
        if self._frontend.keeps_collate_result:
            return batch  # what collate_fn returned, as it returned it
        if self._schema_tree is None:
            self._schema_tree = _batches.load_tree(self._loader) or False
        if self._schema_tree:
            return _batches.shape(batch, self._schema_tree, self._unbatched, self._to_tensor)
        return self._convert_without_schema(batch)

    def _convert_without_schema(self, batch):
        # A native dataset's batch, or a sample whose types could not be
        # recorded: tuples and lists become lists, dicts stay dicts.
        unbatched, pin = self._unbatched, self._pin

        def one(value):
            if isinstance(value, _shaping.BatchArray):
                if not unbatched:
                    return self._to_tensor(value)
                value = value.numpy()
            if isinstance(value, np.ndarray):
                if unbatched:  # batch_size=None: one sample per step, no batch dimension
                    value = value[0]
                    if not isinstance(value, np.ndarray):
                        return value  # a numpy scalar, as torch's default_convert leaves it
                value = torch.from_numpy(value)
                return value.pin_memory() if pin else value
            if isinstance(value, torch.Tensor):  # a bfloat16 field: numpy has no bfloat16
                if unbatched:
                    value = value[0]
                return value.pin_memory() if pin else value
            if unbatched and isinstance(value, list) and len(value) == 1:
                return value[0]  # an object field: the sample's own object
            return value

        return map_batch(batch, one)
