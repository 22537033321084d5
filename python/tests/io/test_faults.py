"""Fault injection through the public API: samples that take too long,
interrupts (KeyboardInterrupt, SystemExit, GeneratorExit, Ctrl-C), misuse of
a loader from its own code, exhausted iterators, error accounting and the
messages of bad arguments. Every case is bounded in time and asserts the
exact outcome."""

import inspect
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import feedline
from feedline import io

# Python map-style datasets may run in worker processes; these cases are
# about the loader's worker threads.
THREADS = (
    {"worker_mode": "thread"}
    if "worker_mode" in inspect.signature(feedline.DataLoader).parameters
    else {}
)


def run_epoch(loader):
    """The batches of one epoch as lists of sample values; a SampleError
    becomes ("error", type name, index) and the epoch goes on."""
    out = []
    it = iter(loader)
    for _ in range(1000):
        try:
            batch = next(it)
        except StopIteration:
            return out
        except feedline.SampleError as e:
            out.append(("error", type(e).__name__, e.index))
            continue
        values = batch[0] if isinstance(batch, tuple) else batch
        out.append(np.asarray(values).ravel().tolist())
    raise AssertionError("the epoch did not end")


class Gated(io.Dataset):
    """Sample i is i; sample `slow` waits for `gate` (at most 5 s)."""

    def __init__(self, n=8, slow=3):
        self.n = n
        self.slow = slow
        self.gate = threading.Event()

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if index == self.slow:
            self.gate.wait(5)
            return np.int64(1000 + index)
        return np.int64(index)


# --- Timeouts ---------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_a_timeout_raises_timeout_error_once_then_the_epoch_goes_on(workers):
    data = Gated()
    loader = feedline.DataLoader(data, batch_size=2, num_workers=workers, timeout=0.2, **THREADS)
    start = time.monotonic()
    batches = run_epoch(loader)
    elapsed = time.monotonic() - start
    data.gate.set()
    stats = loader.stats()
    loader.close()
    # With one worker, the batches after the stuck sample come from the
    # thread that took its place.
    assert batches == [[0, 1], ("error", "TimeoutError", 3), [4, 5], [6, 7]]
    assert elapsed < 3
    assert stats["errors_by_reason"] == {"timeout": 1}


def test_timeout_error_is_a_sample_error_and_a_builtin_timeout_error():
    data = Gated()
    with feedline.DataLoader(data, batch_size=2, num_workers=2, timeout=0.2, **THREADS) as loader:
        it = iter(loader)
        next(it)
        with pytest.raises(TimeoutError) as raised:  # the built-in
            next(it)
        data.gate.set()
        assert isinstance(raised.value, feedline.SampleError)
        assert isinstance(raised.value, feedline.TimeoutError)
        assert raised.value.index == 3
        assert raised.value.reason == "timeout"
        assert str(raised.value) == "sample 3: timeout: took longer than the loader timeout of 0.2 s"
        assert loader.stats()["errors_by_reason"] == {"timeout": 1}
        assert loader.stats()["errors"] == 1


def test_under_skip_a_timed_out_sample_is_dropped_once():
    data = Gated()
    with feedline.DataLoader(
        data, batch_size=2, num_workers=2, timeout=0.2, error_policy="skip", **THREADS
    ) as loader:
        batches = run_epoch(loader)
        data.gate.set()
        assert batches == [[0, 1], [2], [4, 5], [6, 7]]
        stats = loader.stats()
        assert (stats["errors"], stats["skipped"]) == (1, 1)


def test_under_replace_a_timed_out_sample_is_replaced_and_its_late_result_discarded():
    data = Gated()
    with feedline.DataLoader(
        data, batch_size=2, num_workers=2, timeout=0.2, error_policy="replace", seed=3, **THREADS
    ) as loader:
        it = iter(loader)
        next(it)
        values, mask = next(it)
        data.gate.set()
        assert mask.tolist() == [0, 1]
        assert values[0] == 2 and values[1] not in (3, 1003)
        assert [b[0].tolist() for b in it] == [[4, 5], [6, 7]]
        assert loader.stats()["replaced"] == 1


