"""Distributed training under real launchers: two ranks of a
DistributedDataParallel job (gloo, CPU), each loading its share with
feedline's DistributedBatchSampler. The ranks' outputs must show that each
epoch covered the dataset, the ranks took equal steps, the loss fell, and the
exact evaluation (pad=False) counted every sample once."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "train_distributed.py"
SAMPLES, BATCH, EPOCHS, RANKS = 203, 8, 3, 2
TIMEOUT_S = 180

LAUNCHER_VARIABLES = [
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_LOCAL_RANK", "PADDLE_LOCAL_SIZE",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def example_args(partition):
    return [str(EXAMPLE), "--samples", str(SAMPLES), "--batch-size", str(BATCH), "--epochs",
            str(EPOCHS), "--partition", partition]


def records(output):
    """The JSON lines the ranks printed (torchrun prefixes them with [defaultN]:)."""
    found = []
    for line in output.splitlines():
        if "{" in line:
            found.append(json.loads(line[line.index("{"):]))
    return found


def check_training(output, launcher):
    found = records(output)
    epochs = [r for r in found if "epoch" in r]
    evals = [r for r in found if "eval_samples" in r]
    assert len(epochs) == EPOCHS * RANKS and len(evals) == RANKS, output[-3000:]
    assert {r["launcher"] for r in epochs} == {launcher}
    losses = []
    for epoch in range(EPOCHS):
        ranks = sorted((r for r in epochs if r["epoch"] == epoch), key=lambda r: r["rank"])
        assert [r["rank"] for r in ranks] == list(range(RANKS))
        # Equal steps, every sample covered, only the padding repeats.
        assert len({r["steps"] for r in ranks}) == 1, ranks
        seen = [i for r in ranks for i in r["indices"]]
        assert set(seen) == set(range(SAMPLES)), f"epoch {epoch} missed samples"
        assert len(seen) == -(-SAMPLES // RANKS) * RANKS
        losses.append(sum(r["loss"] for r in ranks) / RANKS)
    assert losses[-1] < 0.7 * losses[0], f"the loss did not fall: {losses}"
    # pad=False: the all-reduced evaluation counted each sample once.
    assert [r["eval_samples"] for r in evals] == [SAMPLES] * RANKS
    assert evals[0]["eval_correct"] == evals[1]["eval_correct"] > SAMPLES // 2
    # DistributedDataParallel kept the replicas identical.
    assert evals[0]["weights_sum"] == evals[1]["weights_sum"]


def test_torchrun_two_ranks_train_on_their_shares():
    # torchrun is torch.distributed.run; Debian's needs --redirects and --tee
    # set to a single stream under Python 3.11 (docs/distributed.md).
    command = [sys.executable, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1",
               "--nproc_per_node", str(RANKS), "--master_addr", "127.0.0.1", "--master_port",
               str(free_port())] + example_args("paddle")
    done = subprocess.run(command, env=clean_env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    check_training(done.stdout, "torchrun")


def test_paddle_launch_environment_with_torchs_partition():
    # paddle.distributed.launch is not installed: its variables are set here,
    # one process per rank, as it would set them.
    port = str(free_port())
    ranks = [
        subprocess.Popen(
            [sys.executable] + example_args("torch"),
            env=clean_env(PADDLE_TRAINER_ID=str(r), PADDLE_TRAINERS_NUM=str(RANKS),
                          PADDLE_LOCAL_RANK=str(r), PADDLE_LOCAL_SIZE=str(RANKS),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=port),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in range(RANKS)
    ]
    outputs = []
    try:
        for process in ranks:
            out, err = process.communicate(timeout=TIMEOUT_S)
            assert process.returncode == 0, out[-3000:] + err[-3000:]
            outputs.append(out)
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
    check_training("\n".join(outputs), "paddle")
