"""A user's collate_fn runs in the worker process that loaded the batch when
workers are processes (feedline.torch, feedline.paddle), as torch runs it,
and the batches are those the training process's own collate gives."""

import os
import signal
import threading

import numpy as np
import pytest
import torch.utils.data as tud

import feedline.torch


class Detection(tud.Dataset):
    """Sample i: (image uint8 [3, 8, 8] filled with i, boxes float32 [1 + i % 3, 4])."""

    def __init__(self, n=37, fail=(), kill=()):
        self.n = n
        self.fail = set(fail)
        self.kill = set(kill)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.fail:
            raise ValueError(f"sample {i} is broken")
        if i in self.kill and tud.get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        image = np.full((3, 8, 8), i % 256, dtype=np.uint8)
        boxes = np.arange((1 + i % 3) * 4, dtype=np.float32).reshape(-1, 4) + i
        return image, boxes


def detection_collate(samples):
    """Images stacked, boxes kept as a list, and where the collate ran."""
    images = np.stack([image for image, _ in samples])
    boxes = [b for _, b in samples]
    info = tud.get_worker_info()
    return {"images": images, "boxes": boxes, "pid": os.getpid(),
            "worker": None if info is None else info.id}


def padding_collate(samples):
    longest = max(len(s) for s in samples)
    out = np.zeros((len(samples), longest), dtype=np.int64)
    for row, tokens in enumerate(samples):
        out[row, :len(tokens)] = tokens
    return out, os.getpid()


class Tokens(tud.Dataset):
    def __len__(self):
        return 29

    def __getitem__(self, i):
        return np.arange(1 + (i * 7) % 11, dtype=np.int64) + i


def content(batches):
    """The batches without where they were collated."""
    return [(b["images"].tolist(), [x.tolist() for x in b["boxes"]]) for b in batches]


def load(dataset, **kwargs):
    kwargs.setdefault("batch_size", 4)
    kwargs.setdefault("collate_fn", detection_collate)
    return list(feedline.torch.DataLoader(dataset, **kwargs))


def test_collate_runs_in_the_worker_processes_and_gives_the_same_batches():
    dataset = Detection()
    loader = feedline.torch.DataLoader(dataset, batch_size=4, num_workers=2,
                                       collate_fn=detection_collate, persistent_workers=True)
    batches = list(loader)
    pids = set(loader.worker_pids)
    assert {b["pid"] for b in batches} <= pids and os.getpid() not in pids
    # Batch k is worker k % 2's, as torch assigns them.
    assert [b["worker"] for b in batches] == [k % 2 for k in range(len(batches))]
    in_parent = load(dataset, num_workers=0)
    assert {b["pid"] for b in in_parent} == {os.getpid()}
    assert content(batches) == content(in_parent)
    assert content(batches) == content(tud.DataLoader(dataset, batch_size=4,
                                                      collate_fn=detection_collate))
    # A second epoch of the same workers, shuffled the same way as torch's
    # sampler draws it.
    assert content(list(loader)) == content(batches)


def test_padding_collate_in_the_workers():
    ours = list(feedline.torch.DataLoader(Tokens(), batch_size=5, num_workers=2,
                                          collate_fn=padding_collate))
    theirs = list(tud.DataLoader(Tokens(), batch_size=5, collate_fn=padding_collate))
    assert [b[0].tolist() for b in ours] == [b[0].tolist() for b in theirs]
    assert os.getpid() not in {b[1] for b in ours}


def test_shuffled_batches_match_any_worker_count():
    kwargs = dict(shuffle=True, seed=5, drop_last=True)
    two = load(Detection(), num_workers=2, **kwargs)
    assert content(two) == content(load(Detection(), num_workers=0, **kwargs))
    assert content(two) == content(load(Detection(), num_workers=3, **kwargs))


def test_thread_workers_collate_in_the_training_process():
    batches = load(Detection(), num_workers=2, worker_mode="thread")
    assert {b["pid"] for b in batches} == {os.getpid()}


