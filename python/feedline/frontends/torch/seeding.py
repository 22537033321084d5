"""Worker processes seeded as torch seeds its own (feedline.torch's default).

torch draws a base seed when an iteration starts (from the loader's
generator, or torch's global one) and, in worker w, seeds `random` and torch
with base_seed + w, and numpy from (base_seed, w), before worker_init_fn; a
torch.manual_seed in worker_init_fn then holds for the worker's samples, and
torch.utils.data.get_worker_info() describes the worker; the worker's copy
of an IterDataPipe is sharded before worker_init_fn as well
(frontends/torch/datapipes.py). feedline's own seeding, per sample from
(seed, epoch, index) so that batches are the same for any number of
workers, is feedline.torch.DataLoader(seed_per_sample=True).
"""

import os
import random

import numpy as np
import torch

from feedline import io


def draw_base_seed(generator):
    """The base seed of one iteration, drawn as torch draws it."""
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


def _set_torch_worker_info(worker_id, num_workers, seed, dataset):
    # torch.utils.data.get_worker_info() reads this module's global: the
    # only way to make the public function answer in feedline's workers.
    try:
        from torch.utils.data._utils import worker as torch_worker
    except ImportError:
        return
    try:
        info = torch_worker.WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                       dataset=dataset)
    except TypeError:
        return  # a torch whose WorkerInfo takes other fields: get_worker_info stays None
    torch_worker._worker_info = info


class TorchWorkerInit:
    """The worker_init_fn feedline.torch gives its loader: in a worker
    process, seeds as torch does, sets torch's worker info and shards an
    IterDataPipe (`datapipe_stream`, a datapipes.DataPipeStream), then calls
    the user's worker_init_fn. In the training process (worker threads) it
    only calls the user's function: the training loop's generators are its
    own, and each thread's pass shards a copy of the pipe itself."""

    def __init__(self, user_fn, num_workers, dataset, seed_generators, datapipe_stream=None):
        self.user_fn = user_fn
        self.num_workers = num_workers
        self.dataset = dataset
        self.seed_generators = seed_generators
        self.datapipe_stream = datapipe_stream
        self.base_seed = 0  # set by the loader before workers start
        self.parent_pid = os.getpid()

    def __call__(self, worker_id):
        if os.getpid() != self.parent_pid:
            seed = self.base_seed + worker_id
            if self.seed_generators:
                random.seed(seed)
                torch.manual_seed(seed)
                np.random.seed(np.random.SeedSequence([worker_id, self.base_seed]).generate_state(4))
            _set_torch_worker_info(worker_id, self.num_workers, seed, self.dataset)
            if self.datapipe_stream is not None:
                # The count the loader runs (num_workers may be "auto").
                self.datapipe_stream.shard_worker_process(worker_id,
                                                          io.get_worker_info().num_workers)
        if self.user_fn is not None:
            self.user_fn(worker_id)
