"""The errors paddle.io raises where feedline's would differ."""


class StreamHasNoLength(ValueError, TypeError):
    """Paddle's error for len() of a loader over an IterableDataset, a
    ValueError. Also a TypeError, so that list(loader) (which asks len() for
    a size hint and ignores only TypeError) still lists the stream."""
