"""Samplers and batch samplers (feedline.io), alone and driving a DataLoader."""

import numpy as np
import pytest

import feedline
from feedline import io

from conftest import IndexDataset, labels_of


def test_sequence_sampler():
    sampler = io.SequenceSampler(range(5))
    assert len(sampler) == 5
    assert list(sampler) == [0, 1, 2, 3, 4]
    assert io.SequentialSampler is io.SequenceSampler


def test_random_sampler_permutes_anew_each_pass_and_follows_its_seed():
    sampler = io.RandomSampler(range(20), seed=5)
    first, second = list(sampler), list(sampler)
    assert sorted(first) == list(range(20)) and first != second
    again = io.RandomSampler(range(20), generator=5)
    assert [list(again), list(again)] == [first, second]
    assert list(io.RandomSampler(range(20), seed=6)) != first


def test_random_sampler_with_replacement_draws_num_samples():
    sampler = io.RandomSampler(range(3), replacement=True, num_samples=50, seed=1)
    draws = list(sampler)
    assert len(sampler) == 50 and len(draws) == 50
    assert set(draws) <= {0, 1, 2} and len(set(draws)) == 3


def test_weighted_random_sampler_never_draws_zero_weights():
    sampler = io.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], num_samples=40, seed=2)
    draws = list(sampler)
    assert len(draws) == 40 and set(draws) == {1, 3}
    with pytest.raises(ValueError):
        io.WeightedRandomSampler([1.0, -1.0], num_samples=2)


def test_subset_random_sampler_permutes_its_indices():
    sampler = io.SubsetRandomSampler([3, 7, 9, 12], seed=4)
    assert sorted(sampler) == [3, 7, 9, 12]
    assert len(sampler) == 4


def test_batch_sampler_groups_indices():
    batches = io.BatchSampler(dataset=range(7), batch_size=3)
    assert list(batches) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(batches) == 3
    dropped = io.BatchSampler(sampler=io.SequenceSampler(range(7)), batch_size=3, drop_last=True)
    assert list(dropped) == [[0, 1, 2], [3, 4, 5]]
    shuffled = list(io.BatchSampler(dataset=range(7), shuffle=True, batch_size=3))
    assert sorted(sum(shuffled, [])) == list(range(7))
    with pytest.raises(ValueError):
        io.BatchSampler(batch_size=3)
    with pytest.raises(ValueError):
        io.BatchSampler(dataset=range(7), batch_size=0)


def test_distributed_batch_sampler_splits_evenly_across_ranks():
    ranks = [
        io.DistributedBatchSampler(range(11), batch_size=2, num_replicas=3, rank=r)
        for r in range(3)
    ]
    assert {len(r) for r in ranks} == {2}
    assert {r.num_samples for r in ranks} == {4}
    seen = [i for r in ranks for batch in r for i in batch]
    assert len(seen) == 12 and set(seen) == set(range(11)), "padded to 12 with a repeat"


def test_distributed_batch_sampler_set_epoch_reshuffles_the_same_on_every_rank():
    def epoch_of(rank, epoch):
        sampler = io.DistributedBatchSampler(
            range(16), batch_size=4, num_replicas=2, rank=rank, shuffle=True
        )
        sampler.set_epoch(epoch)
        return [i for batch in sampler for i in batch]

    epoch0 = epoch_of(0, 0) + epoch_of(1, 0)
    assert sorted(epoch0) == list(range(16))
    epoch1 = epoch_of(0, 1) + epoch_of(1, 1)
    assert sorted(epoch1) == list(range(16)) and epoch1 != epoch0


def test_distributed_batch_sampler_reads_the_launcher_environment(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "4")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    sampler = io.DistributedBatchSampler(range(8), batch_size=1)
    assert (sampler.nranks, sampler.local_rank) == (4, 3)
    assert list(sampler) == [[3], [7]]


def test_loader_with_a_native_sampler():
    sampler = io.SubsetRandomSampler([1, 4, 6, 8], seed=9)
    loader = feedline.DataLoader(IndexDataset(10), batch_size=2, sampler=sampler)
    assert len(loader) == 2
    assert sorted(sum(labels_of(loader), [])) == [1, 4, 6, 8]
    with pytest.raises(ValueError, match="shuffle"):
        feedline.DataLoader(IndexDataset(10), sampler=sampler, shuffle=True)


def test_loader_with_a_distributed_batch_sampler_follows_its_epoch():
    sampler = io.DistributedBatchSampler(
        IndexDataset(12), batch_size=3, num_replicas=2, rank=1, shuffle=True
    )
    loader = feedline.DataLoader(IndexDataset(12), batch_sampler=sampler)
    sampler.set_epoch(4)
    expected = list(sampler)
    assert labels_of(loader) == expected
    with pytest.raises(ValueError):
        feedline.DataLoader(IndexDataset(12), batch_sampler=sampler, batch_size=4)


def test_loader_with_python_samplers():
    class Backwards(io.Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n - 1, -1, -1))

        def __len__(self):
            return self.n

    loader = feedline.DataLoader(IndexDataset(5), batch_size=2, sampler=Backwards(5))
    assert labels_of(loader) == [[4, 3], [2, 1], [0]]

    class Pairs:
        def __iter__(self):
            return iter([[0, 9], [5], [2, 2, 2]])

        def __len__(self):
            return 3

    loader = feedline.DataLoader(IndexDataset(10), batch_sampler=Pairs())
    assert labels_of(loader) == [[0, 9], [5], [2, 2, 2]]
    assert len(loader) == 3


def test_native_batch_sampler_over_a_python_sampler():
    batches = io.BatchSampler(sampler=[4, 3, 2, 1, 0], batch_size=2)
    assert list(batches) == [[4, 3], [2, 1], [0]]


def test_class_balanced_sampler_draws_rare_classes_as_often():
    labels = [0] * 90 + [1] * 10
    draws = list(io.ClassBalancedSampler(labels, num_samples=2000, seed=1))
    rare = sum(1 for i in draws if labels[i] == 1)
    assert len(draws) == 2000 and 800 < rare < 1200


def test_dynamic_batch_sampler_keeps_batches_under_the_token_budget():
    lengths = [5, 1, 9, 3, 3, 7, 2, 8, 4, 6]
    sampler = io.DynamicBatchSampler(lengths, max_tokens=12, seed=3)
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(10))
    assert all(len(b) * max(lengths[i] for i in b) <= 12 for b in batches)

    class Tokens(io.Dataset):
        def __len__(self):
            return len(lengths)

        def __getitem__(self, i):
            return {"tokens": np.arange(lengths[i])}

    loader = feedline.DataLoader(Tokens(), batch_sampler=io.DynamicBatchSampler(lengths, 12))
    rows = 0
    for batch in loader:
        tokens = batch["tokens"]
        # "tokens_lengths" comes only with batches whose lengths differ.
        sizes = batch.get("tokens_lengths", np.full(len(tokens), tokens.shape[1]))
        assert tokens.shape[1] == sizes.max() and tokens.size <= 12
        rows += len(tokens)
    assert rows == len(lengths)
