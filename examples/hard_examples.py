"""Hard-example sampling on a small training run (CPU, a few seconds).

A classification set where 5% of the samples form a rare group that follows
another rule than the rest. The same model is trained for the same number of
steps twice: with uniform draws (RandomSampler with replacement) and with
feedline's HardExampleSampler, which the loop feeds with each sample's loss.
The run prints how often each sampler drew the rare group and the loss and
accuracy on each group as training goes.

    PYTHONPATH=build/python /usr/bin/python3 examples/hard_examples.py
"""

import argparse
import time

import numpy as np
import torch

import feedline
from feedline import io

N, DIM, RARE = 4000, 16, 0.05


def make_data(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, DIM)).astype(np.float32)
    rare = np.zeros(N, dtype=bool)
    rare[rng.choice(N, int(N * RARE), replace=False)] = True
    w_common, w_rare = rng.standard_normal(DIM), rng.standard_normal(DIM)
    x[rare, -1] += 4.0  # the rare group sits apart, and follows its own rule
    y = np.where(rare, x @ w_rare > 0, x @ w_common > 0).astype(np.int64)
    return x, y, rare


class Points(io.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i], i  # the index, for sampler.update


def evaluate(model, x, y, mask):
    with torch.no_grad():
        logits = model(torch.from_numpy(x[mask]))
        target = torch.from_numpy(y[mask])
        loss = torch.nn.functional.cross_entropy(logits, target).item()
        accuracy = (logits.argmax(1) == target).float().mean().item()
    return loss, accuracy


def train(kind, x, y, rare, steps_per_epoch, epochs, batch_size, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(DIM, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    draws = steps_per_epoch * batch_size  # one "epoch" of the sampler: re-weighted this often
    if kind == "hard":
        sampler = io.HardExampleSampler(len(x), num_samples=draws, seed=seed)
    else:
        sampler = io.RandomSampler(Points(x, y), replacement=True, num_samples=draws,
                                         seed=seed)
    loader = feedline.DataLoader(Points(x, y), batch_size=batch_size, sampler=sampler, seed=seed)
    drawn_rare = drawn = 0
    history = []
    for epoch in range(epochs):
        for features, labels, index in loader:
            logits = model(torch.from_numpy(features))
            losses = torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels),
                                                       reduction="none")
            optimizer.zero_grad()
            losses.mean().backward()
            optimizer.step()
            if kind == "hard":
                sampler.update(index, losses)  # detached and copied by update
            drawn += len(index)
            drawn_rare += int(rare[index].sum())
        if (epoch + 1) % (epochs // 5) == 0:
            history.append((epoch + 1, evaluate(model, x, y, rare), evaluate(model, x, y, ~rare)))
    return drawn_rare / drawn, history, loader.stats()["loop"]["text"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--steps-per-epoch", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    x, y, rare = make_data(args.seed)
    start = time.perf_counter()
    print(f"{N} samples, {rare.sum()} in the rare group ({RARE:.0%}); "
          f"{args.epochs} epochs of {args.steps_per_epoch} steps of {args.batch_size}")
    results = {}
    for kind in ("uniform", "hard"):
        results[kind] = train(kind, x, y, rare, args.steps_per_epoch, args.epochs,
                              args.batch_size, args.seed)
    print()
    print(f"{'sampler':8} {'rare drawn':>10}")
    for kind, (share, _, _) in results.items():
        print(f"{kind:8} {share:10.1%}")
    print()
    print(f"{'epoch':>5}  {'sampler':8} {'rare loss':>9} {'rare acc':>8} {'common loss':>11} "
          f"{'common acc':>10}")
    for row in range(len(results["hard"][1])):
        for kind in ("uniform", "hard"):
            epoch, (rare_loss, rare_acc), (common_loss, common_acc) = results[kind][1][row]
            print(f"{epoch:5d}  {kind:8} {rare_loss:9.3f} {rare_acc:8.1%} {common_loss:11.3f} "
                  f"{common_acc:10.1%}")
    print()
    print("loader, hard-example run:", results["hard"][2])
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
