"""Samplers and batch samplers (feedline.io), alone and driving a DataLoader."""

import subprocess
import sys
import textwrap

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


LAUNCHER_VARIABLES = [
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
    "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_LOCAL_RANK", "PADDLE_LOCAL_SIZE",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
]


@pytest.fixture
def no_launcher(monkeypatch):
    """An environment no launcher has touched (the tests may run under one)."""
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_distributed_batch_sampler_reads_the_launcher_environment(no_launcher):
    monkeypatch = no_launcher
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "4")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    sampler = io.DistributedBatchSampler(range(8), batch_size=1)
    assert (sampler.nranks, sampler.local_rank) == (4, 3)
    assert list(sampler) == [[3], [7]]


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, (0, 1, 0, 1, "single")),
        ({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"},
         (3, 4, 1, 2, "torchrun")),
        ({"PADDLE_TRAINER_ID": "1", "PADDLE_TRAINERS_NUM": "2", "PADDLE_LOCAL_RANK": "1",
          "PADDLE_LOCAL_SIZE": "2"}, (1, 2, 1, 2, "paddle")),
        ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4",
          "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "1"},
         (2, 4, 0, 1, "openmpi")),
        ({"PMI_RANK": "1", "PMI_SIZE": "3"}, (1, 3, 1, 3, "pmi")),
        # torchrun's variables win over Paddle's.
        ({"RANK": "0", "WORLD_SIZE": "2", "PADDLE_TRAINER_ID": "1", "PADDLE_TRAINERS_NUM": "4"},
         (0, 2, 0, 2, "torchrun")),
    ],
)
def test_resolve_launch_reads_each_launcher(no_launcher, env, expected):
    for name, value in env.items():
        no_launcher.setenv(name, value)
    launch = io.resolve_launch()
    assert (launch["rank"], launch["world_size"], launch["local_rank"],
            launch["local_world_size"], launch["source"]) == expected
    sampler = io.DistributedBatchSampler(range(12), batch_size=1)
    assert (sampler.nranks, sampler.local_rank) == expected[1::-1]
    # Explicit arguments win.
    assert io.resolve_launch(8, 5)["source"] == "explicit"
    assert io.DistributedBatchSampler(range(12), 1, num_replicas=6, rank=5).local_rank == 5


@pytest.mark.parametrize(
    "env, message",
    [
        ({"RANK": "abc", "WORLD_SIZE": "2"}, "RANK=abc is not an integer"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, r"RANK=2 must be in \[0, WORLD_SIZE\)"),
        ({"RANK": "0"}, "RANK is set but WORLD_SIZE is not"),
        ({"PADDLE_TRAINER_ID": "0", "PADDLE_TRAINERS_NUM": "0"}, "PADDLE_TRAINERS_NUM=0"),
        ({"OMPI_COMM_WORLD_RANK": "x1", "OMPI_COMM_WORLD_SIZE": "2"}, "OMPI_COMM_WORLD_RANK=x1"),
    ],
)
def test_a_malformed_launcher_environment_names_the_variable(no_launcher, env, message):
    for name, value in env.items():
        no_launcher.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        io.DistributedBatchSampler(range(8), batch_size=1)


def test_torch_partition_gives_torchs_distributed_sampler_indices():
    import torch.utils.data

    for n in (1, 5, 10, 13, 64):
        for replicas in (1, 2, 3, 4, 8):
            for rank in range(replicas):
                expected = list(torch.utils.data.DistributedSampler(
                    range(n), num_replicas=replicas, rank=rank, shuffle=False))
                sampler = io.DistributedBatchSampler(
                    range(n), batch_size=3, num_replicas=replicas, rank=rank, partition="torch")
                batches = list(sampler)
                assert [i for b in batches for i in b] == expected, (n, replicas, rank)
                assert [len(b) for b in batches[:-1]] == [3] * (len(batches) - 1)
    with pytest.raises(ValueError, match="partition must be 'paddle' or 'torch', got 'tf'"):
        io.DistributedBatchSampler(range(4), 1, num_replicas=1, rank=0, partition="tf")


@pytest.mark.parametrize("partition", ["paddle", "torch"])
def test_pad_false_sees_every_sample_exactly_once(partition):
    for n in (0, 1, 7, 10, 33, 100):
        for replicas in (1, 2, 3, 4, 8):
            for batch_size in (1, 3, 8, 64):
                for shuffle in (False, True):
                    seen, steps = [], []
                    for rank in range(replicas):
                        sampler = io.DistributedBatchSampler(
                            range(n), batch_size, num_replicas=replicas, rank=rank,
                            shuffle=shuffle, partition=partition, pad=False)
                        batches = list(sampler)
                        assert len(batches) == len(sampler)
                        seen += [i for b in batches for i in b]
                        steps.append(len(batches))
                    case = (n, replicas, batch_size, shuffle)
                    assert len(seen) == n and sorted(seen) == list(range(n)), case
                    assert max(steps) - min(steps) <= 1, case


