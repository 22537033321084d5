"""examples/train_paddle_static.py, the PaddleClas-style static-graph
training (paddle.static.data inputs, feed_list, return_list=False, a
DistributedBatchSampler, an Executor), fed by each loader: every epoch has
its steps and the loss falls (the script's exit status says so, and the
losses it prints show it)."""

import os
import re
import subprocess
import sys

import feedline
import feedline.paddle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
EXAMPLE = os.path.join(ROOT, "examples", "train_paddle_static.py")
EPOCHS = 3
IMAGES = 96
BATCH = 16
EPOCH_LINE = re.compile(r"epoch (\d+) loss ([0-9.]+) steps (\d+) images/s ([0-9.]+) "
                        r"loader (\w+)")


def test_the_static_program_learns(loader_class, tmp_path, time_bound):
    name = "feedline" if loader_class is feedline.paddle.DataLoader else "paddle"
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(feedline.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    command = [sys.executable, EXAMPLE, "--loader", name, "--data", str(tmp_path / "data"),
               "--epochs", str(EPOCHS), "--images", str(IMAGES), "--batch-size", str(BATCH),
               "--workers", "2"]
    time_bound(330)  # past the child's timeout: a hung child fails this test
    try:
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=300)
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(
            errors="replace")
        raise AssertionError(f"examples/train_paddle_static.py --loader {name} ran past "
                             f"300 s:\n{output[-3000:]}") from None
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    epochs = [(int(m.group(1)), float(m.group(2)), int(m.group(3)), m.group(5))
              for m in EPOCH_LINE.finditer(output)]
    assert [e[0] for e in epochs] == list(range(EPOCHS)), output[-3000:]
    assert all(steps == IMAGES // BATCH and loader == name for _, _, steps, loader in epochs)
    assert epochs[-1][1] < epochs[0][1]
    assert f"round 0 loader {name} loss fell" in output