@pytest.mark.parametrize("policy", ["skip", "replace"])
def test_a_failing_sample_inside_a_batch_collated_in_the_worker(policy):
    dataset = Detection(fail={5, 6})
    two = load(dataset, num_workers=2, error_policy=policy, seed=1)
    zero = load(dataset, num_workers=0, error_policy=policy, seed=1)
    assert content(two) == content(zero)
    assert os.getpid() not in {b["pid"] for b in two}
    if policy == "skip":
        assert len(two[1]["boxes"]) == 2  # rows 4 and 7 of batch 1
    else:
        assert [len(b["boxes"]) for b in two[:-1]] == [4] * (len(two) - 1)


def test_a_failing_sample_raises_as_it_does_in_the_training_process():
    with pytest.raises(ValueError, match="sample 5 is broken"):
        load(Detection(fail={5}), num_workers=2)


def failing_collate(samples):
    raise KeyError("no boxes here")


def test_a_failing_collate_raises_its_type_from_the_worker():
    for workers in (0, 2):
        with pytest.raises(KeyError, match="no boxes here"):
            load(Detection(), num_workers=workers, collate_fn=failing_collate)


def interrupting_collate(samples):
    raise KeyboardInterrupt


def test_keyboard_interrupt_in_a_worker_collate_is_raised_as_itself():
    with pytest.raises(KeyboardInterrupt):
        load(Detection(), num_workers=2, collate_fn=interrupting_collate)


def unpicklable_collate(samples):
    return lambda: samples


def test_a_batch_that_cannot_be_pickled_is_a_collate_error():
    with pytest.raises(Exception, match="collate_fn raised"):
        load(Detection(), num_workers=2, collate_fn=unpicklable_collate)


def test_a_worker_killed_by_a_sample_is_diagnosed_and_the_batches_go_on():
    dataset = Detection(kill={9})
    batches = load(dataset, num_workers=2, error_policy="skip")
    expected = load(Detection(fail={9}), num_workers=0, error_policy="skip")
    assert content(batches) == content(expected)


def test_resume_from_a_state_dict_gives_the_remaining_batches():
    kwargs = dict(batch_size=4, num_workers=2, collate_fn=detection_collate, shuffle=True,
                  seed=3)
    full = list(feedline.torch.DataLoader(Detection(), **kwargs))
    first = feedline.torch.DataLoader(Detection(), **kwargs)
    it = iter(first)
    for _ in range(3):
        next(it)
    state = first.state_dict()
    resumed = feedline.torch.DataLoader(Detection(), **kwargs)
    resumed.load_state_dict(state)
    assert content(list(resumed)) == content(full[3:])


def test_worker_init_fn_runs_before_the_collate_in_the_same_process():
    def init(worker_id):
        os.environ["COLLATE_TEST_WORKER"] = str(worker_id)

    def collate(samples):
        return os.environ.get("COLLATE_TEST_WORKER"), len(samples)

    batches = load(Detection(n=16), num_workers=2, collate_fn=collate, worker_init_fn=init)
    assert [b[0] for b in batches] == ["0", "1", "0", "1"]


def varied_collate(samples):
    """Arrays of every layout a collate may return, beside plain objects."""
    images = np.stack([image for image, _ in samples])
    return {"images": images,
            "strided": images[:, :, ::2, 1::3],               # not contiguous: in band
            "fortran": np.asfortranarray(images[:, 0]),
            "empty": np.zeros((0, 4), dtype=np.float32),
            "record": np.array([(len(samples), 0.5)], dtype=[("n", "i4"), ("w", "f8")]),
            "bytes": bytes(images[0, 0, 0]), "bytearray": bytearray(b"xyz"),
            "tensor": tud.default_collate([b for _, b in samples[:1]]),
            "pid": os.getpid()}


