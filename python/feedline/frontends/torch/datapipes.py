"""IterDataPipes loaded as torch's DataLoader loads them: sharded per worker
and seeded once per iteration with one seed that every worker shares.

torch's loader (1.13 and 2.x alike) draws a shared seed when an iteration
starts, before the workers' base seed, and seeds the pipe's random
DataPipes from it (graph_settings.apply_random_seed) in the training
process and again in each worker, so that a shuffle() before a
sharding_filter() orders the stream the same way in every worker. Each
worker process shards its copy of the pipe before the user's
worker_init_fn: apply_sharding(pipe, num_workers * world_size,
worker_id * world_size + rank); with num_workers=0 the pipe itself is
sharded by (world_size, rank). Without this every worker would yield the
whole stream.

feedline's worker threads share one process: each thread's pass runs over a
deep copy of the pipe, seeded and sharded as a worker process's would be
(one pipe has one live iterator, and its sharding is its own state).
"""

import copy
import mmap
import struct

import torch

from feedline import io

__all__ = ["DataPipeStream", "is_iter_datapipe"]


def is_iter_datapipe(dataset):
    datapipe = getattr(getattr(torch.utils.data, "datapipes", None), "datapipe", None)
    cls = getattr(datapipe, "IterDataPipe", None)
    return cls is not None and isinstance(dataset, cls)


def _graph_settings():
    try:
        from torch.utils.data import graph_settings
    except ImportError:
        return None
    return graph_settings


def _distributed():
    """torch.distributed when a process group is initialized, else None."""
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def distributed_settings():
    """(world_size, rank) as torch's loader reads them: (1, 0) outside a
    process group."""
    dist = _distributed()
    return (1, 0) if dist is None else (dist.get_world_size(), dist.get_rank())


def apply_sharding(datapipe, num_of_instances, instance_id):
    settings = _graph_settings()
    if settings is not None and hasattr(settings, "apply_sharding"):
        settings.apply_sharding(datapipe, num_of_instances, instance_id)


def apply_random_seed(datapipe, shared_seed):
    """Seeds the pipe's random DataPipes from one generator seeded with
    `shared_seed`, as torch does: the same seed gives every copy of the pipe
    the same seeds. torch 1.12 named it apply_shuffle_seed."""
    settings = _graph_settings()
    apply = getattr(settings, "apply_random_seed", None) or getattr(settings, "apply_shuffle_seed",
                                                                    None)
    if apply is None:
        return datapipe
    rng = torch.Generator()
    rng.manual_seed(shared_seed)
    return apply(datapipe, rng)


class _SharedSeed:
    """One int64 in anonymous shared memory: the training process writes
    each iteration's shared seed before the workers open their passes, and
    worker processes forked earlier (persistent_workers) read it there."""

    def __init__(self):
        self._cell = mmap.mmap(-1, 8)  # MAP_SHARED: forked workers see later writes

    def set(self, value):
        struct.pack_into("q", self._cell, 0, value)

    def get(self):
        return struct.unpack_from("q", self._cell, 0)[0]


class DataPipeStream(torch.utils.data.IterableDataset):
    """The dataset feedline loads in place of an IterDataPipe: each worker's
    pass (iter) runs over its shard of the pipe, seeded with the iteration's
    shared seed."""

    def __init__(self, datapipe):
        self.datapipe = datapipe
        self._shared_seed = _SharedSeed()
        self._group = None  # the process group the shared seed is broadcast over
        # Set in a worker process once its copy of the pipe is sharded.
        self._sharded_in_process = False

    def start_iteration(self, generator):
        """Draws the iteration's shared seed as torch's iterator does (before
        the workers' base seed; broadcast from rank 0 when torch.distributed
        is initialized, so that every rank shuffles alike) and seeds the
        training process's pipe with it."""
        seed = torch.empty((), dtype=torch.int64).random_(generator=generator)
        dist = _distributed()
        if dist is not None:
            if self._group is None:
                self._group = dist.new_group(backend="gloo")
            dist.broadcast(seed, src=0, group=self._group)
        self._shared_seed.set(int(seed.item()))
        apply_random_seed(self.datapipe, self._shared_seed.get())

    def shard_worker_process(self, worker_id, num_workers):
        """In a worker process, before the user's worker_init_fn (as torch's
        own worker init does): its copy of the pipe keeps this shard for the
        process's life."""
        world_size, rank = distributed_settings()
        apply_sharding(self.datapipe, num_workers * world_size, worker_id * world_size + rank)
        self._sharded_in_process = True

    def __iter__(self):
        info = io.get_worker_info()  # feedline's: set on worker threads and processes alike
        if info is None:
            # num_workers=0: torch's single-process iterator shards the pipe itself.
            datapipe = self.datapipe
            world_size, rank = distributed_settings()
            apply_sharding(datapipe, world_size, rank)
        elif self._sharded_in_process:
            datapipe = self.datapipe
        else:
            # A worker thread: its own copy of the training process's pipe
            # (seeded by start_iteration), sharded as worker `info.id`.
            try:
                datapipe = copy.deepcopy(self.datapipe)
            except Exception as error:
                raise TypeError(
                    "feedline.torch.DataLoader: worker threads load an IterDataPipe from a copy "
                    f"each, and this pipe cannot be copied ({error}); use worker processes "
                    "(worker_mode=\"process\")") from error
            world_size, rank = distributed_settings()
            apply_sharding(datapipe, info.num_workers * world_size, info.id * world_size + rank)
        return iter(apply_random_seed(datapipe, self._shared_seed.get()))
