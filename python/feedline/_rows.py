"""How one row of a Python map-style dataset is loaded.

torch's DataLoader fetches a batch with `dataset.__getitems__(indices)`
when the dataset has one, and a dataset may define only that (its
`__getitem__` being torch's Dataset base's, which raises
NotImplementedError). feedline loads rows one at a time, each on whichever
worker is free: such a dataset's row is `__getitems__([index])[0]`.
"""


def row_loader(dataset):
    """The callable loading row i of `dataset`: its `__getitem__`, or, when
    that raises NotImplementedError and the dataset has a `__getitems__`,
    `__getitems__([i])`'s one sample (from then on, for every row)."""
    getitem = dataset.__getitem__
    getitems = getattr(dataset, "__getitems__", None)
    if not getitems:  # torch checks the attribute's truth too
        return getitem
    use_getitems = False

    def load(index):
        nonlocal use_getitems
        if not use_getitems:
            try:
                return getitem(index)
            except NotImplementedError:
                use_getitems = True
        samples = getitems([index])
        try:
            count = len(samples)
        except TypeError:
            raise TypeError(f"{type(dataset).__name__}.__getitems__([{index}]) returned "
                            f"{type(samples).__name__}, not a list of samples") from None
        if count != 1:
            raise ValueError(f"{type(dataset).__name__}.__getitems__([{index}]) returned "
                             f"{count} samples, not 1")
        return samples[0]

    return load
