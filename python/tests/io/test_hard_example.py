"""HardExampleSampler from Python: the rule, determinism, validation, and
exact resume through DataLoader.state_dict()."""

import json

import numpy as np
import pytest

import feedline
from feedline import io

from conftest import IndexDataset


def test_probabilities_follow_the_documented_rule():
    sampler = io.HardExampleSampler(4, decay=0.5, floor=0.2, seed=1)
    assert np.allclose(sampler.probabilities(), 0.25)
    sampler.update([0, 1, 2], [1.0, 3.0, 0.0])
    # Index 3 is unseen and scores like the hardest seen (3).
    expected = 0.2 / 4 + 0.8 * np.array([1, 3, 0, 3]) / 7
    assert np.allclose(sampler.probabilities(), expected)
    sampler.update(np.array([1]), np.array([1.0]))  # 0.5 * 3 + 0.5 * 1 = 2; unseen 3 follows: 2
    assert sampler.probabilities()[1] == pytest.approx(0.2 / 4 + 0.8 * 2 / 5)


def test_high_loss_samples_are_drawn_more_and_none_starves():
    sampler = io.HardExampleSampler(20, num_samples=20000, seed=3)
    losses = np.where(np.arange(20) < 5, 4.0, 0.0)
    sampler.update(np.arange(20), losses)
    counts = np.bincount(list(sampler), minlength=20)
    # 5 hard samples: 0.1 * 5 / 20 + 0.9 = 92.5% of the draws.
    assert counts[:5].sum() / 20000 == pytest.approx(0.925, abs=0.015)
    # The others have the floor, 0.1 / 20 = 0.5%: ~100 draws each.
    assert counts[5:].min() > 50


def test_deterministic_for_a_seed_and_a_sequence_of_updates():
    def run(seed):
        sampler = io.HardExampleSampler(30, num_samples=64, seed=seed)
        epochs = []
        for _ in range(3):
            draws = list(sampler)
            sampler.update(draws, [i % 7 for i in draws])
            epochs.append(draws)
        return epochs

    assert run(4) == run(4)
    assert run(4) != run(5)


def test_update_takes_torch_tensors_that_require_grad():
    torch = pytest.importorskip("torch")
    sampler = io.HardExampleSampler(5, seed=0)
    losses = torch.tensor([0.5, 2.0], requires_grad=True) * 2
    sampler.update(torch.tensor([1, 3]), losses)
    p = sampler.probabilities()
    assert p[3] > p[1]


def test_update_errors_name_the_argument():
    sampler = io.HardExampleSampler(5, seed=0)
    with pytest.raises(ValueError, match=r"indices and losses must have the same length, got 2 "
                                         r"indices and 1 losses"):
        sampler.update([0, 1], [1.0])
    with pytest.raises(IndexError, match=r"indices\[1\] is 5, outside \[0, 5\)"):
        sampler.update([0, 5], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"losses\[0\] must be finite and >= 0, got nan"):
        sampler.update([0], [float("nan")])
    with pytest.raises(ValueError, match=r"losses\[1\] must be finite and >= 0, got -1"):
        sampler.update([0, 1], [1.0, -1.0])
    with pytest.raises(TypeError, match="indices must hold integers, got dtype float64"):
        sampler.update([0.5], [1.0])
    with pytest.raises(TypeError, match="losses must hold numbers"):
        sampler.update([0], ["high"])
    assert np.allclose(sampler.probabilities(), 0.2)  # nothing was applied
    with pytest.raises(ValueError, match=r"floor must be in \(0, 1\]"):
        io.HardExampleSampler(5, floor=0)
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\)"):
        io.HardExampleSampler(5, decay=1.5)


def train_epoch(loader, sampler, record):
    for _, labels in loader:
        sampler.update(labels, labels % 4)  # IndexDataset: the label is the index
        record.append(labels.tolist())


def test_state_dict_resumes_the_loader_and_the_sampler_exactly():
    def make():
        sampler = io.HardExampleSampler(40, num_samples=24, seed=7)
        loader = feedline.DataLoader(IndexDataset(40), batch_size=4, sampler=sampler,
                                     num_workers=2, seed=1)
        return sampler, loader

    sampler, loader = make()
    train_epoch(loader, sampler, [])
    state, after = None, []
    for k, (_, labels) in enumerate(loader):
        sampler.update(labels, labels % 4)
        if k == 2:
            state = json.loads(json.dumps(loader.state_dict()))  # plain, JSON-safe
        elif k > 2:
            after.append(labels.tolist())
    train_epoch(loader, sampler, after)
    assert "sampler_state" in state

    sampler2, loader2 = make()
    loader2.load_state_dict(state)
    resumed = []
    train_epoch(loader2, sampler2, resumed)
    train_epoch(loader2, sampler2, resumed)
    assert resumed == after
    loader.close()
    loader2.close()


def test_a_sampler_state_for_a_loader_without_one_is_refused():
    sampler = io.HardExampleSampler(10, seed=0)
    loader = feedline.DataLoader(IndexDataset(10), batch_size=2, sampler=sampler)
    state = loader.state_dict()
    plain = feedline.DataLoader(IndexDataset(10), batch_size=2)
    with pytest.raises(ValueError, match="no HardExampleSampler"):
        plain.load_state_dict(state)
    bad = dict(state, sampler_state=dict(state["sampler_state"], scores=[1.0]))
    with pytest.raises(ValueError, match="scores has 1 entries, this sampler has 10 samples"):
        loader.load_state_dict(bad)


def test_the_torch_front_end_takes_the_sampler_and_reports():
    pytest.importorskip("torch")
    import feedline.torch

    sampler = io.HardExampleSampler(12, num_samples=8, seed=2)
    reports = []
    loader = feedline.torch.DataLoader(IndexDataset(12), batch_size=4, sampler=sampler,
                                       report_every="epoch", report=reports.append)
    for _, labels in loader:  # torch tensors, as torch's loader gives them
        sampler.update(labels, labels.float() / 10)
    assert len(reports) == 1 and reports[0]["steps"] == 2
    assert "sampler_state" in loader.state_dict()