@pytest.mark.parametrize("partition", ["paddle", "torch"])
def test_a_checkpoint_at_four_ranks_resumes_at_three_through_the_loader(partition):
    # Four ranks take 2 batches each of epoch 1, checkpoint, and a job of three
    # ranks finishes the epoch: every sample exactly once over both jobs.
    dataset = IndexDataset(50)
    seen, positions = [], []
    for rank in range(4):
        sampler = io.DistributedBatchSampler(dataset, 3, num_replicas=4, rank=rank,
                                             shuffle=True, seed=5, partition=partition, pad=False)
        sampler.set_epoch(1)
        loader = feedline.DataLoader(dataset, batch_sampler=sampler, num_workers=2)
        for step, (_, labels) in enumerate(loader):
            seen += labels.tolist()
            if step == 1:
                positions.append(sampler.global_position(loader.state_dict()))
                break
    assert all(p == positions[0] for p in positions), "every rank has the same position"
    assert positions[0]["position"] == 2 * 3 * 4 and positions[0]["epoch"] == 1
    for rank in range(3):
        sampler = io.DistributedBatchSampler(dataset, 3, num_replicas=3, rank=rank, shuffle=True,
                                             seed=5, partition=partition, pad=False,
                                             resume=positions[0])
        loader = feedline.DataLoader(dataset, batch_sampler=sampler)
        seen += sum(labels_of(loader), [])
    assert sorted(seen) == list(range(50))
    with pytest.raises(ValueError, match="seed differs"):
        io.DistributedBatchSampler(dataset, 3, num_replicas=3, rank=0, shuffle=True, seed=6,
                                   resume=positions[0])
    with pytest.raises(ValueError, match="resume_position must be in"):
        io.DistributedBatchSampler(dataset, 3, num_replicas=3, rank=0,
                                   resume={"epoch": 0, "position": 51})


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


# A Python batch sampler runs Python code, and any Python code may run a
# garbage collection that frees batches of an earlier epoch kept in a
# reference cycle; a batch's release takes the loader's lock. The loader
# plans an epoch without holding that lock: planning under it deadlocked
# (the next epoch never started). In a child process, so that a deadlock
# fails the test instead of hanging the suite. An iterable dataset's
# iterator, opened and dropped by the training process, runs Python code too.
COLLECTING_BATCH_SAMPLER = textwrap.dedent("""
    import gc
    import numpy as np
    import feedline

    class Items(feedline.io.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, index):
            return np.full((64,), index, np.float32), index

    class CollectingBatches:
        def __iter__(self):
            gc.collect()
            return iter([[0, 1], [2, 3], [4]])

        def __len__(self):
            return 3

    def three_epochs_in_cycles(loader):
        # Every batch kept in a reference cycle, freed by the next
        # collection: the next epoch's plan (or stream) runs it.
        for epoch in range(3):
            labels = []
            for images, label in loader:
                cycle = [images, label]
                cycle.append(cycle)
                labels.append(label.tolist())
            del cycle
            assert labels == [[0, 1], [2, 3], [4]], labels

    gc.disable()  # the cycles wait for the batch sampler's collection
    for workers in (0, 2):
        three_epochs_in_cycles(feedline.DataLoader(Items(), batch_sampler=CollectingBatches(),
                                                   num_workers=workers))
        print("workers", workers, "ok", flush=True)

    # The same for a stream read by the training process (num_workers=0):
    # iter(dataset) runs Python code.
    class CollectingStream(feedline.io.IterableDataset):
        def __iter__(self):
            gc.collect()
            return ((np.full((64,), index, np.float32), index) for index in range(5))

    three_epochs_in_cycles(feedline.DataLoader(CollectingStream(), batch_size=2))
    print("stream ok", flush=True)
""")


def test_a_batch_freed_while_a_python_batch_sampler_plans_does_not_deadlock():
    result = subprocess.run([sys.executable, "-c", COLLECTING_BATCH_SAMPLER],
                            capture_output=True, text=True, timeout=100)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "workers 0 ok" in output and "workers 2 ok" in output, output
    assert "stream ok" in output, output


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


