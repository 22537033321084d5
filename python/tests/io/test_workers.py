"""Worker processes for Python datasets (worker_mode="process", the "auto"
choice for them): the same batches as threads and as num_workers=0, dead
workers replaced with every sample delivered once, samples that kill their
worker failing under the error policy, and no process left after any ending.
Only the public API: DataLoader, its worker_pids, stats() and SampleError."""

import gc
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import feedline
from feedline import io
from worker_helpers import bounded, pid_running, wait_gone  # noqa: F401 (bounded: autouse)


class RandomDataset(io.Dataset):
    """Sample i: its index, draws from `random` and `numpy.random`, and an
    array whose size varies with i (padded at collate)."""

    def __init__(self, n=300, delay=0.0):
        self.n = n
        self.delay = delay

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if self.delay:
            time.sleep(self.delay)
        draws = np.array([random.random(), np.random.rand(), np.random.randint(1 << 30)])
        return index, draws, np.arange(index % 7 + 1, dtype=np.float32)


def copy_batches(loader):
    return [tuple(np.array(a) for a in batch) for batch in loader]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and np.array_equal(u, v)


def test_process_thread_and_inline_give_identical_batches_with_random_draws():
    kwargs = dict(batch_size=64, shuffle=True, seed=11)
    reference = copy_batches(feedline.DataLoader(RandomDataset(), num_workers=0, **kwargs))
    draws = np.concatenate([b[1] for b in reference])
    assert len(np.unique(draws[:, 0])) == len(draws)  # every sample drew its own numbers
    for workers, mode, shm in [(1, "process", True), (2, "process", True),
                               (3, "process", False), (2, "auto", True)]:
        with feedline.DataLoader(RandomDataset(), num_workers=workers, worker_mode=mode,
                                 use_shared_memory=shm, **kwargs) as loader:
            assert loader.worker_mode == ("thread" if mode == "thread" else "process")
            assert_same(reference, copy_batches(loader))


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "process")])
def test_the_training_processs_own_generators_are_left_alone(workers, mode):
    # With num_workers=0 a sample's seeding and draws are undone after it;
    # worker processes draw from their own globals. (Worker threads cannot
    # promise this: a dataset drawing from the globals on a thread draws from
    # the training process's own generators.)
    def draws_after_a_loader(user_seed):
        random.seed(user_seed)
        np.random.seed(user_seed)
        loader = feedline.DataLoader(RandomDataset(), batch_size=8, num_workers=workers,
                                     worker_mode=mode, seed=3)
        for _ in loader:
            pass
        return random.random(), np.random.rand()

    random.seed(1)
    np.random.seed(1)
    untouched = (random.random(), np.random.rand())
    assert draws_after_a_loader(1) == untouched
    assert draws_after_a_loader(2) != untouched


def test_worker_pids_never_hold_a_pid_that_signals_a_group():
    loader = feedline.DataLoader(RandomDataset(), batch_size=8, num_workers=2,
                                 worker_mode="process")
    assert loader.worker_pids == [None, None]  # not started before the first iteration
    next(iter(loader))
    assert all(p is None or p > 0 for p in loader.worker_pids)
    loader.close()


def test_auto_picks_processes_for_python_datasets_map_style_or_iterable():
    class Stream(io.IterableDataset):
        def __iter__(self):
            yield from (np.int64(i) for i in range(4))

    native = io.TensorDataset([np.arange(8)])  # pure Python too: TensorDataset is not native
    assert feedline.DataLoader(native, num_workers=2).worker_mode == "process"
    assert feedline.DataLoader(native, num_workers=0).worker_mode == "thread"
    assert feedline.DataLoader(Stream(), num_workers=2).worker_mode == "process"
    assert feedline.DataLoader(Stream(), num_workers=0).worker_mode == "thread"
    assert feedline.DataLoader(Stream(), num_workers=2, worker_mode="thread").worker_mode == "thread"
    with pytest.raises(ValueError, match="worker_mode must be"):
        feedline.DataLoader(native, num_workers=2, worker_mode="processes")


def test_worker_mode_that_is_not_a_name_is_a_type_error():
    # The names are the library's to check (ValueError above); Python checks the type.
    with pytest.raises(TypeError, match="worker_mode must be a str, got NoneType"):
        feedline.DataLoader(feedline.io.TensorDataset([np.arange(4)]), worker_mode=None)


