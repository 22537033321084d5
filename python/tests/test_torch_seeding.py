"""A Python dataset whose __getitem__ draws from torch's default generator
(torchvision's random transforms do) gets draws of its own per sample: the
same for any number of worker processes and from run to run under
torch.manual_seed, and never the same in two workers (forked workers inherit
one generator state). The training loop's own torch draws are untouched."""

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
                                     worker_mode=mode if workers else "auto")


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
    other = draws(feedline.torch.DataLoader(Crops(), batch_size=8, num_workers=2))
    assert other != first


def test_the_loops_own_torch_draws_are_untouched_with_no_workers():
    torch.manual_seed(3)
    expected = [torch.randint(0, 1 << 30, (1,)).item() for _ in range(8)]
    torch.manual_seed(3)
    seen = []
    loader = feedline.DataLoader(Crops(), batch_size=8, num_workers=0, seed=1)
    for _ in loader:
        seen.append(torch.randint(0, 1 << 30, (1,)).item())
    assert seen == expected
