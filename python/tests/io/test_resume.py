"""Checkpoint and resume through the API users call: state_dict() taken while
iterating with `for`, load_state_dict() on a new loader, then `for` again."""

import io as stdio
import json

import numpy as np
import pytest
import torch

import feedline
from feedline import io

from conftest import IndexDataset, labels_of


def make_loader(num_workers=2, n=30, seed=5, **kwargs):
    kwargs.setdefault("shuffle", True)
    return feedline.DataLoader(IndexDataset(n), batch_size=4, num_workers=num_workers,
                               seed=seed, **kwargs)


def uninterrupted(epochs=3, **kwargs):
    loader = make_loader(**kwargs)
    return [labels_of(loader) for _ in range(epochs)]


def state_inside_for(loader, stop_after):
    """state_dict() taken in a for loop after `stop_after` batches, then break."""
    for k, _ in enumerate(loader, start=1):
        if k == stop_after:
            return loader.state_dict()
    raise AssertionError("the epoch ended early")


@pytest.mark.parametrize(
    "resumed_workers, resumed_mode", [(0, "thread"), (1, "process"), (3, "thread"), (3, "process")]
)
def test_for_loop_continues_the_epoch_then_runs_the_next(resumed_workers, resumed_mode):
    expected = uninterrupted(worker_mode="process")
    first = make_loader(worker_mode="thread")
    labels_of(first)  # epoch 0
    state = state_inside_for(first, 3)  # epoch 1, batch 3
    assert (state["epoch"], state["next_batch"]) == (1, 3)

    resumed = make_loader(num_workers=resumed_workers, worker_mode=resumed_mode)
    resumed.load_state_dict(state)
    assert labels_of(resumed) == expected[1][3:]
    assert labels_of(resumed) == expected[2]


def test_iter_and_next_continue_as_for_does():
    expected = uninterrupted()
    first = make_loader()
    state = state_inside_for(first, 2)
    resumed = make_loader()
    resumed.load_state_dict(state)
    it = iter(resumed)
    assert next(it)[1].tolist() == expected[0][2]
    assert [b[1].tolist() for b in it] == expected[0][3:]


def test_state_after_the_last_batch_gives_an_empty_rest_then_the_next_epoch():
    expected = uninterrupted()
    first = make_loader()
    for _ in first:
        state = first.state_dict()  # the last is taken after the epoch's last batch
    assert (state["epoch"], state["next_batch"]) == (0, len(first))
    resumed = make_loader()
    resumed.load_state_dict(state)
    assert labels_of(resumed) == []
    assert labels_of(resumed) == expected[1]


def test_state_between_epochs_and_before_any_iteration():
    expected = uninterrupted()
    fresh = make_loader()
    unstarted = fresh.state_dict()
    labels_of(fresh)
    between = fresh.state_dict()
    assert (unstarted["epoch"], unstarted["next_batch"]) == (0, 0)
    assert (between["epoch"], between["next_batch"]) == (1, 0)

    a = make_loader()
    a.load_state_dict(unstarted)
    assert labels_of(a) == expected[0]
    b = make_loader()
    b.load_state_dict(between)
    assert labels_of(b) == expected[1]


def test_state_is_plain_and_survives_json_and_torch_save():
    expected = uninterrupted()
    state = state_inside_for(make_loader(), 5)
    assert all(isinstance(v, (int, str)) for v in state.values())
    via_json = json.loads(json.dumps(state))
    buffer = stdio.BytesIO()
    torch.save({"loader": state}, buffer)
    buffer.seek(0)
    via_torch = torch.load(buffer)["loader"]
    for restored in (via_json, via_torch):
        loader = make_loader()
        loader.load_state_dict(restored)
        assert labels_of(loader) == expected[0][5:]


def test_set_epoch_of_the_restored_epoch_keeps_the_position():
    expected = uninterrupted()
    first = make_loader()
    first.set_epoch(2)
    state = state_inside_for(first, 1)
    resumed = make_loader()
    resumed.load_state_dict(state)
    resumed.set_epoch(2)  # a loop that sets the epoch before each pass
    assert labels_of(resumed) == expected[2][1:]


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(n=31), "dataset_size: the state was taken with 30, this loader has 31"),
        (dict(seed=6), "seed: the state was taken with 5, this loader has 6"),
        (dict(shuffle=False), "sampler: the state was taken with 'random', this loader has "
                              "'sequential'"),
        (dict(drop_last=True), "drop_last: the state was taken with 0, this loader has 1"),
    ],
)
def test_a_state_of_another_loader_is_refused_naming_the_difference(change, message):
    state = state_inside_for(make_loader(), 2)
    other = make_loader(**change)
    with pytest.raises(ValueError, match=message):
        other.load_state_dict(state)
    assert len(labels_of(other)) == len(other)  # still usable


def test_a_python_sampler_with_another_order_is_refused_by_the_digest():
    class Reversed(io.Sampler):
        def __init__(self, n, flip):
            self.n, self.flip = n, flip

        def __iter__(self):
            return iter(range(self.n - 1, -1, -1) if self.flip else range(self.n))

        def __len__(self):
            return self.n

    def loader(flip):
        return feedline.DataLoader(IndexDataset(12), batch_size=4, sampler=Reversed(12, flip),
                                   seed=1)

    state = state_inside_for(loader(True), 1)
    assert state["sampler"] == "custom"
    with pytest.raises(ValueError, match="plan_hash"):
        loader(False).load_state_dict(state)
    same = loader(True)
    same.load_state_dict(state)
    assert labels_of(same) == [[7, 6, 5, 4], [3, 2, 1, 0]]


def test_malformed_states_are_refused_clearly():
    loader = make_loader()
    with pytest.raises(TypeError, match="takes a dict"):
        loader.load_state_dict([1, 2])
    with pytest.raises(ValueError, match="needs 'epoch' and 'next_batch'"):
        loader.load_state_dict({"epoch": 1})
    with pytest.raises(ValueError, match="unknown key 'step'"):
        loader.load_state_dict({"epoch": 1, "next_batch": 0, "step": 3})
    with pytest.raises(TypeError, match="'next_batch' must be an int"):
        loader.load_state_dict({"epoch": 1, "next_batch": "2"})
    with pytest.raises(ValueError, match="past the 8 batches"):
        loader.load_state_dict({"epoch": 0, "next_batch": 9})


def test_a_hand_written_position_is_trusted():
    expected = uninterrupted()
    loader = make_loader()
    loader.load_state_dict({"epoch": 1, "next_batch": 6})
    assert labels_of(loader) == expected[1][6:]


def test_the_training_example_resumes_with_the_same_loss_curve(tmp_path):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[3] / "examples" / "resume_torch.py"
    spec = importlib.util.spec_from_file_location("resume_torch", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    full = example.train(epochs=2, checkpoint=None, stop_at=None)
    checkpoint = tmp_path / "ckpt.pt"
    head = example.train(epochs=2, checkpoint=checkpoint, stop_at=(1, 3))
    tail = example.train(epochs=2, checkpoint=checkpoint, stop_at=None)
    assert head.batches + tail.batches == full.batches
    np.testing.assert_array_equal(np.array(head.losses + tail.losses), np.array(full.losses))


def test_an_iterator_from_before_the_load_does_not_take_the_restored_batches():
    expected = uninterrupted()
    loader = make_loader()
    old = iter(loader)
    next(old)
    loader.load_state_dict(state_inside_for(make_loader(), 2))
    with pytest.raises(RuntimeError, match="replaced this one"):
        next(old)
    assert labels_of(loader) == expected[0][2:]