def test_native_dataset_on_threads_by_default_and_in_processes_on_request(tmp_path):
    from feedline.vision import datasets, synth, transforms

    assert synth.write_image_folder(tmp_path, 48, classes=3, seed=1) == []
    native = datasets.ImageFolder(str(tmp_path), transform=transforms.Compose(
        [transforms.Resize((8, 8)), transforms.ToTensor()]))
    kwargs = dict(batch_size=4, shuffle=True, seed=3, num_workers=2)
    with feedline.DataLoader(native, **kwargs) as loader:
        assert loader.worker_mode == "thread" and loader.worker_pids == []
        reference = copy_batches(loader)
    assert [b[0].shape for b in reference[:1]] == [(4, 3, 8, 8)]
    # worker_mode="process": the decoder runs in worker processes (a crash
    # there ends one worker); a worker killed mid-epoch is replaced and
    # every image still comes once, in the same batches.
    with feedline.DataLoader(native, worker_mode="process", **kwargs) as loader:
        assert loader.worker_mode == "process"
        batches = []
        for i, batch in enumerate(loader):
            batches.append(tuple(np.array(a) for a in batch))
            if i == 2:
                pids = loader.worker_pids
                assert None not in pids and os.getpid() not in pids
                os.kill(pids[0], signal.SIGKILL)
        assert loader.stats()["worker_restarts"] >= 1
    assert_same(reference, batches)
    assert wait_gone(pids[:1]) == []


def test_killed_worker_is_replaced_and_the_epoch_is_exact():
    n, kwargs = 400, dict(batch_size=16, shuffle=True, seed=5, num_workers=2)
    reference = copy_batches(feedline.DataLoader(RandomDataset(n), **kwargs))
    with feedline.DataLoader(RandomDataset(n, delay=0.001), worker_mode="process",
                             **kwargs) as loader:
        batches, killed = [], []
        for i, batch in enumerate(loader):
            batches.append(tuple(np.array(a) for a in batch))
            if i in (3, 12):  # twice, the second time another process
                live = [p for p in loader.worker_pids if p is not None and p not in killed]
                os.kill(live[-1], signal.SIGKILL)
                killed.append(live[-1])
        assert loader.stats()["worker_restarts"] >= 2
        assert not set(killed) & set(loader.worker_pids)
    indices = np.concatenate([b[0] for b in batches])
    assert sorted(indices.tolist()) == list(range(n))  # every sample exactly once
    assert_same(reference, batches)  # and the same batches as an undisturbed run
    assert wait_gone(killed) == []


def test_a_stuck_sample_times_out_and_its_process_is_replaced():
    class Stuck(io.Dataset):
        def __len__(self):
            return 24

        def __getitem__(self, index):
            if index == 5:
                time.sleep(30)
            return np.int64(index)

    start = time.monotonic()
    with feedline.DataLoader(Stuck(), batch_size=4, num_workers=2, worker_mode="process",
                             timeout=0.5, error_policy="skip") as loader:
        got = np.concatenate([np.array(b) for b in loader]).tolist()
        assert got == [i for i in range(24) if i != 5]
        assert loader.stats()["errors_by_reason"] == {"timeout": 1}
        # The stuck process was killed for the new thread: the next epoch has
        # both workers again.
        assert np.concatenate([np.array(b) for b in loader]).tolist() == got
    assert time.monotonic() - start < 20


def _children():
    """The live processes whose parent is this one."""
    me, found = str(os.getpid()), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                found.append(int(entry))
    return found


def test_close_after_a_timeout_error_leaves_no_worker_process():
    # The timeout starts a thread that takes the stuck worker over and forks
    # its replacement; close() right after the error must end that one too,
    # however the fork and the close interleave (a few rounds to meet the race).
    class Stuck(io.Dataset):
        def __len__(self):
            return 40

        def __getitem__(self, index):
            if index == 10:
                time.sleep(30)
            return np.int64(index)

    before = set(_children())
    start = time.monotonic()
    for _ in range(8):
        loader = feedline.DataLoader(Stuck(), batch_size=5, num_workers=2,
                                     worker_mode="process", timeout=0.5)
        seen = set()
        with pytest.raises(feedline.TimeoutError):
            for _ in loader:
                seen.update(p for p in loader.worker_pids if p)
        seen.update(p for p in loader.worker_pids if p)
        loader.close()
        assert loader.worker_pids == [None, None]
        left = [p for p in _children() if p not in before]
        assert left == [], f"worker processes alive after close(): {left} (seen {seen})"
        del loader
        gc.collect()
    assert time.monotonic() - start < 30


