"""The DataLoader: its arguments checked (arguments.py), handed to the C++
loader, and its batches iterated one epoch at a time."""

import atexit
import warnings
import weakref

from feedline import _feedline
from feedline.io.arguments import (
    _AUTO,
    _INT64,
    _auto_or_int_argument,
    _draw_seed,
    _int_argument,
    _memory_budget_argument,
    _report_every,
    _reporter,
    _seconds_argument,
    _user_stacklevel,
    _worker_mode_argument,
)
from feedline.io.datasets import _is_iterable_dataset, _native_dataset
from feedline.io.samplers import DistributedBatchSampler, HardExampleSampler, _native
from feedline.io.text import _pack_position, _pack_state_to_restore, _packed

_live_loaders = weakref.WeakSet()


@atexit.register
def _close_live_loaders():
    # Workers must be joined before the interpreter starts to finalize: a
    # worker taking the GIL after that point would never get it.
    for loader in list(_live_loaders):
        loader.close()


class _FeedlineFrontend:
    """feedline's own rules, the Frontend (feedline/frontends/frontend.py) of
    a DataLoader given none: numpy batches (a torch.bfloat16 field refused,
    naming it), a collate_fn's result handed on as it was returned, every
    sample seeded from (seed, epoch, index), any idle worker loading any
    row, and feedline's rule for which datasets are streams."""

    name = "feedline"
    delivers_torch_bfloat16 = False
    keeps_collate_result = True
    seeds_samples = True
    assigns_batches_to_workers = False
    imports_through_dlpack = False
    is_stream = staticmethod(_is_iterable_dataset)


FEEDLINE = _FeedlineFrontend()


class _EpochIterator:
    # A class, not a generator: a suspended generator would keep the last
    # batch alive, and with it a slot of the pool.
    __slots__ = ("_owner", "_iteration", "_exhausted", "_dlpack_leaves")

    def __init__(self, owner, iteration):
        self._owner = owner
        self._iteration = iteration
        self._exhausted = False
        self._dlpack_leaves = bool(getattr(owner._frontend, "imports_through_dlpack", False))

    def __iter__(self):
        return self

    def __next__(self):
        # An exhausted iterator stays exhausted, as Python's do: asking the
        # loader again would start its next epoch.
        if self._exhausted:
            raise StopIteration
        if self._iteration != self._owner._iteration:
            raise RuntimeError("a newer iteration over this DataLoader replaced this one")
        batch = self._owner._loader.next(self._dlpack_leaves)
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
      collate_fn          f(list of samples) -> the batch, handed on as it was
                          returned. Default: stack each field into the shared
                          batch slots; fields whose shape varies are padded,
                          with a "<field>_lengths" array.
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
      pack                a feedline.io.PackOptions: the dataset's documents
                          (samples with a token field) are packed into rows of
                          seq_len tokens, batch_size rows a batch, each batch a
                          dict of input_ids, labels, position_ids, segment_ids
                          and cu_seqlens (docs/text.md). The sampler or shuffle
                          orders the documents before they are packed.
      frontend            how a framework's loader differs (a
                          feedline.frontends.frontend.Frontend: batch types,
                          seeding, batches per worker, which datasets are
                          streams); feedline.torch and feedline.paddle pass
                          theirs. None: feedline's own rules.

    Iterating yields one batch per step: a tuple of numpy arrays when samples
    are tuples (native image datasets give (image, label)), a dict when they
    are dicts, one array when they are single arrays. Extra arrays the loader
    adds (lengths of padded fields, the "replaced" mask) follow the fields of a
    tuple. The arrays view the batch's memory without a copy; while any of
    them is alive its batch slot stays out of the loader's pool.

    Each `for batch in loader` runs one epoch; starting a new iteration
    abandons an unfinished one.
    """

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
        pack=None,
        frontend=None,
    ):
        worker_mode = _worker_mode_argument(worker_mode)
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
        self._frontend = frontend = FEEDLINE if frontend is None else frontend

        native = _native_dataset(dataset)
        self._iterable = native is None and frontend.is_stream(dataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError(
                "an IterableDataset has no indices: shuffle, sampler and batch_sampler "
                "must be left unset"
            )
        fields = getattr(dataset, "_fields", None) if native is not None else None
        self.pack = pack
        if pack is not None:
            # The loader then loads packed rows: their plan orders the
            # documents (sampler or shuffle) and batches the rows.
            if self._iterable:
                raise ValueError("DataLoader: pack needs a map-style dataset of documents (with "
                                 "their lengths); an IterableDataset cannot be packed")
            if batch_sampler is not None:
                raise ValueError("DataLoader: pack makes the batches (batch_size packed rows "
                                 "each); batch_sampler must be left unset")
            native, self._pack_batches = _packed(
                dataset, pack, _int_argument("batch_size", batch_size, 1, _INT64[1]), shuffle,
                sampler, drop_last, self.seed)
            batch_sampler = self._pack_batches
            # Now in the batch sampler: the engine takes them as unset.
            batch_size, shuffle, sampler, drop_last, fields = 1, False, None, False, None
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
            dataset=native if native is not None else dataset,
            iterable=self._iterable,
            batch_size=None if batch_size is None else _int_argument("batch_size", batch_size,
                                                                     *_INT64),
            shuffle=bool(shuffle),
            sampler=None if sampler is None else _native(sampler),
            batch_sampler=None if batch_sampler is None else _native(batch_sampler),
            num_workers=workers,
            collate_fn=collate_fn,
            drop_last=bool(drop_last),
            prefetch_factor=prefetch,
            persistent_workers=bool(persistent_workers),
            timeout=_seconds_argument("timeout", timeout),
            worker_init_fn=worker_init_fn,
            seed=self.seed,
            error_policy=str(error_policy),
            fields=None if fields is None else list(fields),
            worker_mode=worker_mode,
            use_shared_memory=bool(use_shared_memory),
            in_order=bool(in_order),
            memory_budget_bytes=budget,
            torch_bfloat16=bool(frontend.delivers_torch_bfloat16),
            seed_samples=bool(frontend.seeds_samples),
            batch_per_worker=bool(frontend.assigns_batches_to_workers) and native is None,
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
        consumed, from which a job of another world size resumes; with pack,
        `pack_position`, the same for packed rows."""
        state = self._loader.state()
        if isinstance(self.batch_sampler, DistributedBatchSampler):
            state["global_position"] = self.batch_sampler.global_position(state)
        if self.pack is not None:
            # The rows all ranks consumed, for a job of another world size.
            state["pack_position"] = _pack_position(self.pack, self._pack_batches, state)
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
        if "pack_position" in state:
            if self.pack is None:
                raise ValueError("load_state_dict: the state is of a packing loader (it has a "
                                 "pack_position), this DataLoader packs nothing")
            state = _pack_state_to_restore(self.pack, self._pack_batches, state)
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
