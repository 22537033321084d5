"""Errors as torch's DataLoader raises them (feedline.torch).

torch raises again what the dataset (or collate_fn) raised, as its own type,
with the worker's traceback in the message; a worker killed by a signal is a
RuntimeError "DataLoader worker (pid N) is killed by signal: <name>."; a
timeout is a RuntimeError "DataLoader timed out after N seconds". feedline's
errors carry the same facts as data (feedline.SampleError: index, source,
reason; exception_type, the qualified type of what the dataset raised;
worker_pid and signal for a worker that died); this module turns them into
torch's types and wordings, keeping feedline's error as the __cause__ and its
details in the message."""

import builtins
import importlib
import signal as _signal

from feedline import _feedline


def _resolve(qualified):
    """The exception class `qualified` names ("KeyError", "pkg.mod.Cls",
    "pkg.mod.Outer.Inner"), or None."""
    if "." not in qualified:
        cls = getattr(builtins, qualified, None)
    else:
        parts = qualified.split(".")
        cls = None
        for cut in range(len(parts) - 1, 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for name in parts[cut:]:
                    obj = getattr(obj, name)
            except AttributeError:
                continue
            cls = obj
            break
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls
    return None


def _where(error):
    index = getattr(error, "index", -1)
    return f"in DataLoader sample {index}" if index is not None and index >= 0 else "in DataLoader"


def _timeout_seconds(timeout):
    # torch formats its timeout with str(): 1 -> "1", 1.5 -> "1.5".
    return str(timeout)


def as_torch_error(error, timeout):
    """The exception torch would raise for feedline's `error`, or None to
    raise `error` itself."""
    if not isinstance(error, _feedline.SampleError):
        return None
    reason = getattr(error, "reason", "")
    message = getattr(error, "message", str(error))
    if isinstance(error, _feedline.TimeoutError) or reason == "timeout":
        return _same_kind(error, f"DataLoader timed out after {_timeout_seconds(timeout)} seconds "
                                 f"({message})")
    if reason == "worker died":
        pid = getattr(error, "worker_pid", None)
        signum = getattr(error, "signal", None)
        if pid is not None and signum is not None:
            name = _signal.strsignal(signum) or f"signal {signum}"
            text = f"DataLoader worker (pid {pid}) is killed by signal: {name}. {message}"
        else:
            text = (f"DataLoader worker (pid(s) {pid if pid is not None else '?'}) exited "
                    f"unexpectedly: {message}")
        return _same_kind(error, text)
    if reason not in ("exception", "collate"):
        return None
    exception_type = getattr(error, "exception_type", None)
    cls = _resolve(exception_type) if exception_type else None
    if cls is None:
        return None
    text = f"Caught {cls.__name__} {_where(error)}.\nOriginal {message}"
    try:
        return cls(text)
    except Exception:  # noqa: BLE001 (a type that needs other arguments: torch's fallback too)
        return RuntimeError(text)


def _same_kind(error, text):
    """A copy of feedline's `error` (same type: a SampleError, which is a
    RuntimeError) with `text` as its message and its attributes kept."""
    new = type(error)(text)
    for name in ("index", "source", "reason", "exception_type", "worker_pid", "signal"):
        if hasattr(error, name):
            setattr(new, name, getattr(error, name))
    new.message = text
    return new
