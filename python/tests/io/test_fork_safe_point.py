"""Worker processes are forked only while the thread that iterates is inside
a loader call (python/fork_safe_point.h). A restart forked while the training
step ran np.random.rand on a large array (numpy's generator holds its lock
with the GIL released) inherited the held lock, and the new worker blocked
forever when the loader seeded numpy.random: the loop hung."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    from feedline import io

    marks = sys.argv[1]

    class DiesOnceEvery25(io.Dataset):
        # Rows 3, 28, 53, ... end their process on the first try (as a crash
        # in a C extension would), then load on the retry.
        def __len__(self):
            return 400

        def __getitem__(self, index):
            if index % 25 == 3:
                try:
                    os.close(os.open(os.path.join(marks, str(index)),
                                     os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                    os._exit(1)
                except FileExistsError:
                    pass
            return np.full(4, index, np.int64)

    loader = io.DataLoader(DiesOnceEvery25(), batch_size=8, num_workers=2,
                           worker_mode="process", persistent_workers=True)
    seen = []
    for batch in loader:
        seen.extend(batch[:, 0].tolist())
        np.random.rand(2_000_000)  # the step's own numpy work, without the GIL
    assert sorted(seen) == list(range(400)), "a sample was lost or repeated"
    print("restarts", loader.stats()["worker_restarts"])
    """
)


def test_restarts_during_a_numpy_step_do_not_hang(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env,
                            capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["restarts", "16"]  # one per dying row
