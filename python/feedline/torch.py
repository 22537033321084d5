"""feedline for torch users: torch.utils.data.DataLoader's signature, torch
tensors out. The one changed line::

    from feedline.torch import DataLoader   # was: from torch.utils.data import DataLoader

A thin adapter over feedline.DataLoader: it translates torch's arguments
(with torch's validation and messages) and turns each batch's numpy arrays
into torch tensors that share their memory (torch.from_numpy, no copy). It
has no loading logic of its own. See docs/python.md, "Coming from torch".
"""

import warnings

import numpy as np
import torch

from feedline import io
from feedline._framework import ConvertingIterator, map_batch
from feedline.batch_transforms import ConvertImageDtype, CutMix, MixUp, Normalize, RandomChoice

__all__ = ["ConvertImageDtype", "CutMix", "DataLoader", "MixUp", "Normalize", "RandomChoice"]

_pin_warning_given = False


def _seed_from_torch(generator):
    # torch draws each iterator's base seed from `generator`, or from the
    # default generator: torch.manual_seed(s) makes a run repeatable, and so
    # it does here. The seed is drawn once: feedline's batches then depend
    # on (seed, epoch, index) only.
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item()) & (2**63 - 1)


class DataLoader(io.DataLoader):
    """torch.utils.data.DataLoader, loaded by feedline.

    Every argument of torch's DataLoader (1.13 and 2.x) is accepted and
    validated as torch does:

      dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
      collate_fn, drop_last, timeout, worker_init_fn, persistent_workers
                              as in torch (num_workers are feedline workers;
                              "auto" lets the loader choose, docs/tuning.md);
      pin_memory              batches are copied into pinned memory when CUDA
                              is available; without it a warning says so once
                              and batches stay in the loader's memory;
      pin_memory_device       accepted ("" or a CUDA device);
      generator               a torch.Generator whose draw seeds the shuffle and
                              the random transforms (default: torch's global
                              generator, so torch.manual_seed repeats a run);
      multiprocessing_context accepted; feedline starts its own workers;
      prefetch_factor         None (torch 2's default), an int: batches in
                              flight per worker, or "auto" (docs/tuning.md);
                              with num_workers=0 anything but None or 2 is
                              refused, as torch does;
      in_order                False lets a complete batch overtake an earlier,
                              slower one (torch 2.6's meaning).

    Extra keywords are passed to feedline.DataLoader: seed (overrides the
    generator), error_policy ("raise", "skip", "replace") and any other it takes.

    Batches are what torch's default collate gives: a list of tensors for
    tuple or list samples, a dict of tensors for dict samples, a tensor for
    single arrays or numbers. The tensors share the batch's memory. Dtypes
    are kept (bool stays bool, a torch.bfloat16 tensor arrives as
    torch.bfloat16 with its exact values) except float64, which arrives as
    float32; a complex tensor in a sample is refused with an error naming
    its field (numpy, which carries the batch, has no such dtype).
    """

    _delivers_torch_bfloat16 = True  # the loader carries its bits (feedline.io)

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
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (
            batch_size != 1 or shuffle or sampler is not None or drop_last
        ):
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                "and drop_last"
            )
        if pin_memory_device and not str(pin_memory_device).startswith("cuda"):
            raise ValueError(f"pin_memory_device must be '' or a CUDA device, got {pin_memory_device!r}")

        seed = feedline_options.pop("seed", None)
        if seed is None:
            seed = _seed_from_torch(generator)
        unbatched = batch_size is None and batch_sampler is None
        super().__init__(
            dataset,
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
            worker_init_fn=worker_init_fn,
            seed=seed,
            in_order=in_order,
            **feedline_options,
        )
        # The attributes torch's loader has, for scripts that read them.
        self.batch_size = None if unbatched else (None if batch_sampler is not None else batch_size)
        self.prefetch_factor = prefetch_factor
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.generator = generator
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._unbatched = unbatched
        # torch's loader always has a sampler and, when batching, a batch
        # sampler; scripts read them (len(loader.sampler)). These describe
        # the order the loader uses: feedline's samplers with its seed.
        if sampler is None and batch_sampler is None and not self._iterable:
            self.sampler = (io.RandomSampler(dataset, seed=self.seed) if shuffle
                            else io.SequenceSampler(dataset))
            if not unbatched:
                self.batch_sampler = io.BatchSampler(sampler=self.sampler, batch_size=batch_size,
                                                     drop_last=drop_last)
        self._pin = self.pin_memory and torch.cuda.is_available()
        global _pin_warning_given
        if self.pin_memory and not self._pin and not _pin_warning_given:
            _pin_warning_given = True
            warnings.warn(
                "feedline.torch.DataLoader: pin_memory=True, but CUDA is not available: "
                "batches are not pinned",
                stacklevel=2,
            )

    def __iter__(self):
        return ConvertingIterator(self, super().__iter__())

    def _convert(self, batch):
        unbatched, pin = self._unbatched, self._pin

        def one(value):
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