class KillsItsWorker(io.Dataset):
    """Sample `fatal` kills the process loading it (as a crashing decoder
    would); the others are their index."""

    def __init__(self, n, fatal):
        self.n, self.fatal = n, fatal
        self.parent = os.getpid()

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if index == self.fatal and os.getpid() != self.parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return np.int64(index)


def test_sample_that_always_kills_its_worker_is_skipped():
    loader = feedline.DataLoader(KillsItsWorker(40, fatal=13), batch_size=8, num_workers=2,
                                 worker_mode="process", error_policy="skip")
    got = np.concatenate([np.array(b) for b in loader]).tolist()
    assert got == [i for i in range(40) if i != 13]
    stats = loader.stats()
    assert stats["errors_by_reason"] == {"worker died": 1}
    assert stats["worker_restarts"] >= 2  # replacements after the first two of its three deaths
    loader.close()


def test_sample_that_always_kills_its_worker_raises_naming_index_and_signal():
    loader = feedline.DataLoader(KillsItsWorker(40, fatal=21), batch_size=8, num_workers=2,
                                 worker_mode="process")
    seen = []
    with pytest.raises(feedline.SampleError) as info:
        for batch in loader:
            seen += np.array(batch).tolist()
    error = info.value
    assert error.index == 21 and error.reason == "worker died"
    assert "signal 9" in str(error) and "3 times" in str(error) and "OOM" in str(error)
    # The facts as data: the process that died last and its signal.
    assert error.signal == 9 and error.exception_type is None
    assert isinstance(error.worker_pid, int) and f"(pid {error.worker_pid})" in str(error)
    assert seen == list(range(16))  # the batches before the failed one were delivered
    loader.close()


def test_exception_in_getitem_reaches_the_user_as_sample_error():
    class Broken(io.Dataset):
        def __len__(self):
            return 20

        def __getitem__(self, index):
            if index == 7:
                raise KeyError(f"no label for item {index}")
            return np.int64(index)

    messages = []
    for mode in ("thread", "process"):
        loader = feedline.DataLoader(Broken(), batch_size=4, num_workers=2, worker_mode=mode)
        with pytest.raises(feedline.SampleError) as info:
            list(loader)
        assert info.value.index == 7 and info.value.reason == "exception"
        assert "KeyError" in str(info.value) and "no label for item 7" in str(info.value)
        assert info.value.exception_type == "KeyError"
        assert info.value.worker_pid is None and info.value.signal is None
        messages.append(str(info.value))
        loader.close()
    assert messages[0] == messages[1]


def test_worker_init_fn_and_get_worker_info_run_in_the_worker(tmp_path):
    def init(worker_id):
        part = tmp_path / f"part-{os.getpid()}"
        part.write_text(str(worker_id))
        part.rename(tmp_path / f"init-{os.getpid()}")  # whole or absent

    class WhoLoads(io.Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, index):
            info = feedline.get_worker_info()
            assert info.dataset is self and info.seed == 9
            return np.array([index, info.id, info.num_workers, os.getpid()], dtype=np.int64)

    with feedline.DataLoader(WhoLoads(), batch_size=8, num_workers=2, seed=9,
                             worker_init_fn=init, persistent_workers=True) as loader:
        rows = np.concatenate([np.array(b) for b in loader])
        pids = loader.worker_pids
        assert sorted(rows[:, 0].tolist()) == list(range(64))
        assert set(rows[:, 2].tolist()) == {2}
        assert os.getpid() not in rows[:, 3]
        loaded_by = {(int(w), int(p)) for w, p in zip(rows[:, 1], rows[:, 3])}
        for worker_id, pid in loaded_by:
            # The process that loaded the sample is worker `worker_id`'s and
            # ran worker_init_fn(worker_id) first.
            assert pids[worker_id] == pid
            assert int((tmp_path / f"init-{pid}").read_text()) == worker_id
        # Persistent workers keep their processes into the next epoch.
        assert sum(len(b) for b in loader) == 64
        assert all(now == before for now, before in zip(loader.worker_pids, pids) if before is not None)


def test_workers_are_fresh_each_epoch_without_persistent_workers():
    with feedline.DataLoader(RandomDataset(32), batch_size=8, num_workers=2) as loader:
        list(loader)
        first = [p for p in loader.worker_pids if p is not None]
        list(loader)
        assert first and not set(first) & set(loader.worker_pids)
        assert wait_gone(first) == []