@pytest.mark.parametrize("policy", ["raise", "skip"])
def test_without_workers_a_late_sample_fails_when_it_returns(policy):
    class Slow(io.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, index):
            if index == 3:
                time.sleep(0.3)
            return np.int64(index)

    loader = feedline.DataLoader(Slow(), batch_size=2, timeout=0.1, error_policy=policy)
    expected = {
        "raise": [[0, 1], ("error", "TimeoutError", 3), [4, 5]],
        "skip": [[0, 1], [2], [4, 5]],
    }
    assert run_epoch(loader) == expected[policy]
    assert loader.stats()["errors_by_reason"] == {"timeout": 1}


# --- Interrupts -------------------------------------------------------------


@pytest.mark.parametrize("exception", [KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError])
@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "thread"), (2, "process")])
@pytest.mark.parametrize("policy", ["raise", "skip", "replace"])
def test_interrupts_in_getitem_pass_through_as_themselves(exception, workers, mode, policy):
    class Interrupting(io.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, index):
            if index == 5:
                raise exception("stop")
            return np.int64(index)

    loader = feedline.DataLoader(
        Interrupting(), batch_size=2, num_workers=workers, error_policy=policy, worker_mode=mode
    )
    with pytest.raises(exception, match="stop"):
        for _ in loader:
            pass
    assert loader.stats()["errors"] == 0
    loader.close()


@pytest.mark.parametrize("workers", [0, 2])
def test_an_interrupt_in_collate_fn_or_a_sampler_passes_through(workers):
    def collate(samples):
        raise KeyboardInterrupt

    loader = feedline.DataLoader(
        list(range(8)), batch_size=2, num_workers=workers, collate_fn=collate,
        error_policy="skip", **THREADS
    )
    with pytest.raises(KeyboardInterrupt):
        next(iter(loader))

    class Sampler:
        def __len__(self):
            return 8

        def __iter__(self):
            raise KeyboardInterrupt
            yield 0

    loader = feedline.DataLoader(list(range(8)), sampler=Sampler(), num_workers=workers, **THREADS)
    with pytest.raises(KeyboardInterrupt):
        next(iter(loader))


CTRL_C_SCRIPT = """
import sys, time
import numpy as np
import feedline
from feedline import io

class Endless(io.Dataset):
    def __len__(self):
        return 10**6
    def __getitem__(self, index):
        time.sleep(0.01)
        return np.int64(index)

kwargs = dict(batch_size=4, num_workers={workers}, error_policy="{policy}")
if len(sys.argv) > 1:
    kwargs["worker_mode"] = sys.argv[1]
for i, batch in enumerate(feedline.DataLoader(Endless(), **kwargs)):
    if i == 0:
        print("ready", flush=True)
"""


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "thread"), (2, "process")])
@pytest.mark.parametrize("policy", ["skip", "raise"])
def test_ctrl_c_stops_a_run_within_a_second(workers, mode, policy, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(CTRL_C_SCRIPT.format(workers=workers, policy=policy))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    args = [sys.executable, str(script), mode]
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        start = time.monotonic()
        _, stderr = process.communicate(timeout=10)
        elapsed = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert elapsed < 1.5, elapsed
    assert process.returncode != 0
    assert "KeyboardInterrupt" in stderr
    assert "SampleError" not in stderr


# --- Misuse -----------------------------------------------------------------

MISUSE_SCRIPT = """
import numpy as np
import feedline
from feedline import io

class UsesItsLoader(io.Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, index):
        if index == 3:
            {action}
        return np.int64(index)

data = UsesItsLoader()
loader = feedline.DataLoader(data, batch_size=2, num_workers={workers}, error_policy="skip",
                             **{threads})
data.loader = loader
try:
    for batch in loader:
        pass
    print("no error")
except RuntimeError as e:
    print(type(e).__name__, e)
loader.close()
print("closed")
"""


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize(
    "action, call",
    [("self.loader.close()", "close()"), ("list(self.loader)", "__iter__()"),
     ("next(iter(self.loader))", "__iter__()")],
)
def test_using_a_loader_from_its_own_dataset_raises_without_hanging(workers, action, call, tmp_path):
    script = tmp_path / "misuse.py"
    script.write_text(MISUSE_SCRIPT.format(action=action, workers=workers, threads=THREADS))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"RuntimeError DataLoader.{call} was called from the loader's own dataset, collate_fn "
        "or worker_init_fn; a loader cannot be used from code it runs (it would wait for itself)"
    )
    assert lines[1] == "closed"


