"""Python values carried between a worker process and the training process
as a pickle (protocol 5) whose arrays travel out of band: the stream holds
the structure, and each contiguous array's bytes are one buffer that the
binding copies once, straight into the batch slot's shared memory
(python/pickled_fields.h). A sample handed whole to a collate_fn and the
batch a collate_fn made in a worker both cross this way.

numpy arrays give their buffers out of band by themselves. A CPU torch
tensor pickles its whole storage in band by default (through torch.save's
byte format: the data copied into the stream, and again out of it), so it
is reduced here to the numpy array over its own elements, out of band, and
rebuilt with torch.from_numpy: torch's DataLoader likewise hands tensors
over in shared memory without pickling their data.
"""

import io
import pickle
import sys
import threading


def _rebuild_torch_tensor(array, bfloat16, requires_grad):
    import torch

    tensor = torch.from_numpy(array)
    if bfloat16:
        tensor = tensor.view(torch.bfloat16)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _reduce_torch_tensor(torch, tensor):
    """(rebuild, args) for a plain CPU tensor, or None to leave it to torch."""
    if (tensor.device.type != "cpu" or tensor.layout is not torch.strided
            or tensor.is_quantized or getattr(tensor, "is_nested", False)):
        return None
    data = tensor.detach()
    if getattr(data, "is_conj", lambda: False)():
        data = data.resolve_conj()
    if getattr(data, "is_neg", lambda: False)():
        data = data.resolve_neg()
    data = data.contiguous()
    bfloat16 = data.dtype is torch.bfloat16
    if bfloat16:
        data = data.view(torch.int16)  # numpy has no bfloat16; its bits cross as int16
    try:
        array = data.numpy()
    except (TypeError, RuntimeError):
        return None  # a dtype numpy lacks: torch's own reduction
    return _rebuild_torch_tensor, (array, bfloat16, bool(tensor.requires_grad))


class _OutOfBandPickler(pickle.Pickler):
    # Called for objects of types that are not built in (lists, dicts, ints
    # and strings never reach it), so a sample of plain Python values pays
    # nothing for it.
    def reducer_override(self, obj):
        torch = sys.modules.get("torch")
        if torch is not None and type(obj) is torch.Tensor:
            reduced = _reduce_torch_tensor(torch, obj)
            if reduced is not None:
                return reduced
        return NotImplemented


class _ThreadPickler(threading.local):
    """One pickler per thread, kept between calls: making a Pickler (and its
    stream) for every sample costs as much as pickling a small one. Per
    thread, since pickling runs Python code (reductions) during which
    another thread may take the GIL and pickle too."""

    def __init__(self):
        self.stream = io.BytesIO()
        self.buffers = []
        self.pickler = _OutOfBandPickler(self.stream, protocol=5,
                                         buffer_callback=self._keep)

    def _keep(self, buffer):
        try:
            self.buffers.append(buffer.raw())
        except BufferError:
            return True  # not contiguous: its bytes go into the stream
        return False

    def dumps(self, value):
        self.stream.seek(0)
        self.stream.truncate()
        self.buffers = []
        self.pickler.clear_memo()
        try:
            self.pickler.dump(value)
        finally:
            # A pickler that raised may hold a partial state: start afresh.
            self.pickler.clear_memo()
        return self.stream.getvalue(), self.buffers


_THREAD_PICKLER = _ThreadPickler()


def dumps(value):
    """(stream, buffers): `value` pickled with its contiguous arrays as
    buffers (memoryviews of their bytes) kept out of the stream."""
    return _THREAD_PICKLER.dumps(value)


def loads(stream, buffers):
    """The value `dumps` gave (stream, buffers) for; arrays are views of the
    buffers given."""
    return pickle.loads(stream, buffers=buffers)
