"""The DataLoader's and the samplers' argument checks, in one place: each
turns what the caller passed into what the engine takes, or raises the
TypeError or ValueError that names the argument."""

import logging
import numbers
import os
import operator
import sys

import numpy as np

from feedline import _feedline


def _draw_seed():
    # A seed left unset comes from NumPy's global generator, as Paddle's
    # samplers draw from it: np.random.seed(s) makes a run repeatable.
    return int(np.random.randint(0, 2**63 - 1, dtype=np.int64))


def _seed_from(generator, seed):
    if seed is not None:
        return int(seed)
    if generator is None:
        return _draw_seed()
    if isinstance(generator, (int, np.integer)):
        return int(generator)
    if isinstance(generator, np.random.Generator):
        return int(generator.integers(0, 2**63 - 1))
    if hasattr(generator, "initial_seed"):  # torch.Generator
        return int(generator.initial_seed())
    raise TypeError(
        "generator must be None, an int seed, a numpy Generator or a torch.Generator, "
        f"got {type(generator).__name__}"
    )


_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def _int_argument(name, value, low, high):
    # Ints only (TypeError for "2" or 2.5), and only what the engine's types
    # hold: a clear error naming the argument rather than a failed cast. The
    # engine then checks what makes sense (batch_size >= 1, ...).
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"DataLoader: {name} must be an int, got {type(value).__name__}") from None
    if not low <= number <= high:
        raise ValueError(f"DataLoader: {name} must be from {low} to {high}, got {number}")
    return number


_AUTO = -1  # feedline::kAuto: the loader sets the value while it runs


def _user_stacklevel():
    # The stacklevel of a warning that names the user's line, past the frames
    # of feedline's own modules (feedline.torch's DataLoader calls this one's).
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("feedline."):
        level, frame = level + 1, frame.f_back
    return level


def _auto_or_int_argument(name, value, low):
    # "auto" (docs/tuning.md) or an int from `low`; a negative int is refused
    # here, since the engine reads -1 as "auto".
    if isinstance(value, str):
        if value == "auto":
            return _AUTO
        raise TypeError(f'DataLoader: {name} must be an int or "auto", got {value!r}')
    number = _int_argument(name, value, *_INT32)
    if number < low:
        raise ValueError(f'DataLoader: {name} must be >= {low}, got {number} (or "auto")')
    return number


def _byte_size_argument(name, value):
    """`value` as a number of bytes: an int as it is, a string read by the one
    rule for sizes (feedline/byte_size.h) that the command line's options
    follow too: "256M", "2GiB", "512 MiB" (K, M, G, T, KiB, ...: 1024-based),
    "1.5GB", "512MB" (KB, MB, GB, TB: 1000-based). `name` begins the
    messages ("DataLoader: memory_budget"); bounds are the caller's."""
    if isinstance(value, str):
        try:
            return _feedline._parse_byte_size(value)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f'{name} must be an int (bytes) or a string such as "2GiB" or "1.5GB", '
                        f"got {value!r}")
    return int(value)


def _memory_budget_argument(value, tuned):
    # None: a share of the available memory (docs/tuning.md). Else bytes, as
    # an int or a size string (_byte_size_argument); it bounds the slots only
    # the tuner sets, so it needs num_workers or prefetch_factor "auto".
    if value is None:
        return 0
    number = _byte_size_argument("DataLoader: memory_budget", value)
    if not 1 <= number <= _INT64[1]:
        raise ValueError(f"DataLoader: memory_budget must be from 1 byte to 8 EiB, got {value!r} "
                         "(None: a quarter of the available memory)")
    if not tuned:
        raise ValueError('DataLoader: memory_budget bounds the batch slots the tuner sets; it '
                         'needs num_workers="auto" or prefetch_factor="auto"')
    return number


def _reporter(report):
    # Where the loop's reports go: a callable gets the report dict, a Logger
    # (default: the "feedline" logger) gets its line at INFO.
    if report is None:
        report = logging.getLogger("feedline")
    if isinstance(report, logging.Logger):
        logger = report
        return lambda r: logger.info("%s", r["text"])
    if callable(report):
        return report
    raise TypeError(
        f"DataLoader: report must be a callable, a logging.Logger or None, got "
        f"{type(report).__name__}"
    )


def _report_every(value):
    # In steps; "epoch" (0 for the engine): at the end of each epoch only.
    if isinstance(value, str):
        if value == "epoch":
            return 0
        raise ValueError(f'DataLoader: report_every must be an int >= 1 or "epoch", got {value!r}')
    number = _int_argument("report_every", value, *_INT64)
    if number < 1:
        raise ValueError(f'DataLoader: report_every must be >= 1 (or "epoch"), got {number}')
    return number


def _seconds_argument(name, value):
    if isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real):
        raise TypeError(f"DataLoader: {name} must be a number of seconds, got {type(value).__name__}")
    return float(value)  # the engine refuses nan, infinities and negatives


def _worker_mode_argument(worker_mode):
    # The name itself is checked by the library (ParseWorkerMode, the one
    # place that knows the modes): a ValueError naming them.
    if not isinstance(worker_mode, str):
        raise TypeError(f"DataLoader: worker_mode must be a str, got {type(worker_mode).__name__}")
    return worker_mode


def _positive_int(name, value, default):
    """`value` checked as an integer in [1, 2**63 - 1]; `default` if None."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if not 1 <= value <= _INT64[1]:
        raise ValueError(f"{name} must be between 1 and {_INT64[1]}, got {value}")
    return value


def _size_in(name, value, low, high):
    """`value` as bytes in [low, high]: an int, or a string such as "256MiB"
    or "1.5GB" read by the rule of every size argument (feedline.io's
    _byte_size_argument); `name` begins the messages."""
    number = _byte_size_argument(name, value)
    if not low <= number <= high:
        given = f"{value!r} ({number} bytes)" if isinstance(value, str) else f"{number}"
        raise ValueError(f"{name} must be between {low} and {high}, got {given}")
    return number


def _remote_options(remote):
    """A dict of RemoteOptions fields as _feedline.vision.RemoteOptions, each name and
    value checked."""
    options = _feedline.vision.RemoteOptions()
    if remote is None:
        return options
    if not isinstance(remote, dict):
        raise TypeError(f"remote must be a dict of retry and timeout options, got "
                        f"{type(remote).__name__}")
    for name, value in remote.items():
        if name.startswith("_") or not hasattr(options, name):
            raise TypeError(f"remote: unknown option {name!r}; expected max_attempts, "
                            "retry_budget_s, connect_timeout_s, stall_timeout_s, backoff_s, "
                            "cache_dir, cache_limit, prefetch_bytes, prefetch_requests, "
                            "download_part_bytes, download_parts or ca_file")
        if name in ("cache_dir", "ca_file"):
            setattr(options, name, os.fspath(value))
            continue
        if name in ("cache_limit", "prefetch_bytes", "download_part_bytes"):
            setattr(options, name, _size_in(f"remote: {name}", value, 0, (1 << 63) - 1))
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"remote: {name} must be a number, got {type(value).__name__}")
        if name in ("max_attempts", "prefetch_requests", "download_parts"):
            if value != int(value):
                raise ValueError(f"remote: {name} must be a whole number, got {value!r}")
            value = int(value)
            if not -(1 << 31) <= value < (1 << 31):
                raise ValueError(f"remote: {name} must be >= 1, got {value}")
        setattr(options, name, value if isinstance(value, int) else float(value))
    options.check()
    return options
