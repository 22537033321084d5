"""What the framework front ends (feedline.torch, feedline.paddle) share:
an iterator that converts each batch, and a map over a batch's structure."""


class ConvertingIterator:
    """Iterates `batches`, passing each through `loader._convert`.

    A class, not a generator: a suspended generator would keep the previous
    batch's arrays alive while the next one is fetched, holding one more slot
    of the loader's pool."""

    __slots__ = ("_loader", "_batches")

    def __init__(self, loader, batches):
        self._loader = loader
        self._batches = batches

    def __iter__(self):
        return self

    def __next__(self):
        return self._loader._convert(next(self._batches))

    def __len__(self):
        return len(self._loader)


def map_batch(batch, f):
    """`f` applied to each array or object of the batch, at any depth; tuples
    and lists become lists and dicts stay dicts, as torch's default collate
    and paddle's loader give them. A list of objects (strings, one per
    sample) is a leaf: `f` gets the list."""
    if isinstance(batch, tuple):
        return [map_batch(v, f) for v in batch]
    if isinstance(batch, dict):
        return {k: map_batch(v, f) for k, v in batch.items()}
    return f(batch)
