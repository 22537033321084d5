"""Worker processes write a Python dataset's arrays straight into the batch
slots, which live in one shared memfd mapping: the batches the loop gets are
views of it, and equal those of worker threads."""

import numpy as np

import feedline
from feedline import io

from time_bounds import bound_time


class Noise(io.Dataset):
    """Sample i: a float32 [3, 16, 16] image made from i, i, and a string of
    varying length (not written in place: it comes back through the arena)."""

    def __len__(self):
        return 80

    def __getitem__(self, index):
        image = np.sin(np.arange(3 * 16 * 16, dtype=np.float32) * (index + 1)).reshape(3, 16, 16)
        return image, np.int64(index), "s" * (index % 5)


def mapping_of(address):
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            begin, end = (int(x, 16) for x in fields[0].split("-"))
            if begin <= address < end:
                return fields[5] if len(fields) > 5 else ""
    return ""


def batches(mode, shm=True, keep=False):
    out = []
    with feedline.DataLoader(Noise(), batch_size=16, num_workers=2, seed=3, shuffle=True,
                             worker_mode=mode, use_shared_memory=shm) as loader:
        for images, labels, names in loader:
            where = mapping_of(images.__array_interface__["data"][0])
            out.append((images.copy(), labels.copy(), list(names), where))
    return out


def test_process_batches_view_the_shared_slots_and_equal_thread_batches():
    threads = batches("thread")
    processes = batches("process")
    assert len(processes) == len(threads) == 5
    for (ti, tl, tn, t_where), (pi, pl, pn, p_where) in zip(threads, processes):
        np.testing.assert_array_equal(pi, ti)
        np.testing.assert_array_equal(pl, tl)
        assert pn == tn
        assert "feedline-slots" not in t_where
        assert p_where.startswith("/memfd:feedline-slots"), p_where


def test_without_shared_memory_the_slots_stay_in_the_loaders_memory():
    threads = batches("thread")
    for (ti, tl, tn, _), (pi, pl, pn, where) in zip(threads, batches("process", shm=False)):
        np.testing.assert_array_equal(pi, ti)
        np.testing.assert_array_equal(pl, tl)
        assert pn == tn
        assert "feedline-slots" not in where


def test_three_loaders_leave_the_address_space_to_the_job_under_ulimit_v():
    # Each process-mode loader reserved address space equal to the machine's
    # RAM for its slots: under a ulimit -v the job fit in, three loaders left
    # no room for the job's own arrays. Now a loader reserves at most its
    # memory budget and a quarter of what the limit leaves.
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import os, resource, sys
        import numpy as np
        import feedline
        from feedline import io

        class Ones(io.Dataset):
            def __len__(self):
                return 32
            def __getitem__(self, index):
                return np.ones((3, 8, 8), np.float32) * index

        def vm_bytes():
            with open("/proc/self/status") as f:
                line = next(l for l in f if l.startswith("VmSize"))
            return int(line.split()[1]) * 1024

        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        limit = vm_bytes() + 3 * ram + ram // 2
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        loaders = []
        for _ in range(3):
            loader = feedline.DataLoader(Ones(), batch_size=8, num_workers=2,
                                         worker_mode="process")
            next(iter(loader))
            loaders.append(loader)
        with open("/proc/self/maps") as f:
            shared = sum("feedline-slots" in line for line in f)
        try:
            array = np.empty(ram // 2, np.uint8)  # address space only, never touched
            fits = True
        except MemoryError:
            fits = False
        for loader in loaders:
            loader.close()
        print(shared, fits)
    """)
    bound_time(150)  # past the child's timeout: a hung child fails its test
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    shared, fits = done.stdout.split()
    assert shared == "3", "every loader keeps its slots in shared memory"
    assert fits == "True", "the job's array no longer fits under the address-space limit"
