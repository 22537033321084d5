"""An IterDataPipe through feedline.torch.DataLoader yields what torch's
DataLoader yields: a sharding_filter() gives each worker its shard (each
item once, not once per worker), and a shuffle() in the pipe is seeded
alike in every worker from one seed drawn per iteration, so that
torch.manual_seed repeats a run, batch for batch, as it does with torch's
loader. Worker processes, worker threads (each with its own copy of the
pipe) and num_workers=0 alike; torch's loader is the reference throughout."""

import json
import os
import subprocess
import sys
import time

import pytest
import torch
from torch.utils.data.datapipes.iter import IterableWrapper

import feedline.torch

# (num_workers, worker_mode): feedline's worker processes and worker
# threads; with 0 workers the loader's own thread loads.
WORKERS = [(0, "auto"), (1, "process"), (2, "process"), (1, "thread"), (2, "thread")]
IDS = [f"{n}-{mode}" for n, mode in WORKERS]


def batches(loader, seed=None):
    """The loader's batches as lists; `seed` seeds torch's global generator
    just before the iteration (the loaders draw their seeds from it)."""
    if seed is not None:
        torch.manual_seed(seed)
    return [batch.tolist() for batch in loader]


def both(make_pipe, workers, mode, seed=None, **options):
    """(torch's batches, feedline's batches) of one pipe, each loader given
    a pipe of its own."""
    ours = feedline.torch.DataLoader(make_pipe(), num_workers=workers, worker_mode=mode,
                                     **options)
    theirs = torch.utils.data.DataLoader(make_pipe(), num_workers=workers, **options)
    return batches(theirs, seed), batches(ours, seed)


def items(batch_list):
    return sorted(x for batch in batch_list for x in batch)


@pytest.mark.parametrize("workers, mode", WORKERS, ids=IDS)
def test_a_sharding_filter_gives_each_worker_its_shard(workers, mode):
    # The case: every worker yielded the whole stream (668 batches,
    # 2,000 items with two workers).
    theirs, ours = both(lambda: IterableWrapper(range(1000)).sharding_filter(), workers, mode,
                        batch_size=3)
    assert len(theirs) == 334 and items(theirs) == list(range(1000))
    assert ours == theirs


@pytest.mark.parametrize("workers, mode", WORKERS, ids=IDS)
@pytest.mark.parametrize("shuffle", [None, True])
def test_a_shuffle_before_the_sharding_filter_is_seeded_alike_in_every_worker(workers, mode,
                                                                              shuffle):
    # Each worker shuffles the whole stream and keeps its shard: unless every
    # worker draws the same order, items are lost and others repeated.
    theirs, ours = both(lambda: IterableWrapper(range(1000)).shuffle().sharding_filter(),
                        workers, mode, seed=11, batch_size=3, shuffle=shuffle)
    assert items(theirs) == list(range(1000)) and len(theirs) == 334
    assert ours == theirs
    assert items(ours) != [x for batch in ours for x in batch]  # shuffled


@pytest.mark.parametrize("workers, mode", WORKERS, ids=IDS)
def test_a_shuffle_after_the_sharding_filter_shuffles_each_shard(workers, mode):
    theirs, ours = both(lambda: IterableWrapper(range(500)).sharding_filter().shuffle(),
                        workers, mode, seed=12, batch_size=4)
    assert items(theirs) == list(range(500))
    assert ours == theirs


@pytest.mark.parametrize("workers, mode", [(0, "auto"), (2, "process"), (2, "thread")],
                         ids=["0-auto", "2-process", "2-thread"])
def test_shuffle_false_turns_the_pipes_shuffle_off(workers, mode):
    theirs, ours = both(lambda: IterableWrapper(range(300)).shuffle().sharding_filter(),
                        workers, mode, seed=13, batch_size=5, shuffle=False)
    assert ours == theirs
    assert items(ours) == list(range(300))
    if workers == 0:
        assert [x for batch in ours for x in batch] == list(range(300))


@pytest.mark.parametrize("workers, mode, persistent",
                         [(0, "auto", False), (1, "process", False), (2, "process", False),
                          (1, "process", True), (2, "process", True), (2, "thread", False),
                          (2, "thread", True)],
                         ids=["0-auto", "1-process", "2-process", "1-process-persistent",
                              "2-process-persistent", "2-thread", "2-thread-persistent"])
def test_each_iteration_draws_its_shared_seed_from_torchs_generator(workers, mode, persistent):
    # torch's IntegrationTestDataLoaderDataPipe::test_shuffler_iterdatapipe:
    # the same torch seed gives the same epoch, with persistent workers too
    # (their copies of the pipe are seeded each iteration), another seed
    # another order; torch's loader gives the same batches.
    def make_pipe():
        return IterableWrapper(range(100)).shuffle(buffer_size=20).sharding_filter()

    ours = feedline.torch.DataLoader(make_pipe(), num_workers=workers, worker_mode=mode,
                                     shuffle=True, persistent_workers=persistent)
    theirs = torch.utils.data.DataLoader(make_pipe(), num_workers=workers, shuffle=True,
                                         persistent_workers=persistent)
    assert items(batches(ours)) == list(range(100))
    first, again = batches(ours, seed=123), batches(ours, seed=123)
    assert first == again and items(first) == list(range(100))
    other = batches(ours, seed=321)
    assert other != first and items(other) == items(first)
    assert first == batches(theirs, seed=123)
    assert other == batches(theirs, seed=321)


