"""The policy a framework front end hands feedline.io.DataLoader: how its
loader differs from feedline's own (feedline.io.loader.FEEDLINE), decided
from its arguments before the loader is built. One object, passed as
DataLoader(frontend=...), instead of switches a subclass sets."""

import dataclasses
import typing

from feedline.io import datasets as _datasets


@typing.runtime_checkable
class Frontend(typing.Protocol):
    """What io.DataLoader reads of a front end."""

    # Shown in messages ("feedline.torch: ...").
    name: str
    # Batches are torch tensors, so a torch.bfloat16 field is carried as its
    # bits; numpy has no bfloat16, and feedline's own loader refuses one.
    delivers_torch_bfloat16: bool
    # What a collate_fn returns is the batch as it is (no copy into the
    # batch's arrays): torch's and Paddle's contract.
    keeps_collate_result: bool
    # `random`, numpy and torch are seeded per sample from (seed, epoch,
    # index), so that batches do not depend on num_workers; False: the front
    # end seeds each worker as its framework does (frontends/torch/seeding.py).
    seeds_samples: bool
    # A Python dataset's batch loads whole in worker b % num_workers, as
    # torch and Paddle hand their workers batches (LoaderOptions::batch_per_worker).
    assigns_batches_to_workers: bool
    # Numeric batch fields come as feedline._feedline.BatchArray, which the
    # framework imports through DLPack (no numpy array in between); the
    # front end's shaping turns them into its tensors.
    imports_through_dlpack: bool

    def is_stream(self, dataset) -> bool:
        """Whether `dataset` is a stream (no indices, no len()), by the
        framework's rule."""
        ...


@dataclasses.dataclass(frozen=True)
class FrontendPolicy:
    """A Frontend whose fields are given; streams by feedline's rule unless
    `stream_rule` says otherwise."""

    name: str
    delivers_torch_bfloat16: bool
    keeps_collate_result: bool
    seeds_samples: bool
    assigns_batches_to_workers: bool
    stream_rule: typing.Callable[[object], bool] = _datasets._is_iterable_dataset
    imports_through_dlpack: bool = False

    def is_stream(self, dataset):
        return self.stream_rule(dataset)
