"""examples/train_paddle.py, the PaddleClas-style ResNet training, fed by
each loader: in one process, and with two CPU ranks through
paddle.distributed.launch (gloo). The loss must fall (the script's exit
status says so, and the losses it prints show it)."""

import os
import re
import subprocess
import sys

import feedline
import feedline.paddle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
EXAMPLE = os.path.join(ROOT, "examples", "train_paddle.py")
EPOCHS = 4
IMAGES = 96
BATCH = 16
EPOCH_LINE = re.compile(r"rank (\d) epoch (\d+) loss ([0-9.]+) steps (\d+)")


def loader_name(loader_class):
    return "feedline" if loader_class is feedline.paddle.DataLoader else "paddle"


def environment():
    # The feedline the tests import, for the script and the launcher's ranks.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(feedline.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    return env


def arguments(loader_class, data):
    return [EXAMPLE, "--loader", loader_name(loader_class), "--data", data, "--epochs",
            str(EPOCHS), "--images", str(IMAGES), "--batch-size", str(BATCH)]


def epochs(output, rank):
    """[(loss, steps)] of `rank`, by epoch, from the script's lines."""
    found = [(int(m.group(2)), float(m.group(3)), int(m.group(4)))
             for m in EPOCH_LINE.finditer(output) if int(m.group(1)) == rank]
    assert [e for e, _, _ in found] == list(range(EPOCHS)), output[-3000:]
    return [(loss, steps) for _, loss, steps in found]


def test_one_process(loader_class, tmp_path):
    result = subprocess.run([sys.executable] + arguments(loader_class, str(tmp_path / "data")),
                            cwd=ROOT, env=environment(), capture_output=True, text=True,
                            timeout=110)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    losses = epochs(output, 0)
    assert all(steps == IMAGES // BATCH for _, steps in losses)
    assert losses[-1][0] < losses[0][0]
    assert f"rank 0 loss fell: {losses[0][0]:.4f} -> {losses[-1][0]:.4f}" in output
    assert sorted(os.listdir(tmp_path / "data")) == ["blue", "green", "red", "yellow"]


def test_two_cpu_ranks_with_paddles_launcher(loader_class, tmp_path):
    logs = tmp_path / "log"
    command = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2",
               "--log_dir", str(logs)] + arguments(loader_class, str(tmp_path / "data"))
    result = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True,
                            text=True, timeout=110)
    ranks = []
    for rank in range(2):
        with open(logs / f"workerlog.{rank}", errors="replace") as f:
            ranks.append(f.read())
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:] + ranks[1][-2000:]
    losses = [epochs(output, rank) for rank, output in enumerate(ranks)]
    # The DistributedBatchSampler halves each rank's epoch; the printed loss
    # is the mean over the ranks, the same on both.
    assert all(steps == IMAGES // BATCH // 2 for rank in losses for _, steps in rank)
    assert [loss for loss, _ in losses[0]] == [loss for loss, _ in losses[1]]
    assert losses[0][-1][0] < losses[0][0][0]
    for rank, output in enumerate(ranks):
        assert f"rank {rank} loss fell" in output
