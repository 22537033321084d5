"""The front-end package's structure (feedline/frontends/): every module
imports alone (no import cycle hides behind an import order), feedline.io
imports no front end, and io.DataLoader follows the one Frontend policy
object it is given."""

import os
import subprocess
import sys

import numpy as np
import pytest

import feedline
from feedline import io
from feedline.frontends.frontend import Frontend, FrontendPolicy

from time_bounds import bound_time

MODULES = [
    "feedline.torch",
    "feedline.paddle",
    "feedline.frontends",
    "feedline.frontends.frontend",
    "feedline.frontends._shaping",
    "feedline.frontends.samples",
    "feedline.frontends.iterator",
    "feedline.frontends.lowering",
    "feedline.frontends.torch",
    "feedline.frontends.torch.loader",
    "feedline.frontends.torch.batches",
    "feedline.frontends.torch.errors",
    "feedline.frontends.torch.seeding",
    "feedline.frontends.torch.lowering",
    "feedline.frontends.paddle",
    "feedline.frontends.paddle.loader",
    "feedline.frontends.paddle.batches",
    "feedline.frontends.paddle.errors",
    "feedline.frontends.paddle.seeding",
    "feedline.frontends.paddle.lowering",
    "feedline.frontends.paddle.static",
]


def _run(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    bound_time(150)  # past the child's timeout: a hung child fails its test
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_each_module_imports_alone():
    # One interpreter, each module imported with no other front-end module
    # loaded (what `import feedline` loads, which every import loads first,
    # stays).
    done = _run("import importlib, sys, traceback\n"
                "import feedline\n"
                "kept = {m for m in sys.modules if m.startswith('feedline.')}\n"
                f"for module in {MODULES!r}:\n"
                "    for m in [m for m in sys.modules if m.startswith('feedline.') and m not in kept]:\n"
                "        del sys.modules[m]\n"
                "    for m in ('torch', 'paddle'):\n"
                "        feedline.__dict__.pop(m, None)\n"
                "    feedline.__dict__.pop('frontends', None)\n"
                "    try:\n"
                "        importlib.import_module(module)\n"
                "    except Exception:\n"
                "        print(module, traceback.format_exc())\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_io_imports_no_front_end_and_no_framework():
    done = _run("import sys, feedline, feedline.io\n"
                "print(sorted(m for m in sys.modules if m.startswith('feedline.frontends')"
                " or m in ('torch', 'paddle')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_shared_modules_import_neither_front_end():
    done = _run("import sys\n"
                "import feedline.frontends.frontend, feedline.frontends.samples\n"
                "import feedline.frontends.iterator, feedline.frontends.lowering\n"
                "print(sorted(m for m in sys.modules if m.startswith('feedline.frontends.')))")
    assert done.returncode == 0, done.stderr
    assert "torch" not in done.stdout and "paddle" not in done.stdout


def test_the_public_paths_are_the_front_ends():
    import feedline.paddle
    import feedline.torch
    from feedline.frontends.paddle import loader as paddle_loader
    from feedline.frontends.torch import loader as torch_loader

    assert feedline.torch.DataLoader is torch_loader.DataLoader
    assert feedline.paddle.DataLoader is paddle_loader.DataLoader
    assert issubclass(feedline.torch.DataLoader, io.DataLoader)
    assert issubclass(feedline.paddle.DataLoader, io.DataLoader)


class Pairs(io.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, index):
        return np.full(2, index, np.int64), index


class Stream:
    """An object with __iter__ and __len__ only: feedline's rule takes it as
    a stream."""

    def __iter__(self):
        return iter([np.zeros(2)] * 3)

    def __len__(self):
        return 3


def _policy(**changes):
    fields = dict(name="test", delivers_torch_bfloat16=False, keeps_collate_result=False,
                  seeds_samples=True, assigns_batches_to_workers=False)
    fields.update(changes)
    return FrontendPolicy(**fields)


def test_no_frontend_is_feedlines_own_rules():
    loader = feedline.DataLoader(Pairs(), batch_size=3)
    assert loader._frontend is io.loader.FEEDLINE
    assert isinstance(io.loader.FEEDLINE, Frontend)
    assert isinstance(_policy(), Frontend)
    # feedline hands a collate_fn's result on as it was returned, as every
    # front end does: a Python int stays an int, a list a list.
    batch = next(iter(feedline.DataLoader(
        Pairs(), batch_size=3, collate_fn=lambda samples: {"n": len(samples), "all": list(samples)})))
    assert batch["n"] == 3 and type(batch["n"]) is int
    assert isinstance(batch["all"], list) and len(batch["all"]) == 3


def test_a_policy_that_keeps_the_collate_result_gets_it_as_returned():
    marker = object()
    loader = feedline.DataLoader(Pairs(), batch_size=3, frontend=_policy(keeps_collate_result=True),
                                 collate_fn=lambda samples: {"n": len(samples), "m": marker})
    batches = list(loader)
    assert [b["n"] for b in batches] == [3, 3]
    assert all(b["m"] is marker for b in batches)


def test_the_policys_stream_rule_decides_what_is_a_stream():
    assert feedline.DataLoader(Stream(), batch_size=1)._iterable
    indexed = feedline.DataLoader(Pairs(), batch_size=2, frontend=_policy())
    assert not indexed._iterable and len(indexed) == 3
    streamed = feedline.DataLoader(Pairs(), batch_size=2,
                                   frontend=_policy(stream_rule=lambda dataset: True))
    assert streamed._iterable
    with pytest.raises(TypeError, match="no length"):
        len(streamed)
