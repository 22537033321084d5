"""feedline.paddle's batches in Paddle's static-graph mode, in the form
paddle.io.DataLoader gives them there, ready for `exe.run(program,
feed=batch)`:

- each step takes one batch per place (len(places) consecutive batches; a
  last group short of a batch per place is dropped, as paddle.io drops it);
- return_list=False: a list with one dict per place, mapping each feed
  variable's name to a DenseTensor, the batch's arrays taken in paddle.io's
  order (a sequence's elements, a mapping's values, depth first; numbers
  and strings are not fields) and matched to feed_list by position;
- return_list=True: per place, the batch's own structure (lists, dicts,
  strings) with DenseTensors for its arrays; with one place the batch
  itself, not a list of one;
- each DenseTensor holds a copy of its array on its place, as paddle.io's
  reader makes one (_DenseTensorMaker says why not a shared one).

The loading is feedline.DataLoader's: this module only re-dresses the
batches the engine delivered (their structure already paddle.io's, arrays
still numpy) as the DenseTensors Paddle's reader would have made.
"""

import collections.abc
import importlib
import numbers

import numpy as np


def feed_names(feed_list):
    """The names batches are keyed by: each feed variable's `name` (a
    paddle.static.data variable: a pir.Value, or a Variable of the legacy
    IR)."""
    names = []
    for position, variable in enumerate(feed_list or []):
        name = getattr(variable, "name", None)
        if not isinstance(name, str):
            raise TypeError(f"feed_list[{position}] must be a paddle.static.data variable "
                            f"(with a name), got {type(variable).__name__}")
        names.append(name)
    return names


class StaticGraphBatches:
    """Iterates an epoch's batches as static-graph steps.

    `epoch` is the loader's epoch iterator and `convert(batch)` puts each
    batch in paddle.io's structure with numpy arrays (and any paddle Tensors
    a collate_fn returned) as leaves. `places` are paddle.io's
    (loader.places), `names` the feed variables' names (feed_names),
    `return_list` the loader's, `length()` the loader's len().

    A class, not a generator, for the reason ConvertingIterator is one: no
    batch is held while the next is fetched."""

    __slots__ = ("_epoch", "_convert", "_places", "_names", "_return_list", "_length",
                 "_to_dense")

    def __init__(self, epoch, convert, places, names, return_list, length):
        self._epoch = epoch
        self._convert = convert
        self._places = list(places)
        self._names = names
        self._return_list = return_list
        self._length = length
        self._to_dense = _DenseTensorMaker()

    def __iter__(self):
        return self

    def __len__(self):
        return self._length()

    def __next__(self):
        # StopIteration before a group is whole ends the epoch: the batches
        # already taken are dropped, as paddle.io's reader drops them.
        group = [self._convert(next(self._epoch)) for _ in self._places]
        steps = [self._on_place(batch, place) for batch, place in zip(group, self._places)]
        if self._return_list and len(steps) == 1:
            return steps[0]  # one place: the batch, as in dynamic mode
        return steps

    def _on_place(self, batch, place):
        if self._return_list:
            return _map_fields(batch, lambda value: self._to_dense(value, place))
        fields = flatten_fields(batch)
        if len(fields) != len(self._names):
            # paddle.io's reader's words (reader_py.cc), and what was counted.
            raise ValueError(
                "(InvalidArgument) The sample number of reader's input data and the input "
                "number of feed list are not equal. [Hint: Expected names_.size() == "
                f"item.size(), but received names_.size():{len(self._names)} != "
                f"item.size():{len(fields)}.] feed_list names {self._names}; the batch has "
                f"{len(fields)} array fields")
        return {name: self._to_dense(value, place) for name, value in zip(self._names, fields)}


def _is_field(value):
    """An array of the batch, which Paddle's reader feeds (paddle.io's
    _flatten_batch: numpy arrays and Tensors; numbers, strings and other
    objects stay in the batch's structure)."""
    if isinstance(value, np.ndarray):
        return True
    paddle = importlib.import_module("paddle")
    return isinstance(value, (paddle.Tensor, paddle.base.core.DenseTensor))


def flatten_fields(batch):
    """The batch's arrays in paddle.io's order, depth first."""
    fields = []

    def visit(value):
        if _is_field(value):
            fields.append(value)
        elif isinstance(value, (str, bytes, numbers.Number)):
            return
        elif isinstance(value, collections.abc.Mapping):
            for item in value.values():
                visit(item)
        elif isinstance(value, collections.abc.Sequence):
            for item in value:
                visit(item)

    visit(batch)
    return fields


def _map_fields(value, to_dense):
    """`value` with each array replaced by to_dense(array); lists and dicts
    as they are (paddle.io's _restore_batch)."""
    if _is_field(value):
        return to_dense(value)
    if isinstance(value, (str, bytes, numbers.Number)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {key: _map_fields(item, to_dense) for key, item in value.items()}
    if isinstance(value, collections.abc.Sequence):
        return [_map_fields(item, to_dense) for item in value]
    return value


class _DenseTensorMaker:
    """A batch's array as a DenseTensor on a place, copied into memory
    Paddle owns, as paddle.io's reader copies it (DenseTensor.set).

    Not shared through DLPack: the Executor frees its feeds in its own
    threads, and a DLPack tensor's deleter (numpy's) needs the GIL, which the
    thread waiting on the Executor (exe.run, Executor.__del__) holds, so
    the two would wait on each other (seen with the legacy IR)."""

    def __init__(self):
        paddle = importlib.import_module("paddle")
        self._core = paddle.base.core
        self._tensor_class = paddle.Tensor

    def __call__(self, value, place):
        core = self._core
        target = _concrete_place(core, place)
        if isinstance(value, self._tensor_class):
            value = value.value().get_tensor()  # what paddle.io feeds for a Tensor
        if isinstance(value, core.DenseTensor):
            if value._place()._equals(target):
                return value
            value = np.array(value)
        tensor = core.DenseTensor()
        tensor.set(np.ascontiguousarray(value), target)
        return tensor


def _concrete_place(core, place):
    """The place object DenseTensor.set takes for one of paddle.io's
    loader.places (core.Place). An undefined one (paddle.io's default in
    static mode before a device is set) is the host, as for Paddle's
    reader."""
    if place.is_gpu_place():
        return core.CUDAPlace(place.gpu_device_id())
    if place.is_cuda_pinned_place():
        return core.CUDAPinnedPlace()
    if place.is_xpu_place():
        return core.XPUPlace(place.xpu_device_id())
    if place.is_custom_place():
        return core.CustomPlace(place.custom_device_type(), place.custom_device_id())
    return core.CPUPlace()
