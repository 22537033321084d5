"""A dataset that defines only __getitems__ (its __getitem__ is torch's
Dataset base's, which raises NotImplementedError) loads as torch's
DataLoader loads it, which fetches a batch with dataset.__getitems__(indices)
when the dataset has one: feedline loads each row as __getitems__([i])[0]."""

import os
import signal

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import feedline
import feedline.torch


class OnlyGetitems(tud.Dataset):
    """Row i: (image uint8 [2, 4, 4] filled with i, boxes float32 [1 + i % 3, 4])."""

    def __init__(self, n=23, kill=(), answer=None):
        self.n = n
        self.kill = set(kill)
        self.answer = answer  # replaces what __getitems__ returns, to test a bad answer
        self.parent = os.getpid()
        self.calls = []  # the index lists asked for in this process

    def __len__(self):
        return self.n

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        if self.answer is not None:
            return self.answer
        out = []
        for i in indices:
            if i in self.kill and os.getpid() != self.parent:
                os.kill(os.getpid(), signal.SIGKILL)
            out.append((np.full((2, 4, 4), i, dtype=np.uint8),
                        np.arange((1 + i % 3) * 4, dtype=np.float32).reshape(-1, 4) + i))
        return out


def list_collate(samples):
    return torch.stack([torch.as_tensor(image) for image, _ in samples]), \
        [torch.as_tensor(boxes) for _, boxes in samples]


def content(batches):
    return [(images.tolist(), [b.tolist() for b in boxes]) for images, boxes in batches]


def images_only(batches):
    return [batch[0].tolist() for batch in batches]


def torchs(dataset, **kwargs):
    return list(tud.DataLoader(dataset, **kwargs))


def test_the_dataset_cannot_be_indexed_so_torch_uses_getitems():
    with pytest.raises(NotImplementedError):
        OnlyGetitems()[0]
    assert len(torchs(OnlyGetitems(), batch_size=4, collate_fn=list_collate)) == 6


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "thread"), (2, "process")])
def test_batches_with_a_collate_fn_equal_torchs(workers, mode):
    kwargs = dict(batch_size=4, collate_fn=list_collate)
    theirs = torchs(OnlyGetitems(), **kwargs)
    ours = list(feedline.torch.DataLoader(OnlyGetitems(), num_workers=workers,
                                          worker_mode=mode, timeout=60, **kwargs))
    assert content(ours) == content(theirs)


@pytest.mark.parametrize("workers, mode", [(0, "thread"), (2, "thread"), (2, "process")])
def test_default_collate_of_equal_shapes_equals_torchs(workers, mode):
    class Images(OnlyGetitems):
        def __getitems__(self, indices):
            return [image for image, _ in super().__getitems__(indices)]

    theirs = torchs(Images(), batch_size=5)
    ours = list(feedline.torch.DataLoader(Images(), batch_size=5, num_workers=workers,
                                          worker_mode=mode, timeout=60))
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]


def test_feedline_dataloader_loads_it_too():
    ours = list(feedline.DataLoader(OnlyGetitems(), batch_size=4, collate_fn=list_collate))
    assert content(ours) == content(torchs(OnlyGetitems(), batch_size=4,
                                           collate_fn=list_collate))


def test_each_row_is_asked_for_alone_in_the_training_process():
    dataset = OnlyGetitems(n=6)
    list(feedline.torch.DataLoader(dataset, batch_size=3, collate_fn=list_collate))
    # The first row's __getitem__ raised NotImplementedError; from then on
    # every row is one __getitems__ call of its own.
    assert dataset.calls == [[i] for i in range(6)]


def test_rows_of_a_killed_worker_load_again_through_getitems_in_the_training_process():
    # Row 9 kills its process each time: the training process collates that
    # batch's other rows, loading them again with __getitems__.
    dataset = OnlyGetitems(kill={9})
    ours = list(feedline.torch.DataLoader(dataset, batch_size=4, num_workers=2,
                                          collate_fn=list_collate, error_policy="skip",
                                          timeout=60))
    rows = [int(images[k, 0, 0, 0]) for images, _ in ours for k in range(len(images))]
    assert rows == [i for i in range(23) if i != 9]
    assert sorted(i for call in dataset.calls for i in call) == [8, 10, 11]


@pytest.mark.parametrize("answer, message", [
    ([], r"OnlyGetitems.__getitems__\(\[0\]\) returned 0 samples, not 1"),
    (5, r"OnlyGetitems.__getitems__\(\[0\]\) returned int, not a list of samples"),
])
@pytest.mark.parametrize("workers", [0, 2])
def test_a_wrong_answer_names_the_dataset_and_the_row(answer, message, workers):
    loader = feedline.torch.DataLoader(OnlyGetitems(answer=answer), batch_size=4,
                                       num_workers=workers, timeout=60)
    with pytest.raises(Exception, match=message):
        next(iter(loader))


def test_a_dataset_with_neither_method_still_says_so():
    class Neither(tud.Dataset):
        def __len__(self):
            return 3

    with pytest.raises(NotImplementedError):
        next(iter(feedline.torch.DataLoader(Neither(), batch_size=2)))