FREED_ON_ITS_OWN_THREAD_SCRIPT = """
import gc, os, sys, threading, time, weakref
import numpy as np
import feedline, feedline.torch

gc.disable()  # the collections below only
PARENT = os.getpid()
garbage = threading.Event()  # the loader is unreachable, in a reference cycle
freed = threading.Event()


def collect():
    # On a worker thread of the loader that is collected: its collate_fn,
    # or the unpickling of a batch its worker process collated.
    if os.getpid() == PARENT:
        assert garbage.wait(30)
        gc.collect()


def in_the_parent():
    collect()
    return "rebuilt"


class Rebuilt:
    def __reduce__(self):
        return in_the_parent, ()


def collate(samples):
    if int(samples[0]) == 0:
        return np.stack(samples), None
    collect()  # a batch after the first one
    return np.stack(samples), Rebuilt()


class Numbers:
    def __len__(self):
        return 16

    def __getitem__(self, index):
        return np.int64(index)


def threads():
    return len(os.listdir("/proc/self/task"))


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


before = threads()
if sys.argv[1] == "process":
    loader = feedline.torch.DataLoader(Numbers(), batch_size=2, num_workers=2,
                                       collate_fn=collate)
    pids = loader.worker_pids
else:
    loader = feedline.DataLoader(Numbers(), batch_size=2, num_workers=2, collate_fn=collate,
                                 worker_mode="thread")
    pids = []
it = iter(loader)
first = next(it)
print("first", int(first[0][0]), flush=True)
freed_on = []
weakref.finalize(loader, lambda: (freed_on.append(threading.current_thread()), freed.set()))
cycle = [loader, it]
cycle.append(cycle)
del loader, it, cycle, first
garbage.set()
assert freed.wait(30)
print("freed on the main thread" if freed_on[0] is threading.main_thread()
      else "freed on a worker thread", flush=True)
# Closed all the same: its threads end, and its worker processes.
deadline = time.monotonic() + 30
while time.monotonic() < deadline and (threads() > before or any(map(running, pids))):
    time.sleep(0.02)
print("closed" if threads() <= before and not any(map(running, pids)) else "left open")
"""


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_a_loader_collected_on_its_own_worker_thread_is_closed_without_aborting(mode, tmp_path):
    """A loader left in a reference cycle (as a traceback that holds its
    iterator leaves it) is freed by the cycle collector on whichever thread
    allocates next: here the loader's own worker thread, inside its
    collate_fn or unpickling a batch from its worker process. Closing it
    there joined that very thread, and the process aborted (std::terminate,
    SIGABRT)."""
    script = tmp_path / "collected.py"
    script.write_text(FREED_ON_ITS_OWN_THREAD_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, str(script), mode], capture_output=True, text=True, env=env, timeout=90
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["first 0", "freed on a worker thread", "closed"]


# --- Iterators --------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, 2])
def test_an_exhausted_iterator_stays_exhausted(workers):
    loader = feedline.DataLoader(list(range(6)), batch_size=4, num_workers=workers, **THREADS)
    it = iter(loader)
    assert [b.tolist() for b in it] == [[0, 1, 2, 3], [4, 5]]
    epoch = loader.epoch
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)
    assert loader.epoch == epoch
    assert loader.stats()["batches"] == 2
    # A new iteration runs the next epoch.
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5]]


# --- Error accounting and messages ------------------------------------------


def test_replace_counts_errors_and_failed_substitutes_apart():
    lock = threading.Lock()
    failed = []

    class HalfBroken(io.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, index):
            if index < 4:
                with lock:
                    failed.append(index)
                raise ValueError(f"broken {index}")
            return np.int64(index)

    loader = feedline.DataLoader(
        HalfBroken(), batch_size=4, num_workers=2, error_policy="replace", seed=5, **THREADS
    )
    assert sum(len(b[0]) for b in loader) == 8
    stats = loader.stats()
    assert stats["errors"] == 4
    assert stats["errors_by_reason"] == {"exception": 4}
    assert stats["replaced"] == 4
    assert stats["errors"] + stats["failed_substitutes"] == len(failed)


