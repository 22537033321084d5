"""Reports of the training loop from Python: stats()["loop"], report_every
with a callable or logging. Counts and wording are exact; timing assertions
only decide a side far from the 10% threshold."""

import logging
import time

import pytest

import feedline

from conftest import IndexDataset


def test_stats_reports_the_loop_on_demand():
    # Threads: a worker process would take longer to start than these steps.
    loader = feedline.DataLoader(IndexDataset(40), batch_size=4, num_workers=1,
                                 worker_mode="thread")
    loop = loader.stats()["loop"]
    assert loop["bound"] == "unknown" and loop["steps"] == 0
    for _ in loader:
        time.sleep(0.02)  # a 20 ms step over an instant loader
    stats = loader.stats()
    assert stats["steps"] == 10 and stats["delivered_samples"] == 40
    assert stats["step_s"] >= 10 * 0.019
    loop = stats["loop"]
    assert loop["steps"] == 10 and loop["samples"] == 40
    assert loop["bound"] == "step-bound", loop["text"]
    assert loop["verdict"].startswith("step-bound: the loop waited ")
    assert loop["step_s"] >= 0.019
    loader.close()


def test_report_every_calls_back_every_n_steps_and_at_each_epoch_end():
    reports = []
    loader = feedline.DataLoader(IndexDataset(40), batch_size=4, report_every=3,
                                 report=reports.append)
    for _ in range(2):
        for _ in loader:
            pass
    # 10 batches per epoch: after steps 3, 6, 9, then the epoch.
    assert [(r["epoch"], r["batch"], r["end_of_epoch"]) for r in reports] == [
        (0, 3, False), (0, 6, False), (0, 9, False), (0, 10, True),
        (1, 3, False), (1, 6, False), (1, 9, False), (1, 10, True),
    ]
    assert all(r["steps"] == 3 for r in reports if not r["end_of_epoch"])
    epoch = reports[3]
    assert epoch["steps"] == 10 and epoch["batches"] == 10 and epoch["samples"] == 40
    assert epoch["workers"] == 0 and epoch["worker_busy"] is None
    assert epoch["text"].startswith("epoch 0: batch 10/10 (end), ")
    assert epoch["text"].endswith(epoch["verdict"])


def test_a_slow_loader_is_called_loader_bound():
    class Slow(IndexDataset):
        def __getitem__(self, index):
            time.sleep(0.01)
            return super().__getitem__(index)

    reports = []
    loader = feedline.DataLoader(Slow(12), batch_size=4, report_every="epoch",
                                 report=reports.append)
    for _ in loader:
        pass
    assert len(reports) == 1
    assert reports[0]["bound"] == "loader-bound", reports[0]["text"]
    assert "samples load in the training thread (num_workers = 0)" in reports[0]["verdict"]


def test_reports_go_to_the_feedline_logger_by_default(caplog):
    loader = feedline.DataLoader(IndexDataset(8), batch_size=4, report_every="epoch")
    with caplog.at_level(logging.INFO, logger="feedline"):
        for _ in loader:
            pass
    lines = [r.getMessage() for r in caplog.records if r.name == "feedline"]
    assert len(lines) == 1 and lines[0].startswith("epoch 0: batch 2/2 (end), ")


def test_an_exception_in_the_callback_leaves_next_and_loses_no_batch():
    def stop(report):
        raise KeyError("stop here")

    loader = feedline.DataLoader(IndexDataset(12), batch_size=2, report_every=2, report=stop)
    it = iter(loader)
    labels = [next(it)[1].tolist(), next(it)[1].tolist()]
    with pytest.raises(KeyError, match="stop here"):
        next(it)  # the report for steps 1-2 is due before batch 2 is taken
    labels.append(next(it)[1].tolist())
    assert labels == [[0, 1], [2, 3], [4, 5]]


def test_the_callback_cannot_iterate_its_own_loader():
    holder = {}

    def misuse(report):
        next(holder["it"])

    loader = feedline.DataLoader(IndexDataset(8), batch_size=2, report_every=1, report=misuse)
    holder["it"] = iter(loader)
    next(holder["it"])
    with pytest.raises(RuntimeError):
        next(holder["it"])


def test_report_arguments_are_checked():
    with pytest.raises(ValueError, match=r'report_every must be >= 1 \(or "epoch"\), got 0'):
        feedline.DataLoader(IndexDataset(4), report_every=0)
    with pytest.raises(ValueError, match='report_every must be an int >= 1 or "epoch"'):
        feedline.DataLoader(IndexDataset(4), report_every="step")
    with pytest.raises(TypeError, match="report must be a callable, a logging.Logger or None"):
        feedline.DataLoader(IndexDataset(4), report_every=5, report="stderr")
    with pytest.raises(ValueError, match="report is given but report_every is None"):
        feedline.DataLoader(IndexDataset(4), report=print)