def test_large_samples_grow_the_arena_and_cross_the_socket_too():
    class Big(io.Dataset):  # 12 MB samples: past the initial 4 MB arena
        def __len__(self):
            return 6

        def __getitem__(self, index):
            return np.full((3, 1024, 1024), index, np.float32)

    for shm in (True, False):
        with feedline.DataLoader(Big(), batch_size=2, num_workers=2, worker_mode="process",
                                 use_shared_memory=shm) as loader:
            values = [np.array(b)[:, 2, 1023, 1023].tolist() for b in loader]
        assert values == [[0, 1], [2, 3], [4, 5]]


def test_a_sample_of_another_layout_fails_and_the_worker_stays_in_step():
    class Mixed(io.Dataset):
        def __len__(self):
            return 12

        def __getitem__(self, index):
            if index == 5:
                return {"x": np.zeros(100000, np.float32)}
            return np.full(3, index, np.int64), np.int64(index)

    for shm in (True, False):
        with feedline.DataLoader(Mixed(), batch_size=4, num_workers=1, worker_mode="process",
                                 use_shared_memory=shm, error_policy="skip") as loader:
            labels = np.concatenate([b[1] for b in loader]).tolist()
            assert labels == [i for i in range(12) if i != 5]
            assert loader.stats()["errors_by_reason"] == {"type": 1}


def test_a_loader_left_as_garbage_is_not_closed_inside_a_worker():
    # Only the collector can free this loader. A worker inherits it; were it
    # collected there, closing it would wait on the parent's threads forever.
    gc.disable()
    try:
        cycle = [feedline.DataLoader(RandomDataset(8), batch_size=4, num_workers=2,
                                     worker_mode="thread")]
        cycle.append(cycle)
        assert sum(len(b[0]) for b in cycle[0]) == 8
        del cycle

        class Collects(io.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, index):
                gc.collect()
                return np.int64(index)

        with feedline.DataLoader(Collects(), batch_size=4, num_workers=2,
                                 worker_mode="process") as loader:
            assert np.concatenate([np.array(b) for b in loader]).tolist() == list(range(8))
    finally:
        gc.enable()


def mappings(pid, text):
    with open(f"/proc/{pid}/maps") as f:
        return [line for line in f if text in line]


def test_use_shared_memory_chooses_memfd_arenas_or_the_socket():
    gc.collect()  # loaders of earlier tests release their arenas
    for shm in (True, False):
        with feedline.DataLoader(RandomDataset(64), batch_size=8, num_workers=2, seed=1,
                                 worker_mode="process", use_shared_memory=shm,
                                 persistent_workers=True) as loader:
            assert sum(len(b[0]) for b in loader) == 64
            pids = [p for p in loader.worker_pids if p is not None] + [os.getpid()]
            arenas = [mappings(pid, "memfd:feedline-worker") for pid in pids]
            assert all(arenas) if shm else not any(arenas)
            # Nothing is named in /dev/shm, so nothing can be left there.
            assert not any(mappings(pid, "/dev/shm/") for pid in pids)


def test_no_worker_process_is_left_after_close_or_an_exception():
    loader = feedline.DataLoader(RandomDataset(200, delay=0.002), batch_size=8, num_workers=2,
                                 worker_mode="process")
    for i, _ in enumerate(loader):
        if i == 2:
            break  # workers are busy now
    pids = [p for p in loader.worker_pids if p is not None]
    assert pids and all(pid_running(p) for p in pids)
    loader.close()
    assert wait_gone(pids, seconds=2) == []


PARENT = textwrap.dedent("""
    import os, sys, time, numpy as np, feedline
    from feedline import io

    class Slow(io.Dataset):
        def __len__(self):
            return 10000
        def __getitem__(self, index):
            time.sleep(0.05)
            return np.int64(os.getpid())

    loader = feedline.DataLoader(Slow(), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    # Both workers have served (so both run): under GCC's ASan a child can
    # hang inside fork before its first line, which is a hang (the test's
    # time bound, retried by make test's ASan step), not a worker that
    # outlived its parent.
    served = set()
    while len(served) < 2:
        served.update(int(pid) for pid in next(it))
    print(*loader.worker_pids, flush=True)
    if sys.argv[1] == "interrupt":
        for batch in it:
            pass
    time.sleep(60)
""")


