#!/usr/bin/python3
"""Checkpoints a PyTorch training loop fed by feedline mid-epoch and resumes
it: the resumed run sees the same remaining batches and gives the same losses
as a run that was never interrupted.

    PYTHONPATH=build/python /usr/bin/python3 examples/resume_torch.py --stop-at 1 3
    PYTHONPATH=build/python /usr/bin/python3 examples/resume_torch.py   # resumes

The checkpoint holds the model, the optimizer, the epoch and the loader's
state_dict(); load them all, then iterate as usual.
"""

import argparse
import collections
import os

import numpy as np
import torch
from torch import nn

import feedline

Result = collections.namedtuple("Result", "batches losses")


class Points(feedline.io.Dataset):
    """Sample i: 8 features and a target, with noise drawn from the sample's
    own generator (deterministic per index, whichever worker loads it)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        x = rng.standard_normal(8).astype(np.float32)
        y = np.float32(x.sum() * 0.5 + 0.1 * rng.standard_normal())
        return x, np.array([y], np.float32)


def train(epochs, checkpoint, stop_at, workers=2):
    """Trains for `epochs`, resuming from `checkpoint` if it exists. With
    stop_at=(epoch, step) it saves a checkpoint after that step and returns,
    as a run killed there would (after its last checkpoint)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the same reduction order in both runs: equal losses
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = feedline.DataLoader(Points(512), batch_size=32, shuffle=True,
                                 num_workers=workers, seed=7)
    start_epoch = 0
    if checkpoint is not None and os.path.exists(checkpoint) and stop_at is None:
        saved = torch.load(checkpoint)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])  # the next `for` continues there
        start_epoch = saved["epoch"]

    batches, losses = 0, []
    for epoch in range(start_epoch, epochs):
        first_step = loader.state_dict()["next_batch"] if epoch == start_epoch else 0
        for step, (x, y) in enumerate(loader, start=first_step):
            loss = nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batches += 1
            losses.append(loss.item())
            if stop_at == (epoch, step):
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "epoch": epoch, "loader": loader.state_dict()}, checkpoint)
                loader.close()
                return Result(batches, losses)
    loader.close()
    return Result(batches, losses)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--checkpoint", default="/tmp/feedline_resume_example.pt")
    parser.add_argument("--stop-at", type=int, nargs=2, metavar=("EPOCH", "STEP"),
                        help="save a checkpoint after this step and stop")
    args = parser.parse_args()
    stop_at = tuple(args.stop_at) if args.stop_at else None
    result = train(args.epochs, args.checkpoint, stop_at)
    verb = "stopped after" if stop_at else "trained"
    print(f"{verb} {result.batches} batches; last loss {result.losses[-1]:.6f}")


if __name__ == "__main__":
    main()
