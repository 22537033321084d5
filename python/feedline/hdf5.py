"""HDF5 files as datasets: feedline.io.HDF5Dataset.

Samples are rows of one or more HDF5 datasets of the same length, read in
C++ on demand (through HDF5's chunk cache, never the whole file) on the
loader's threads. Numeric rows go straight into the batch; variable-length
bytes holding encoded JPEG / PNG / WebP images are decoded by the same
native transforms as feedline.vision.datasets.ImageFolder.
"""

import os

from feedline._feedline import storage as _storage
from feedline._feedline import vision as _vision
from feedline.io.arguments import _positive_int
from feedline.io.datasets import NativeDataset

__all__ = ["HDF5Dataset", "library_threadsafe"]


def library_threadsafe():
    """Whether the HDF5 library serializes its own calls. When it does not,
    feedline holds one process-wide lock around every HDF5 call."""
    return _storage.library_threadsafe()


class HDF5Dataset(NativeDataset):
    """Rows of the HDF5 datasets named by `fields` in the file at `path`.

    fields: a dataset path ("images"), a list of them (samples are tuples in
        that order, fields named after each path's last component), or a dict
        {field name: dataset path} (samples are dicts).
    transform: the image transform (feedline.vision.transforms, as for
        ImageFolder) for the image fields.
    images: the field names whose variable-length bytes are encoded images;
        None: every variable-length uint8 field. Other byte fields come back as
        uint8 arrays.

    Integer and float rows keep their shape: uint8 stays uint8, int8/int16/
    uint16/int32 become int32, uint32/int64/uint64 int64, floats float32.
    Strings come back as str from dataset[i] (uint8 arrays in batches).
    A file the system refuses raises the OSError of its errno
    (FileNotFoundError, PermissionError, ...) with the path as its filename;
    a file HDF5 cannot read, or a dataset that cannot be opened, raises
    ValueError naming it; a
    row that cannot be read (a damaged chunk) is a feedline.SampleError
    naming the file, the dataset and the row, handled by the loader's
    error policy. Safe with torch's DataLoader workers: each process opens
    the file itself.
    """

    def __init__(self, path, fields, transform=None, *, images=None, max_pixels=None):
        from feedline.vision.transforms import build_pipeline

        if isinstance(fields, str):
            fields = [fields]
        as_dict = isinstance(fields, dict)
        if as_dict:
            names, datasets = [str(k) for k in fields], [str(v) for v in fields.values()]
        else:
            datasets = [str(f) for f in fields]
            names = [d.rstrip("/").rsplit("/", 1)[-1] for d in datasets]
        if not datasets:
            raise ValueError("HDF5Dataset needs at least one field")
        if images is not None:
            images = set(images)
            unknown = images - set(names)
            if unknown:
                raise ValueError(f"images names fields that are not listed: {sorted(unknown)}")
            flags = [name in images for name in names]
        else:
            flags = [None] * len(names)
        max_pixels = _positive_int("max_pixels", max_pixels, _vision.DEFAULT_MAX_PIXELS)
        pipeline = build_pipeline(transform, max_pixels)
        native = _storage.HDF5Dataset(os.fspath(path), datasets, names, flags, pipeline)
        super().__init__(native, None if as_dict else names)
        self.transform = transform
        self.path = os.fspath(path)
        # What pickling rebuilds it from (the native dataset holds open files).
        self._arguments = (self.path, fields, transform, None if images is None else sorted(images),
                           max_pixels)
        self._strings = {n for n, k in zip(native.field_names, native.field_kinds)
                         if k == "string"}

    def __reduce__(self):
        path, fields, transform, images, max_pixels = self._arguments
        return _rebuild, (type(self), path, fields, transform, images, max_pixels)

    @property
    def field_kinds(self):
        """{field name: "array", "image", "bytes" or "string"}."""
        return dict(zip(self._native.field_names, self._native.field_kinds))

    def __getitem__(self, index):
        sample = super().__getitem__(index)
        if not self._strings:
            return sample
        if isinstance(sample, dict):
            return {k: (bytes(v).decode("utf-8", "replace") if k in self._strings else v)
                    for k, v in sample.items()}
        return tuple(bytes(v).decode("utf-8", "replace") if name in self._strings else v
                     for name, v in zip(self._fields, sample))


def _rebuild(cls, path, fields, transform, images, max_pixels):
    """An HDF5Dataset from its arguments: unpickling opens the file again."""
    return cls(path, fields, transform, images=images, max_pixels=max_pixels)
