"""Datasets, samplers and the DataLoader, named as in paddle.io.

Native objects (the samplers here, feedline.vision.datasets) run in C++ and
are handed to the loader as they are; Python datasets and samplers (any
object with __getitem__/__len__, or __iter__/__len__) work too and are called
under the GIL.

The parts: arguments.py checks the arguments, datasets.py and samplers.py
hold what their names say, text.py token documents, packing and mixing,
columnar.py Parquet files and Arrow tables read row group by row group,
loader.py the DataLoader.
"""

# The private names other feedline modules use: feedline.vision.datasets
# (_byte_size_argument, _seed_from), feedline.torch and feedline.paddle
# (_is_iterable_dataset, _native_dataset).
from feedline.io.arguments import _byte_size_argument, _seed_from  # noqa: F401
from feedline.io.datasets import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    NativeDataset,
    Subset,
    TensorDataset,
    WorkerInfo,
    _is_iterable_dataset,  # noqa: F401
    _native_dataset,  # noqa: F401
    get_worker_info,
    random_split,
)
from feedline.io.loader import DataLoader
from feedline.io.samplers import (
    BatchSampler,
    ClassBalancedSampler,
    DistributedBatchSampler,
    DynamicBatchSampler,
    GroupedBatchSampler,
    HardExampleSampler,
    RandomSampler,
    Sampler,
    SequenceSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
    aspect_ratio_groups,
    resolve_launch,
)
from feedline.io.columnar import ParquetDataset
from feedline.io.text import MixedDataset, PackOptions, TokenDataset

__all__ = [
    "BatchSampler",
    "ClassBalancedSampler",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedBatchSampler",
    "DynamicBatchSampler",
    "GroupedBatchSampler",
    "HardExampleSampler",
    "IterableDataset",
    "MixedDataset",
    "PackOptions",
    "ParquetDataset",
    "RandomSampler",
    "Sampler",
    "SequenceSampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "TokenDataset",
    "WeightedRandomSampler",
    "get_worker_info",
    "random_split",
    "aspect_ratio_groups",
    "resolve_launch",
]

# Tracebacks, reprs and pickles name the classes where users import them
# from, as they did when this package was one module.
for _public in (DataLoader, NativeDataset, WorkerInfo, *(globals()[name] for name in __all__)):
    if isinstance(_public, type):
        _public.__module__ = __name__
del _public



def __getattr__(name):
    # feedline.io.HDF5Dataset is imported when first asked for: feedline.hdf5
    # builds on this package (NativeDataset), which so does not import it.
    if name == "HDF5Dataset":
        from feedline.hdf5 import HDF5Dataset

        return HDF5Dataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
