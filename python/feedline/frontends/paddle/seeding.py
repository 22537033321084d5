"""Worker processes set up as Paddle's worker loop sets up its own: dynamic
graph on the CPU, paddle's generator seeded per worker, and
paddle.io.get_worker_info() answering."""

import importlib
import os
import sys

from feedline import io


def _set_paddle_worker_info(worker_id, num_workers, seed, dataset):
    # paddle.io.get_worker_info() reads this module global: setting it is the
    # only way to make Paddle's public function answer in feedline's workers.
    try:
        paddle_worker = importlib.import_module("paddle.io.dataloader.worker")
        paddle_worker._worker_info = paddle_worker.WorkerInfo(
            id=worker_id, num_workers=num_workers, dataset=dataset, seed=seed)
    except (ImportError, AttributeError, TypeError):
        pass  # another paddle: get_worker_info() stays None


class PaddleWorkerInit:
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
