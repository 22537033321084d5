#!/usr/bin/python3
"""Trains a tiny causal language model with PyTorch on packed token rows:
documents of varied length packed by feedline (PackOptions, best fit) into
rows of --seq-len tokens, attention kept inside each document by a
block-diagonal mask built from segment_ids, positions from position_ids.

    PYTHONPATH=build/python /usr/bin/python3 examples/train_lm.py --steps 200

The corpus is generated: each document counts from a random start with a
random stride (mod the vocabulary), so the model can learn it, and the loss
falls. Halfway through, the loader's state is saved and a new loader resumes
from it, as a job restarted from a checkpoint would. Exits non-zero if the
loss did not fall.
"""

import argparse
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import feedline
import feedline.torch


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=4000)
    parser.add_argument("--vocab", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def corpus(documents, vocab, seed):
    """Token documents of log-normal lengths: start, start + stride, ..."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.exp(rng.normal(3.2, 0.8, documents)).astype(np.int64), 2, 400)
    docs = []
    for n in lengths:
        start, stride = rng.integers(0, vocab), rng.integers(1, 8)
        docs.append((start + stride * np.arange(n)) % vocab)
    return feedline.io.TokenDataset.from_documents(docs)


class TinyLM(nn.Module):
    def __init__(self, vocab, seq_len, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(seq_len, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids, positions, segments):
        seq_len = ids.shape[1]
        # Each token sees the earlier tokens of its own document only;
        # padding (segment 0) sees itself, and its labels are ignored.
        same = (segments[:, :, None] == segments[:, None, :]) & (segments[:, :, None] > 0)
        causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=ids.device).tril()
        mask = ((same & causal) | torch.eye(seq_len, dtype=torch.bool, device=ids.device))[:, None]
        x = self.embed(ids) + self.position(positions)
        q, k, v = (t[:, None] for t in self.qkv(x).chunk(3, dim=-1))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:  # torch 1.x: what SDPA computes
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            y = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        x = x + y[:, 0]
        x = x + self.mlp(x)
        return self.head(x)


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    docs = corpus(args.documents, args.vocab, args.seed)
    pack = feedline.io.PackOptions(args.seq_len, strategy="best_fit", max_segments=32)

    def make_loader():
        return feedline.torch.DataLoader(docs, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers, seed=args.seed, pack=pack)

    plan = pack.plan(docs.lengths)
    print(f"{len(docs)} documents, {docs.lengths.sum()} tokens, "
          f"{len(plan['row_offsets']) - 1} rows of {args.seq_len} per epoch, "
          f"padding {plan['padding_fraction'] * 100:.2f}%")
    model = TinyLM(args.vocab, args.seq_len)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loader = make_loader()
    losses, step, state = [], 0, None
    while step < args.steps:
        for batch in loader:
            logits = model(batch["input_ids"], batch["position_ids"], batch["segment_ids"])
            loss = F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(),
                                   ignore_index=-100)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            step += 1
            if step % 50 == 0:
                print(f"step {step}: loss {np.mean(losses[-50:]):.3f} (epoch {loader.epoch})")
            if step == args.steps // 2 and state is None:
                # A checkpoint, and a restart from it.
                state = loader.state_dict()
                loader.close()
                loader = make_loader()
                loader.load_state_dict(state)
                print(f"resumed at epoch {state['epoch']}, batch {state['next_batch']}")
                break
            if step >= args.steps:
                break
    loader.close()
    window = max(1, min(20, len(losses) // 4))
    first, last = np.mean(losses[:window]), np.mean(losses[-window:])
    print(f"loss {first:.3f} -> {last:.3f}")
    if not last < 0.7 * first:
        raise SystemExit("the loss did not fall")


if __name__ == "__main__":
    main()
