"""With a collate_fn, a Python dataset's samples reach it as the dataset
returned them, whatever their structure (ragged lists, optional keys,
strings, custom objects, torch tensors), for any worker count and worker
mode, as torch's DataLoader hands them over; and what collate_fn returns
comes back as it returned it."""

import os

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import feedline
import feedline.torch
from feedline import io

MODES = [(0, "thread"), (2, "thread"), (1, "process"), (2, "process")]


class Note:
    """A custom object in a sample."""

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, Note) and other.text == self.text


class Tokenized(tud.Dataset):
    """What a tokenizer gives: dicts of Python lists whose length varies, a
    key present in some samples only, a string and a custom object."""

    def __len__(self):
        return 23

    def __getitem__(self, i):
        sample = {"input_ids": list(range(i, i + 1 + (i * 5) % 9)),
                  "label": i % 3, "text": "sample %d" % i, "note": Note(str(i))}
        if i % 4 == 0:
            sample["extra"] = [i] * (i % 3)
        return sample


def pad(samples):
    """Pads input_ids to the longest of the batch, as a Hugging Face
    collator does; returns a dict of tensors and the lists it kept."""
    longest = max(len(s["input_ids"]) for s in samples)
    ids = torch.zeros((len(samples), longest), dtype=torch.int64)
    mask = torch.zeros((len(samples), longest), dtype=torch.int64)
    for row, s in enumerate(samples):
        ids[row, :len(s["input_ids"])] = torch.tensor(s["input_ids"])
        mask[row, :len(s["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in samples]),
            "texts": [s["text"] for s in samples], "notes": [s["note"] for s in samples],
            "extra": [s.get("extra") for s in samples]}


def same_batches(ours, theirs):
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert mine.keys() == reference.keys()
        for key, value in reference.items():
            if isinstance(value, torch.Tensor):
                assert mine[key].dtype == value.dtype and mine[key].equal(value), key
            else:
                assert mine[key] == value, key


@pytest.mark.parametrize("workers,mode", MODES)
def test_ragged_samples_reach_a_padding_collate_as_in_torch(workers, mode):
    dataset = Tokenized()
    theirs = list(tud.DataLoader(dataset, batch_size=4, collate_fn=pad))
    ours = list(feedline.torch.DataLoader(dataset, batch_size=4, collate_fn=pad,
                                          num_workers=workers, worker_mode=mode))
    same_batches(ours, theirs)


@pytest.mark.parametrize("workers,mode", MODES)
def test_feedline_loader_hands_ragged_samples_to_its_collate_fn(workers, mode):
    seen = []

    def collate(samples):
        seen.extend(s["note"] for s in samples)  # on threads: in this process
        return pad(samples)["input_ids"].numpy()

    dataset = Tokenized()
    ours = list(io.DataLoader(dataset, batch_size=5, collate_fn=collate, num_workers=workers,
                              worker_mode=mode))
    theirs = [pad([dataset[i] for i in range(k, min(k + 5, len(dataset)))])["input_ids"].numpy()
              for k in range(0, len(dataset), 5)]
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert mine.tolist() == reference.tolist()
    if mode == "thread":
        # Threads collate batches in any order.
        assert sorted(seen, key=lambda n: int(n.text)) == [Note(str(i)) for i in range(len(dataset))]


class Tensors(tud.Dataset):
    """torch tensors of several dtypes (bfloat16 and a non-contiguous view
    among them) and a tensor that requires grad."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        image = torch.arange(3 * 5 * 7, dtype=torch.float32).reshape(3, 5, 7) + i
        return {"image": image, "transposed": image.transpose(1, 2),
                "half": torch.full((i + 1,), i, dtype=torch.bfloat16),
                "mask": torch.arange(i + 2) % 2 == 0,
                "weights": torch.ones(2, requires_grad=True),
                "scalar": torch.tensor(i, dtype=torch.int16)}


def as_returned(samples):
    return samples


@pytest.mark.parametrize("workers,mode", MODES)
def test_tensor_samples_arrive_as_the_tensors_returned(workers, mode):
    dataset = Tensors()
    ours = list(feedline.torch.DataLoader(dataset, batch_size=3, collate_fn=as_returned,
                                          num_workers=workers, worker_mode=mode))
    theirs = list(tud.DataLoader(dataset, batch_size=3, collate_fn=as_returned))
    assert len(ours) == len(theirs) == 4
    for mine, reference in zip(ours, theirs):
        for a, b in zip(mine, reference):
            for key, value in b.items():
                got = a[key]
                assert type(got) is torch.Tensor and got.dtype == value.dtype, key
                assert got.shape == value.shape and got.equal(value), key
                assert got.requires_grad == value.requires_grad, key
    # Each sample is its own memory: writing to one changes no other, and
    # none changes when later batches load.
    ours[0][0]["image"][0, 0, 0] = -1
    assert ours[0][1]["image"][0, 0, 0] == 1 and ours[1][0]["image"][0, 0, 0] == 3


def test_feedline_loader_keeps_the_list_its_collate_fn_returns():
    def collate(samples):
        return [np.stack([s["image"].numpy() for s in samples]),
                np.array([int(s["scalar"]) for s in samples])]

    for workers in (0, 2):
        batches = list(io.DataLoader(Tensors(), batch_size=4, collate_fn=collate,
                                     num_workers=workers))
        assert all(type(b) is list and len(b) == 2 for b in batches)
        assert batches[0][0].shape == (4, 3, 5, 7) and batches[2][1].tolist() == [8, 9]


@pytest.mark.parametrize("workers,mode", MODES)
def test_feedline_loader_hands_on_a_batch_whose_structure_varies(workers, mode):
    # A detection-style collate_fn: lists as long as the batch (the last one
    # shorter), a key only some batches have, Python ints and strings. The
    # loader hands each result on as it was returned, as torch's does.
    def collate(samples):
        batch = {"ids": [s["input_ids"] for s in samples],
                 "labels": [s["label"] for s in samples], "count": len(samples)}
        if samples[0]["label"] == 0:  # batches 0 and 3
            batch["first_is_zero"] = "yes"
        return batch

    dataset = Tokenized()
    ours = list(io.DataLoader(dataset, batch_size=5, collate_fn=collate, num_workers=workers,
                              worker_mode=mode))
    theirs = list(tud.DataLoader(dataset, batch_size=5, collate_fn=collate))
    assert ours == theirs
    assert [b["count"] for b in ours] == [5, 5, 5, 5, 3]
    assert ["first_is_zero" in b for b in ours] == [True, False, False, True, False]
    assert type(ours[-1]["labels"]) is list and type(ours[-1]["count"]) is int


class Unpicklable(tud.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return {"value": i, "callback": (lambda: i) if i == 3 else None}


def test_a_sample_that_cannot_cross_to_the_training_process_is_a_sample_error():
    def values(samples):
        return np.array([s["value"] for s in samples])

    loader = io.DataLoader(Unpicklable(), batch_size=2, collate_fn=values, num_workers=1,
                           worker_mode="process")
    with pytest.raises(feedline.SampleError, match="pickling it raised"):
        list(loader)
    skipping = io.DataLoader(Unpicklable(), batch_size=2, num_workers=1, worker_mode="process",
                             collate_fn=values, error_policy="skip")
    assert [b.tolist() for b in skipping] == [[0, 1], [2], [4, 5]]


def test_samples_are_collated_in_the_worker_without_a_schema():
    """feedline.torch collates in the worker process: ragged samples too."""
    def collate(samples):
        return pad(samples), os.getpid()

    loader = feedline.torch.DataLoader(Tokenized(), batch_size=4, collate_fn=collate,
                                       num_workers=2, persistent_workers=True)
    batches = list(loader)
    assert {pid for _, pid in batches} <= set(loader.worker_pids)
    same_batches([b for b, _ in batches], list(tud.DataLoader(Tokenized(), batch_size=4,
                                                              collate_fn=pad)))