@pytest.mark.parametrize("ending", ["kill", "interrupt"])
def test_no_worker_process_outlives_its_parent(ending):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    parent = subprocess.Popen([sys.executable, "-c", PARENT, ending], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(pid_running(p) for p in pids)
        if ending == "kill":
            os.kill(parent.pid, signal.SIGKILL)  # busy workers: they die by PR_SET_PDEATHSIG
        else:
            os.killpg(parent.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
        parent.wait(timeout=20)
        if ending == "interrupt":
            assert b"KeyboardInterrupt" in parent.stderr.read()
        assert wait_gone(pids) == []
    finally:
        parent.kill()
        parent.wait()


SMALL_SHM = textwrap.dedent("""
    import os, sys
    import numpy as np
    import feedline

    class Images(feedline.io.Dataset):
        def __len__(self):
            return 192

        def __getitem__(self, index):
            return np.full((3, 224, 224), index, np.float32), index

    loader = feedline.DataLoader(Images(), batch_size=64, num_workers=2, prefetch_factor=2,
                                 worker_mode="process")
    seen = []
    for images, labels in loader:
        assert (images[:, 0, 0, 0] == labels).all()
        seen += labels.tolist()
    print(sorted(seen) == list(range(192)), len(os.listdir("/dev/shm")), flush=True)
""")


def test_runs_at_full_size_under_dockers_64_mb_dev_shm():
    # Docker's default /dev/shm is 64 MB; the four 38 MB float32 batch slots
    # in flight here would not fit in it. Worker processes share memfd
    # arenas, which /dev/shm's size does not bound, and leave nothing there.
    # A private mount namespace (root, as make test runs) gives this process
    # tree its own 64 MB /dev/shm.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    command = ("mount -t tmpfs -o size=64m tmpfs /dev/shm && exec " + sys.executable
               + " -c \"$SCRIPT\"")
    result = subprocess.run(["unshare", "-m", "sh", "-c", command],
                            env=dict(env, SCRIPT=SMALL_SHM), capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "0"]


class ForksThenDies(io.Dataset):
    """Sample 0 forks a process of its own that outlives the worker (it
    inherits the worker's socket); sample 4 kills its worker."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == 0 and os.fork() == 0:
            time.sleep(8)  # the loader must not wait for it
            os._exit(0)
        if index == 4:
            os.kill(os.getpid(), signal.SIGKILL)
        return np.int64(index)


def test_a_dead_worker_is_seen_even_when_its_socket_outlives_it():
    loader = feedline.DataLoader(ForksThenDies(), batch_size=2, num_workers=1,
                                 worker_mode="process", error_policy="skip")
    start = time.monotonic()
    labels = [b.tolist() for b in loader]
    assert time.monotonic() - start < 4
    assert labels == [[0, 1], [2, 3], [5], [6, 7]]
    assert loader.stats()["worker_restarts"] >= 3
    loader.close()


class StuckAtThree(io.Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, index):
        if index == 3:
            time.sleep(60)
        return np.int64(index)


@pytest.mark.parametrize("persistent", [False, True])
def test_a_new_epoch_does_not_wait_for_a_stuck_sample_of_the_abandoned_one(persistent):
    loader = feedline.DataLoader(StuckAtThree(), batch_size=2, num_workers=2,
                                 worker_mode="process", timeout=0.5, error_policy="skip",
                                 persistent_workers=persistent)
    start = time.monotonic()
    for _ in loader:
        break  # sample 3 is in flight, stuck
    labels = [b.tolist() for b in loader]
    assert labels == [[0, 1], [2], [4, 5], [6, 7], [8, 9], [10, 11]]
    loader.close()
    assert time.monotonic() - start < 10


class BadRecord(Exception):
    """An exception of the user's own, defined in a module."""


class RaisesBadRecord(io.Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, index):
        if index == 9:
            raise BadRecord(f"record {index} is damaged")
        return np.int64(index)


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_the_exception_type_of_a_failed_sample_is_data_qualified_by_its_module(mode):
    loader = feedline.DataLoader(RaisesBadRecord(), batch_size=4, num_workers=2, worker_mode=mode)
    with pytest.raises(feedline.SampleError) as info:
        list(loader)
    assert info.value.index == 9 and info.value.reason == "exception"
    assert info.value.exception_type == f"{__name__}.BadRecord"
    loader.close()


def test_a_collate_fn_that_raises_names_its_exception_type():
    def collate(samples):
        raise BadRecord("cannot collate")

    loader = feedline.DataLoader(RaisesBadRecord(), batch_size=4, num_workers=0,
                                 collate_fn=collate)
    with pytest.raises(feedline.SampleError) as info:
        next(iter(loader))
    assert info.value.reason == "collate"
    assert info.value.exception_type == f"{__name__}.BadRecord"
    loader.close()