def test_a_batch_from_the_worker_holds_what_the_collate_returned_whatever_its_layout():
    """The worker's batch comes back with its large buffers out of band: each
    value, layout and dtype as the training process's own collate gives it,
    the arrays writable and alive after the loader is gone."""
    dataset = Detection(n=12)
    loader = feedline.torch.DataLoader(dataset, batch_size=4, num_workers=2,
                                       collate_fn=varied_collate)
    ours = list(loader)
    assert os.getpid() not in {b["pid"] for b in ours}
    del loader
    theirs = list(tud.DataLoader(dataset, batch_size=4, collate_fn=varied_collate))
    assert len(ours) == len(theirs) == 3
    for mine, reference in zip(ours, theirs):
        for key in ("images", "strided", "fortran", "empty", "record"):
            assert mine[key].dtype == reference[key].dtype, key
            assert mine[key].shape == reference[key].shape, key
            assert mine[key].tolist() == reference[key].tolist(), key
        assert mine["fortran"].flags.f_contiguous
        assert mine["bytes"] == reference["bytes"] and mine["bytearray"] == reference["bytearray"]
        assert mine["tensor"].equal(reference["tensor"])
        # The stacked images came out of band: a view of the reply's memory
        # (an array over it, which holds the reply), not a copy in the stream.
        owner = mine["images"]
        while isinstance(getattr(owner, "base", None), np.ndarray):
            owner = owner.base
        assert type(owner.base).__name__ == "PyCapsule"
    ours[0]["images"][0, 0, 0, 0] = 255  # writable, and its own
    assert ours[0]["images"][0, 0, 0, 0] == 255 and ours[1]["images"][0, 0, 0, 0] == 4


class WithLock(tud.Dataset):
    """Sample i: (an int64 [2] array, a lock): a lock cannot be pickled."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        return np.full(2, i, dtype=np.int64), threading.Lock()


def lock_collate(samples):
    return np.stack([a for a, _ in samples]), sum(isinstance(l, type(threading.Lock()))
                                                   for _, l in samples)


def test_samples_collated_in_the_worker_never_cross_to_the_training_process():
    # As with torch's workers, only the batch crosses: a sample that cannot
    # be pickled reaches collate_fn in its worker, which makes a batch that can.
    ours = load(WithLock(), num_workers=2, collate_fn=lock_collate)
    theirs = list(tud.DataLoader(WithLock(), batch_size=4, num_workers=2,
                                 collate_fn=lock_collate))
    assert [(a.tolist(), n) for a, n in ours] == [(a.tolist(), n) for a, n in theirs]
    assert [n for _, n in ours] == [4, 4, 2]


def test_rows_whose_worker_died_before_the_collate_load_again_in_the_training_process():
    # Row 9 kills its process each time: rows 8, 10 and 11 of that batch were
    # loaded by processes that are gone or other, so the training process
    # collates them, loading each again from the dataset, and the batch is
    # the one a training process's own loading gives.
    parent = os.getpid()
    loaded_here = []

    class Counted(Detection):
        def __getitem__(self, i):
            if os.getpid() == parent:
                loaded_here.append(i)
            return super().__getitem__(i)

    batches = load(Counted(kill={9}), num_workers=2, error_policy="skip")
    assert sorted(loaded_here) == [8, 10, 11]
    assert batches[2]["pid"] == parent
    assert content(batches) == content(load(Detection(fail={9}), num_workers=0,
                                            error_policy="skip"))


class LargeImages(tud.Dataset):
    """Sample i: a float32 image of 1 MiB filled with i."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        return np.full((4, 256, 256), i, dtype=np.float32)


def stack_collate(samples):
    return np.stack(samples)


def test_the_rooms_collated_batches_are_written_in_count_in_slot_bytes():
    # The rows cross as placeholders of a few bytes, so what the loader's
    # shared memory holds is the rooms the workers write each 4 MiB batch
    # in: stats()["slot_bytes"] must show them, or the memory the loader
    # uses is hidden from the user and from the tuner.
    loader = feedline.torch.DataLoader(LargeImages(), batch_size=4, num_workers=2,
                                       collate_fn=stack_collate, persistent_workers=True)
    held = []
    for batch in loader:
        assert batch.shape == (4, 4, 256, 256)
        held.append(batch)  # each batch keeps its room
    assert [int(b[0, 0, 0, 0]) for b in held] == list(range(0, 24, 4))
    batch_bytes = 4 * 4 * 256 * 256 * 4
    # The first batch goes through the workers' arenas (no room is sized
    # yet); each later one lies in a room a quarter over the largest batch.
    assert loader.stats()["slot_bytes"] >= 4 * batch_bytes