def _distributed_loader(dataset, replicas, rank, **kwargs):
    sampler = io.DistributedBatchSampler(dataset, 3, num_replicas=replicas, rank=rank,
                                         shuffle=True, seed=5, pad=False, **kwargs)
    sampler.set_epoch(1)
    return feedline.DataLoader(dataset, batch_sampler=sampler, num_workers=1, seed=3)


def _take(loader, steps, seen):
    """Takes `steps` batches (all if None), then returns the loader's state."""
    for step, (_, labels) in enumerate(loader):
        seen += labels.tolist()
        if steps is not None and step + 1 == steps:
            break
    return loader.state_dict()


def test_load_state_dict_resumes_a_checkpoint_of_another_world_size():
    # 4 ranks take 2 batches, checkpoint; 3 ranks load those states, take one
    # more batch, checkpoint; the same 3 ranks restart exactly, and 2 ranks
    # finish the epoch from the 3-rank checkpoint. Every sample once per path.
    dataset = IndexDataset(61)
    seen = []
    states4 = [_take(_distributed_loader(dataset, 4, r), 2, seen) for r in range(4)]
    assert states4[0]["global_position"]["position"] == 2 * 3 * 4
    states3, seen3 = [], []
    for r in range(3):
        loader = _distributed_loader(dataset, 3, r)
        loader.load_state_dict(states4[r])
        states3.append(_take(loader, 1, seen3))
    assert {s["global_position"]["position"] for s in states3} == {24 + 3 * 3}
    # The same 3 ranks restart from their own states: the exact path.
    rest3 = []
    for r in range(3):
        loader = _distributed_loader(dataset, 3, r)
        loader.load_state_dict(states3[r])
        _take(loader, None, rest3)
    assert sorted(seen + seen3 + rest3) == list(range(61))
    # Two ranks finish the epoch from the 3-rank checkpoint.
    rest2 = []
    for r in range(2):
        loader = _distributed_loader(dataset, 2, r)
        loader.load_state_dict(states3[r])
        _take(loader, None, rest2)
    assert sorted(seen + seen3 + rest2) == list(range(61))


def test_without_a_global_position_another_world_size_is_refused():
    dataset = IndexDataset(20)
    state = _take(_distributed_loader(dataset, 4, 0), 1, [])
    del state["global_position"]
    with pytest.raises(ValueError, match="num_replicas"):
        _distributed_loader(dataset, 2, 0).load_state_dict(state)


@pytest.mark.parametrize("partition", ["paddle", "torch"])
def test_valid_masks_count_every_sample_once_with_equal_steps(partition):
    dataset = IndexDataset(23)
    counted, steps = [], set()
    for rank in range(4):
        sampler = io.DistributedBatchSampler(dataset, 2, num_replicas=4, rank=rank, shuffle=True,
                                             partition=partition)
        sampler.set_epoch(3)
        loader = feedline.DataLoader(dataset, batch_sampler=sampler)
        masks = sampler.valid_masks()
        batches = labels_of(loader)
        steps.add(len(batches))
        assert [len(m) for m in masks] == [len(b) for b in batches]
        counted += [i for b, m in zip(batches, masks) for i, ok in zip(b, m) if ok]
    assert len(steps) == 1  # pad=True: equal steps
    assert sorted(counted) == list(range(23))  # and the mask makes the count exact


class Indexed:
    def __len__(self):
        return 50

    def __getitem__(self, i):
        return np.int64(i)


def test_grouped_batches_hold_one_group_each_through_the_loader():
    # Groups by i % 3 (aspect-ratio groups in detection); 50 samples, batch 4:
    # 12 batches an epoch, each of one group, the same for any worker count.
    groups = [i % 3 for i in range(50)]
    runs = []
    for workers in (0, 2):
        batches = io.GroupedBatchSampler(io.RandomSampler(Indexed(), seed=5), groups, 4)
        assert len(batches) == 12
        loader = feedline.DataLoader(Indexed(), batch_sampler=batches, num_workers=workers)
        epoch = [np.asarray(b).tolist() for b in loader]
        assert len(epoch) == 12
        for batch in epoch:
            assert len(batch) == 4 and len({i % 3 for i in batch}) == 1, batch
        runs.append(epoch)
    assert runs[0] == runs[1]


def test_aspect_ratio_groups_follow_the_references_bins():
    # k = 1: bins 1/2, 1, 2 (width / height).
    heights, widths = [4, 2, 4, 4, 2, 2, 1], [1, 1, 3, 4, 3, 4, 3]
    assert io.aspect_ratio_groups((heights, widths), k=1) == [0, 1, 1, 2, 2, 3, 3]
    assert io.aspect_ratio_groups((heights, widths)) == [0, 0, 0, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="height"):
        io.aspect_ratio_groups(([0], [3]), k=1)