def test_a_worker_processes_pipe_is_sharded_before_worker_init_fn():
    # torch shards the worker's copy, then calls worker_init_fn: the pipe it
    # finds in get_worker_info() is the worker's shard.
    def check(worker_id):
        info = torch.utils.data.get_worker_info()
        assert (info.dataset.num_of_instances, info.dataset.instance_id) == (2, worker_id)

    pipe = IterableWrapper(range(60)).sharding_filter()
    loader = feedline.torch.DataLoader(pipe, batch_size=6, num_workers=2, worker_mode="process",
                                       worker_init_fn=check)
    assert items(batches(loader)) == list(range(60))
    # The training process's pipe is never sharded: the workers' copies are.
    assert (pipe.num_of_instances, pipe.instance_id) == (1, 0)


def test_worker_threads_shard_copies_and_leave_the_pipe_whole():
    pipe = IterableWrapper(range(60)).sharding_filter()
    loader = feedline.torch.DataLoader(pipe, batch_size=6, num_workers=2, worker_mode="thread")
    assert loader.dataset is pipe
    for _ in range(2):
        assert items(batches(loader)) == list(range(60))
    assert (pipe.num_of_instances, pipe.instance_id) == (1, 0)
    assert list(pipe) == list(range(60))


# One rank of a two-rank gloo group, run as a fresh interpreter: forking
# the test process (its engine, torch and OpenMP threads running) can leave
# a child stuck in a lock another thread held. It prints the batches of one
# loader (argv[5]: "ours", feedline's, or "theirs", torch's) as JSON.
RANK_SCRIPT = """
import faulthandler, json, sys
# A rank still running after 50 s prints every thread's stack and ends, so
# that a hang shows where it waits.
faulthandler.dump_traceback_later(50, exit=True)
import torch, torch.distributed
from torch.utils.data.datapipes.iter import IterableWrapper
import feedline.torch

rank, init_file, workers, mode = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
torch.distributed.init_process_group("gloo", init_method="file://" + init_file, rank=rank,
                                     world_size=2)
pipe = IterableWrapper(range(200)).shuffle().sharding_filter()
if sys.argv[5] == "ours":
    loader = feedline.torch.DataLoader(pipe, batch_size=4, num_workers=workers, worker_mode=mode)
else:
    loader = torch.utils.data.DataLoader(pipe, batch_size=4, num_workers=workers)
# Each rank its own seed: rank 0's shared seed, broadcast, decides the
# order on every rank.
torch.manual_seed(100 + rank)
batches = [batch.tolist() for batch in loader]
torch.distributed.destroy_process_group()
faulthandler.cancel_dump_traceback_later()
print(json.dumps(batches))
"""


def run_ranks(tmp_path, workers, mode, which):
    """Both ranks' batches of one loader, each rank a process of its own:
    (returncodes, [(stdout, stderr)])."""
    folder = tmp_path / which
    folder.mkdir()
    deadline = time.monotonic() + 60
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # Output to files, which never fill as a pipe left unread would.
    logs = [(folder / f"rank{rank}.out", folder / f"rank{rank}.err") for rank in range(2)]
    ranks = []
    for rank, (out, err) in enumerate(logs):
        with open(out, "w") as stdout, open(err, "w") as stderr:
            ranks.append(subprocess.Popen([sys.executable, "-c", RANK_SCRIPT, str(rank),
                                           str(folder / "rendezvous"), str(workers), mode, which],
                                          env=env, stdout=stdout, stderr=stderr))
    # A rank that fails leaves the other waiting in the rendezvous: it is
    # stopped then, not at the deadline.
    try:
        while time.monotonic() < deadline and any(p.poll() is None for p in ranks):
            if any(p.poll() not in (None, 0) for p in ranks):
                break
            time.sleep(0.1)
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
            process.wait()
    return [p.returncode for p in ranks], [(out.read_text(), err.read_text()) for out, err in logs]


def failures(codes, outputs):
    return [f"rank {rank} (exit {code}):\n{err}"
            for rank, (code, (_, err)) in enumerate(zip(codes, outputs)) if code != 0]


@pytest.mark.skipif(not torch.distributed.is_available(), reason="no torch.distributed")
@pytest.mark.parametrize("workers, mode", [(0, "auto"), (2, "process"), (2, "thread")],
                         ids=["0-auto", "2-process", "2-thread"])
def test_ranks_of_a_process_group_shard_the_pipe_between_them(tmp_path, time_bound, workers,
                                                              mode):
    # torch shards by num_workers * world_size, worker_id * world_size + rank,
    # with one shuffle seed for all ranks, broadcast from rank 0.
    time_bound(200)
    codes, outputs = run_ranks(tmp_path, workers, mode, "ours")
    assert not failures(codes, outputs), "\n".join(failures(codes, outputs))
    ours = [json.loads(out.splitlines()[-1]) for out, _ in outputs]
    # torch's own loader, in ranks of its own. Run after feedline's in the
    # same process, torch 1.13's DataLoader (2 worker processes, in a gloo
    # group) waited forever for its workers now and then (its main thread
    # in _try_get_data; twice in clean-clone make test runs, in none of 40
    # runs of this test alone); alone it did not in 60 runs under load. Why
    # is not known yet.
    codes, outputs = run_ranks(tmp_path, workers, mode, "theirs")
    assert not failures(codes, outputs), "\n".join(failures(codes, outputs))
    theirs = [json.loads(out.splitlines()[-1]) for out, _ in outputs]
    for rank in range(2):
        assert ours[rank] == theirs[rank]
    mine, other = items(ours[0]), items(ours[1])
    assert not set(mine) & set(other)
    assert sorted(mine + other) == list(range(200))
