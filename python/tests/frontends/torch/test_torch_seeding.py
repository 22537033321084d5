"""With seed_per_sample=True (feedline's rule; feedline.torch's default is
torch's per-worker seeding), a Python dataset whose __getitem__ draws from
torch's default generator (torchvision's random transforms do) gets draws
of its own per sample: the same for any number of worker processes and from
run to run under torch.manual_seed, and never the same in two workers
(forked workers inherit one generator state). The training loop's own torch
draws are untouched. torch's own rule is tested by torch's suite
(tests/peers/run_torch_suite.py) and below."""

import pytest
import torch

import feedline
import feedline.torch
from feedline import io


class Crops(io.Dataset):
    """Sample i: four torch.randint draws, as RandomResizedCrop.get_params makes."""

    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.randint(0, 1 << 30, (4,)), index


def draws(loader):
    out = {}
    for values, indices in loader:
        for v, i in zip(values.tolist(), indices.tolist()):
            out[int(i)] = tuple(v)
    return out


def torch_loader(workers, mode="process"):
    torch.manual_seed(7)
    return feedline.torch.DataLoader(Crops(), batch_size=8, num_workers=workers,
                                     worker_mode=mode if workers else "auto",
                                     seed_per_sample=True)


def test_every_sample_draws_its_own_values_in_worker_processes():
    got = draws(torch_loader(2))
    assert sorted(got) == list(range(64))
    assert len(set(got.values())) == 64  # two forked workers repeated each other before


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_the_draws_are_the_same_for_any_number_of_workers(workers):
    assert draws(torch_loader(workers)) == draws(torch_loader(2))


def test_torch_manual_seed_repeats_a_run_and_another_seed_changes_it():
    first, again = draws(torch_loader(2)), draws(torch_loader(2))
    assert first == again
    torch.manual_seed(8)
    other = draws(feedline.torch.DataLoader(Crops(), batch_size=8, num_workers=2,
                                            seed_per_sample=True))
    assert other != first


class SeededCrops(Crops):
    """Also what torch.utils.data.get_worker_info() says: the worker's id and seed."""

    def __getitem__(self, index):
        info = torch.utils.data.get_worker_info()
        return torch.randint(0, 1 << 30, (4,)), index, info.id, info.seed


def test_by_default_workers_are_seeded_as_torch_seeds_them():
    # torch: worker w's seed is base_seed + w, base_seed drawn per iteration
    # from the generator; worker w loads batches w, w + n, ... whole, and its
    # draws continue from sample to sample.
    loader = feedline.torch.DataLoader(SeededCrops(), batch_size=8, num_workers=2,
                                       generator=torch.Generator().manual_seed(5))
    rows = {}
    for values, indices, workers, seeds in loader:
        for v, i, w, s in zip(values.tolist(), indices.tolist(), workers.tolist(), seeds.tolist()):
            rows[i] = (tuple(v), w, s)
    assert sorted(rows) == list(range(64))
    seeds = {w: s for _, w, s in rows.values()}
    assert sorted(seeds) == [0, 1] and seeds[1] == seeds[0] + 1
    for worker in (0, 1):
        expected = torch.Generator().manual_seed(seeds[worker])
        for batch in range(worker, 8, 2):
            for index in range(batch * 8, batch * 8 + 8):
                assert rows[index][1] == worker
                want = tuple(torch.randint(0, 1 << 30, (4,), generator=expected).tolist())
                assert rows[index][0] == want, (worker, index)


def test_the_loops_own_torch_draws_are_untouched_with_no_workers():
    torch.manual_seed(3)
    expected = [torch.randint(0, 1 << 30, (1,)).item() for _ in range(8)]
    torch.manual_seed(3)
    seen = []
    loader = feedline.DataLoader(Crops(), batch_size=8, num_workers=0, seed=1)
    for _ in loader:
        seen.append(torch.randint(0, 1 << 30, (1,)).item())
    assert seen == expected