def test_a_failing_collate_fn_is_prefixed_once():
    def collate(samples):
        raise ValueError("boom")

    loader = feedline.DataLoader(list(range(4)), batch_size=2, collate_fn=collate)
    with pytest.raises(feedline.SampleError) as raised:
        next(iter(loader))
    assert str(raised.value).startswith("sample: collate: collate_fn raised ValueError: boom")
    assert str(raised.value).count("collate:") == 1


class CustomBatch:
    def __init__(self, samples):
        self.samples = list(samples)

    def __eq__(self, other):
        return isinstance(other, CustomBatch) and self.samples == other.samples


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "thread"), (2, "process")])
def test_a_collate_fn_returning_any_object_gets_it_back(workers, mode):
    loader = feedline.DataLoader(list(range(4)), batch_size=2, collate_fn=CustomBatch,
                                 num_workers=workers, worker_mode=mode)
    assert list(loader) == [CustomBatch([0, 1]), CustomBatch([2, 3])]
    text = feedline.DataLoader(list(range(4)), batch_size=2, collate_fn=lambda s: "text")
    assert list(text) == ["text", "text"]


def test_a_native_dataset_indexed_directly_names_index_and_file(tmp_path):
    from feedline.vision import datasets, synth

    broken = synth.write_image_folder(tmp_path, 6, classes=2, seed=5, broken=1)[0]
    data = datasets.ImageFolder(str(tmp_path))
    index = [path for path, _ in data.samples].index(broken)
    with pytest.raises(feedline.SampleError) as raised:
        data[index]
    assert raised.value.index == index
    assert raised.value.source == broken
    n = len(data)
    with pytest.raises(IndexError, match=rf"^index -100 is out of range for a dataset of {n} samples$"):
        data[-100]
    good = (index + 1) % n
    assert data[good - n][1] == data[good][1]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"batch_size": 2**70}, ValueError, "DataLoader: batch_size must be from"),
        ({"num_workers": 2**40}, ValueError, "DataLoader: num_workers must be from"),
        ({"num_workers": 100000}, ValueError, "DataLoader: num_workers must be at most 1024"),
        ({"prefetch_factor": 2**33}, ValueError, "DataLoader: prefetch_factor must be from"),
        ({"seed": -1}, ValueError, "DataLoader: seed must be from 0 to 18446744073709551615, got -1"),
        ({"seed": 2**64}, ValueError, "DataLoader: seed must be from 0"),
        ({"seed": 1.5}, TypeError, "DataLoader: seed must be an int, got float"),
        ({"timeout": float("nan")}, ValueError, "DataLoader: timeout must be a finite number"),
        ({"timeout": float("inf")}, ValueError, "DataLoader: timeout must be a finite number"),
        ({"timeout": "1"}, TypeError, "DataLoader: timeout must be a number of seconds, got str"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, message):
    with pytest.raises(error) as raised:
        feedline.DataLoader(list(range(4)), **kwargs)
    assert str(raised.value).startswith(message), str(raised.value)


def test_a_huge_len_is_a_clear_error():
    class Huge(io.Dataset):
        def __len__(self):
            return 2**62

        def __getitem__(self, index):
            return np.int64(index)

    with pytest.raises(ValueError, match=r"4611686018427387904 samples, the dataset's length"):
        next(iter(feedline.DataLoader(Huge())))


def test_a_uint64_above_the_int64_range_is_refused_not_wrapped():
    class Big(io.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, index):
            return np.array([1, 2**63 + 1], dtype=np.uint64)

    with pytest.raises(feedline.SampleError, match="uint64 value 9223372036854775809"):
        next(iter(feedline.DataLoader(Big())))

    class Fits(io.Dataset):
        def __len__(self):
            return 1

        def __getitem__(self, index):
            return np.array([2**63 - 1], dtype=np.uint64)

    assert next(iter(feedline.DataLoader(Fits()))).tolist() == [[2**63 - 1]]
