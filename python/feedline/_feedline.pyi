# Types of feedline._feedline, the compiled binding (python/*.cc). The
# Python package (feedline/*.py) wraps it; users import from there.
#
# The binding's submodules, vision, storage and text, are typed as the
# check-only classes _VisionModule, _StorageModule and _TextModule (one stub file, no
# stub package beside the compiled module): `from feedline._feedline import
# vision` gives an object whose attributes are the submodule's.
#
# scripts/check_wheel.sh runs mypy's stubtest against the built module, so a
# binding that changes without this file fails `make test-wheel`.
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, SupportsIndex, type_check_only, overload

import numpy
import numpy.typing

# Defined in the binding, named feedline.X in tracebacks (feedline/__init__.py).
class SampleError(Exception): ...
class TimeoutError(Exception): ...  # noqa: A001 (the binding's name)
class WorkerInitError(Exception): ...

_pybind11_version: tuple[int, ...]

# The `feedline` command (feedline/__main__.py): its exit code.
def _run_command(args: Sequence[str]) -> int: ...

class SchemaNode:
    @property
    def kind(self) -> str: ...
    @property
    def is_leaf(self) -> bool: ...
    @property
    def leaf_type(self) -> str: ...
    @property
    def dtype(self) -> str | None: ...
    @property
    def key(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def type_module(self) -> str: ...
    @property
    def type_qualname(self) -> str: ...
    @property
    def type_locatable(self) -> bool: ...
    @property
    def children(self) -> list[SchemaNode]: ...

class SampleSchema:
    @property
    def root(self) -> SchemaNode: ...
    @property
    def fields(self) -> list[str]: ...
    def __len__(self) -> int: ...
    def __eq__(self, arg0: object) -> bool: ...

# One field of a delivered batch, for a framework to import through DLPack
# (python/dlpack_export.h); made by the loader only.
class BatchArray:
    def __dlpack__(self, stream: object = None) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    # Before numpy(): past it, `numpy` in this class names the method.
    def __array__(self, dtype: object = None, copy: object = None) -> numpy.typing.NDArray[Any]: ...
    def numpy(self) -> numpy.typing.NDArray[Any]: ...

class _Dataset:
    def __len__(self) -> int: ...
    def get(self, index: SupportsIndex, epoch: SupportsIndex = 0, seed: SupportsIndex = 0) -> dict[str, Any]: ...
    def source(self, index: SupportsIndex) -> str: ...

class _Subset(_Dataset):
    def __init__(self, dataset: _Dataset, indices: Sequence[SupportsIndex]) -> None: ...

class _Concat(_Dataset):
    def __init__(self, datasets: Sequence[_Dataset]) -> None: ...

class _Sampler:
    def __len__(self) -> int: ...
    def indices(self, epoch: SupportsIndex) -> numpy.typing.NDArray[numpy.int64]: ...

class _SequentialSampler(_Sampler):
    def __init__(self, n: SupportsIndex) -> None: ...

class _RandomSampler(_Sampler):
    def __init__(
        self, n: SupportsIndex, seed: SupportsIndex, replacement: bool = False, num_samples: SupportsIndex | None = None
    ) -> None: ...

class _SubsetRandomSampler(_Sampler):
    def __init__(self, indices: Sequence[SupportsIndex], seed: SupportsIndex) -> None: ...

class _WeightedRandomSampler(_Sampler):
    def __init__(
        self, weights: Sequence[float], num_samples: SupportsIndex, seed: SupportsIndex, replacement: bool = True
    ) -> None: ...

class _ClassBalancedSampler(_Sampler):
    def __init__(
        self, labels: Sequence[SupportsIndex], seed: SupportsIndex, num_samples: SupportsIndex | None = None
    ) -> None: ...

class _HardExampleSampler(_Sampler):
    def __init__(
        self, n: SupportsIndex, seed: SupportsIndex, num_samples: SupportsIndex | None, decay: float, floor: float
    ) -> None: ...
    def probabilities(self) -> numpy.typing.NDArray[numpy.float64]: ...
    def restore(self, arg0: dict[str, Any]) -> None: ...
    def state(self) -> dict[str, Any]: ...
    def update(self, indices: numpy.typing.ArrayLike, losses: numpy.typing.ArrayLike) -> None: ...

class _BatchSampler:
    def __len__(self) -> int: ...
    # The batches of an epoch: every index in order, and where each batch starts.
    def plan(self, arg0: SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64]]: ...

class _FixedBatchSampler(_BatchSampler):
    def __init__(self, sampler: Any, batch_size: SupportsIndex, drop_last: bool) -> None: ...

class _DistributedBatchSampler(_BatchSampler):
    def __init__(
        self,
        n: SupportsIndex,
        batch_size: SupportsIndex,
        num_replicas: SupportsIndex,
        rank: SupportsIndex,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: SupportsIndex = 0,
        partition: str = "paddle",
        pad: bool = True,
        resume_epoch: SupportsIndex = -1,
        resume_position: SupportsIndex = 0,
    ) -> None: ...
    def global_position(self, epoch: SupportsIndex, batches_done: SupportsIndex) -> int: ...
    def resume_from(self, epoch: SupportsIndex, position: SupportsIndex) -> None: ...
    def set_epoch(self, epoch: SupportsIndex) -> None: ...
    def valid_mask(self, epoch: SupportsIndex) -> numpy.typing.NDArray[numpy.bool_]: ...
    @property
    def num_samples(self) -> int: ...

class _GroupedBatchSampler(_BatchSampler):
    def __init__(self, sampler: Any, group_ids: Sequence[SupportsIndex], batch_size: SupportsIndex) -> None: ...

class _DynamicBatchSampler(_BatchSampler):
    def __init__(
        self,
        lengths: Sequence[SupportsIndex],
        max_tokens: SupportsIndex,
        max_batch_size: SupportsIndex = 0,
        bucket_size: SupportsIndex = 0,
        shuffle: bool = True,
        seed: SupportsIndex = 0,
    ) -> None: ...

class _Loader:
    def __init__(
        self,
        *,
        dataset: Any,
        iterable: bool,
        batch_size: Any,
        shuffle: bool,
        sampler: Any,
        batch_sampler: Any,
        num_workers: SupportsIndex,
        collate_fn: Any,
        drop_last: bool,
        prefetch_factor: SupportsIndex,
        persistent_workers: bool,
        timeout: float,
        worker_init_fn: Any,
        seed: SupportsIndex,
        error_policy: str,
        fields: Any,
        worker_mode: str = "thread",
        use_shared_memory: bool = True,
        in_order: bool = True,
        memory_budget_bytes: SupportsIndex = 0,
        torch_bfloat16: bool = False,
        seed_samples: bool = True,
        batch_per_worker: bool = False,
    ) -> None: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...
    def drain_epoch(self) -> tuple[int, float]: ...
    def epoch(self) -> int: ...
    def next(self, dlpack_leaves: bool = False) -> Any: ...
    def reset(self) -> None: ...
    def restore(self, arg0: dict[str, Any]) -> None: ...
    def sample_schema(self) -> SampleSchema | None: ...
    def set_epoch(self, arg0: SupportsIndex) -> None: ...
    def set_report(self, every_steps: SupportsIndex, callback: Callable[..., Any] | None) -> None: ...
    def start_iteration(self) -> None: ...
    def state(self) -> dict[str, Any]: ...
    def stats(self) -> dict[str, Any]: ...
    def structure(self) -> Any: ...
    def tuner_stats(self) -> dict[str, Any]: ...
    def worker_mode(self) -> str: ...
    def worker_pids(self) -> list[int]: ...

def _aspect_ratio_groups(widths: Sequence[SupportsIndex], heights: Sequence[SupportsIndex], k: SupportsIndex) -> numpy.ndarray: ...
def _loop_bound_wait() -> float: ...
def _parse_byte_size(arg0: str) -> int: ...
def _resolve_launch(world_size: SupportsIndex | None = None, rank: SupportsIndex | None = None) -> dict[str, Any]: ...
def _worker_exitcode(arg0: SupportsIndex) -> Any: ...
def _worker_info() -> Any: ...

@type_check_only
class _VisionModule:
    """feedline._feedline.vision: the native image pipeline and datasets."""

    DEFAULT_MAX_FILE_BYTES: ClassVar[int]
    DEFAULT_MAX_PIXELS: ClassVar[int]
    VOC_CLASSES: ClassVar[list[str]]
    @staticmethod
    def default_annotation_index_dir() -> str: ...

    class Transform:
        __hash__: ClassVar[None]  # type: ignore[assignment]
        @staticmethod
        def auto_augment(
            policy: str = "imagenet", interpolation: str = "nearest", fill: Sequence[float] = ...
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def center_crop(height: SupportsIndex, width: SupportsIndex) -> _VisionModule.Transform: ...
        @staticmethod
        def color_jitter(
            brightness: Sequence[float], contrast: Sequence[float], saturation: Sequence[float], hue: Sequence[float]
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def fixed_size_crop(height: SupportsIndex, width: SupportsIndex, fill: Sequence[float]) -> _VisionModule.Transform: ...
        @staticmethod
        def normalize(mean: Sequence[float], std: Sequence[float]) -> _VisionModule.Transform: ...
        @staticmethod
        def rand_augment(
            num_ops: SupportsIndex = 2,
            magnitude: SupportsIndex = 9,
            num_magnitude_bins: SupportsIndex = 31,
            interpolation: str = "nearest",
            fill: Sequence[float] = ...,
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def random_erasing(
            p: float, scale: Sequence[float], ratio: Sequence[float], value: Sequence[float], random_value: bool
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def random_horizontal_flip(p: float = 0.5) -> _VisionModule.Transform: ...
        @staticmethod
        def random_iou_crop(
            scale: Sequence[float], ratio: Sequence[float], options: Sequence[float], trials: SupportsIndex
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def random_hsv(hgain: float = 0.015, sgain: float = 0.7, vgain: float = 0.4) -> _VisionModule.Transform: ...
        @staticmethod
        def random_photometric_distort(
            contrast: Sequence[float],
            saturation: Sequence[float],
            hue: Sequence[float],
            brightness: Sequence[float],
            p: float,
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def random_resized_crop(
            height: SupportsIndex,
            width: SupportsIndex,
            scale: Sequence[float],
            ratio: Sequence[float],
            interpolation: str = "bilinear",
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def random_shortest_size(
            sizes: Sequence[SupportsIndex], max_size: SupportsIndex, interpolation: str = "bilinear"
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def random_zoom_out(fill: Sequence[float], side_range: Sequence[float], p: float) -> _VisionModule.Transform: ...
        @staticmethod
        def resize(
            height: SupportsIndex, width: SupportsIndex = 0, interpolation: str = "bilinear", max_size: SupportsIndex = 0
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def scale_jitter(
            target_height: SupportsIndex,
            target_width: SupportsIndex,
            scale_range: Sequence[float],
            interpolation: str = "bilinear",
        ) -> _VisionModule.Transform: ...
        @staticmethod
        def to_chw() -> _VisionModule.Transform: ...
        @staticmethod
        def trivial_augment_wide(
            num_magnitude_bins: SupportsIndex = 31, interpolation: str = "nearest", fill: Sequence[float] = ...
        ) -> _VisionModule.Transform: ...
        def __eq__(self, arg0: object) -> bool: ...
        def __getstate__(self) -> tuple[Any, ...]: ...
        def __setstate__(self, arg0: tuple[Any, ...]) -> None: ...

    class Pipeline:
        def __init__(
            self,
            transforms: Sequence[_VisionModule.Transform],
            dtype: str = "u8",
            fused: bool = True,
            max_pixels: SupportsIndex = 89478485,
        ) -> None: ...
        def __getstate__(self) -> tuple[Any, ...]: ...
        def __setstate__(self, arg0: tuple[Any, ...]) -> None: ...
        def fixed_shape(self) -> tuple[int, ...] | None: ...
        def run(
            self, data: bytes | bytearray | memoryview, source: str = "", seed: SupportsIndex = 0,
            epoch: SupportsIndex = 0, index: SupportsIndex = 0,
        ) -> numpy.typing.NDArray[Any]: ...
        @property
        def max_pixels(self) -> int: ...
        @property
        def transforms(self) -> list[_VisionModule.Transform]: ...

    class ImageDataset(_Dataset):
        def __init__(
            self,
            root: str,
            paths: Sequence[str],
            labels: Sequence[SupportsIndex],
            classes: Sequence[str],
            pipeline: _VisionModule.Pipeline,
            max_file_bytes: SupportsIndex = 1073741824,
        ) -> None: ...
        def __reduce__(self) -> tuple[Any, ...]: ...
        def file(self, arg0: SupportsIndex) -> str: ...
        @property
        def classes(self) -> list[str]: ...
        @property
        def labels(self) -> numpy.typing.NDArray[numpy.int64]: ...
        @property
        def max_file_bytes(self) -> int: ...
        @property
        def max_pixels(self) -> int: ...
        @property
        def pipeline(self) -> _VisionModule.Pipeline: ...
        @property
        def root(self) -> str: ...

    class ImageFolder(ImageDataset):
        def __init__(  # type: ignore[override]
            self, root: str, pipeline: _VisionModule.Pipeline, max_file_bytes: SupportsIndex = 1073741824
        ) -> None: ...

    class FileList(ImageDataset):
        def __init__(  # type: ignore[override]
            self, list_file: str, root: str, pipeline: _VisionModule.Pipeline, max_file_bytes: SupportsIndex = 1073741824
        ) -> None: ...

    class CocoDetection(_Dataset):
        def __init__(
            self,
            root: str,
            annotation_file: str,
            pipeline: _VisionModule.Pipeline,
            masks: bool = False,
            keep_crowd: bool = False,
            skip_empty: bool = False,
            max_file_bytes: SupportsIndex = 1073741824,
            index_dir: str = "",
            size_divisibility: SupportsIndex = 1,
            source_masks: bool = False,
            mosaic: tuple[SupportsIndex, float, float, float] | None = None,
        ) -> None: ...
        def __reduce__(self) -> tuple[Any, ...]: ...
        def file(self, arg0: SupportsIndex) -> str: ...
        @property
        def annotation_file(self) -> str: ...
        @property
        def categories(self) -> list[tuple[int, str]]: ...
        @property
        def image_ids(self) -> numpy.typing.NDArray[numpy.int64]: ...
        @property
        def image_sizes(self) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64]]: ...
        @property
        def max_pixels(self) -> int: ...
        @property
        def pipeline(self) -> _VisionModule.Pipeline: ...
        @property
        def root(self) -> str: ...

    class YoloDetection(_Dataset):
        def __init__(
            self,
            images_dir: str,
            pipeline: _VisionModule.Pipeline,
            masks: bool = False,
            max_file_bytes: SupportsIndex = 1073741824,
            size_divisibility: SupportsIndex = 1,
            mosaic: tuple[SupportsIndex, float, float, float] | None = None,
        ) -> None: ...
        def __reduce__(self) -> tuple[Any, ...]: ...
        def label_file(self, arg0: SupportsIndex) -> str: ...
        @property
        def images_dir(self) -> str: ...
        @property
        def max_pixels(self) -> int: ...
        @property
        def pipeline(self) -> _VisionModule.Pipeline: ...

    class VocDetection(_Dataset):
        def __init__(
            self,
            root: str,
            image_set: str,
            pipeline: _VisionModule.Pipeline,
            keep_difficult: bool = False,
            classes: Sequence[str] = [],
            max_file_bytes: SupportsIndex = 1073741824,
            size_divisibility: SupportsIndex = 1,
        ) -> None: ...
        def __reduce__(self) -> tuple[Any, ...]: ...
        @property
        def classes(self) -> list[str]: ...
        @property
        def image_ids(self) -> list[str]: ...
        @property
        def image_set(self) -> str: ...
        @property
        def image_sizes(self) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64]]: ...
        @property
        def max_pixels(self) -> int: ...
        @property
        def pipeline(self) -> _VisionModule.Pipeline: ...
        @property
        def root(self) -> str: ...

    class RemoteOptions:
        max_attempts: int
        retry_budget_s: float
        connect_timeout_s: float
        stall_timeout_s: float
        backoff_s: float
        cache_dir: str
        cache_limit: int
        prefetch_bytes: int
        prefetch_requests: int
        download_part_bytes: int
        download_parts: int
        ca_file: str
        def __init__(self) -> None: ...
        def check(self) -> None: ...

    class DetectionShardDataset(_Dataset):
        def __init__(
            self,
            shards: Sequence[str],
            pipeline: _VisionModule.Pipeline,
            masks: bool = ...,
            source_masks: bool = ...,
            keep_crowd: bool = ...,
            skip_empty: bool = ...,
            size_divisibility: int = ...,
            mosaic: tuple[SupportsIndex, float, float, float] | None = None,
            remote: _VisionModule.RemoteOptions = ...,
        ) -> None: ...
        def __reduce__(self) -> tuple[Any, ...]: ...
        def key(self, index: SupportsIndex) -> str: ...
        @property
        def image_sizes(self) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.int64]]: ...
        @property
        def max_pixels(self) -> int: ...
        @property
        def pipeline(self) -> _VisionModule.Pipeline: ...
        @property
        def shards(self) -> list[str]: ...

    class ShardDataset(_Dataset):
        @overload
        def __init__(
            self, path_or_glob: str, pipeline: _VisionModule.Pipeline, remote: _VisionModule.RemoteOptions = ...
        ) -> None: ...
        @overload
        def __init__(
            self,
            shards: Sequence[str],
            pipeline: _VisionModule.Pipeline,
            classes: Sequence[str],
            remote: _VisionModule.RemoteOptions = ...,
        ) -> None: ...
        def __reduce__(self) -> tuple[Any, ...]: ...
        def key(self, index: SupportsIndex) -> str: ...
        @property
        def classes(self) -> list[str]: ...
        @property
        def labels(self) -> numpy.typing.NDArray[numpy.int64]: ...
        @property
        def max_pixels(self) -> int: ...
        @property
        def pipeline(self) -> _VisionModule.Pipeline: ...
        @property
        def shard_starts(self) -> numpy.typing.NDArray[numpy.int64]: ...
        @property
        def shards(self) -> list[str]: ...

    class ShardOrderSampler(_Sampler):
        def __init__(
            self, shard_starts: Sequence[SupportsIndex], size: SupportsIndex, window: SupportsIndex, seed: SupportsIndex
        ) -> None: ...
        @property
        def window(self) -> int: ...

    @staticmethod
    def adjust(image: numpy.typing.NDArray[numpy.uint8], what: str, factor: float) -> numpy.typing.NDArray[numpy.uint8]: ...
    @staticmethod
    def augment_op(
        image: numpy.typing.NDArray[numpy.uint8],
        op: str,
        magnitude: float,
        interpolation: str = "nearest",
        fill: Sequence[float] = ...,
    ) -> numpy.typing.NDArray[numpy.uint8]: ...
    @staticmethod
    def decode_image(
        data: bytes | bytearray | memoryview, source: str = "", max_pixels: SupportsIndex = 89478485
    ) -> numpy.typing.NDArray[numpy.uint8]: ...
    @staticmethod
    def encode_jpeg(image: numpy.typing.NDArray[numpy.uint8], quality: SupportsIndex = 90) -> bytes: ...
    @staticmethod
    def encode_png(image: numpy.typing.NDArray[numpy.uint8]) -> bytes: ...
    @staticmethod
    def synthesize_image(
        width: SupportsIndex, height: SupportsIndex, seed: SupportsIndex = 0
    ) -> numpy.typing.NDArray[numpy.uint8]: ...
    @staticmethod
    def write_image_folder(
        dir: str, images: SupportsIndex, classes: SupportsIndex = 10, seed: SupportsIndex = 0, broken: SupportsIndex = 0
    ) -> list[str]: ...

@type_check_only
class _StorageModule:
    """feedline._feedline.storage: datasets over HDF5 files, and shard packing."""

    class HDF5Dataset(_Dataset):
        def __init__(
            self,
            path: str,
            datasets: Sequence[str],
            names: Sequence[str],
            images: Sequence[bool | None],
            pipeline: _VisionModule.Pipeline | None,
        ) -> None: ...
        @property
        def field_kinds(self) -> list[str]: ...
        @property
        def field_names(self) -> list[str]: ...
        @property
        def path(self) -> str: ...

    @staticmethod
    def library_threadsafe() -> bool: ...
    @staticmethod
    def pack_shards(
        source: str,
        out: str,
        shard_bytes: SupportsIndex,
        skip_broken: bool,
        restart: bool,
        max_file_bytes: SupportsIndex,
        jpeg_restart_mcus: SupportsIndex,
        jpeg_restart_rows: SupportsIndex,
        keep_progressive: bool,
        threads: SupportsIndex,
    ) -> dict[str, Any]: ...

@type_check_only
class _TextModule:
    """feedline._feedline.text: token documents, packing and mixing."""

    class TokenDataset(_Dataset):
        def __init__(self, tokens: Any, offsets: Any, field: str) -> None: ...
        @property
        def field(self) -> str: ...
        @property
        def num_tokens(self) -> int: ...
        def length(self, index: SupportsIndex) -> int: ...

    class PackSchedule:
        def __init__(
            self,
            lengths: Sequence[SupportsIndex],
            sampler: _Sampler,
            seq_len: SupportsIndex,
            strategy: str,
            max_segments: SupportsIndex,
            open_rows: SupportsIndex,
            long_documents: str,
        ) -> None: ...
        def rows(self, epoch: SupportsIndex) -> dict[str, Any]: ...

    class PackedDataset(_Dataset):
        def __init__(
            self,
            documents: _Dataset,
            schedule: _TextModule.PackSchedule,
            tokens_field: str,
            pad_id: SupportsIndex,
            shift_labels: bool,
            mask_boundaries: bool,
        ) -> None: ...

    class PackBatchSampler(_BatchSampler):
        def __init__(
            self,
            schedule: _TextModule.PackSchedule,
            batch_size: SupportsIndex,
            drop_last: bool,
            num_replicas: SupportsIndex,
            rank: SupportsIndex,
        ) -> None: ...
        def global_position(self, epoch: SupportsIndex, batches: SupportsIndex) -> int: ...
        def resume_from(self, epoch: SupportsIndex, rows: SupportsIndex) -> None: ...

    class MixedDataset(_Dataset):
        def __init__(
            self,
            sources: Sequence[_Dataset],
            weights: Sequence[float],
            stopping: str,
            num_samples: SupportsIndex,
            shuffle: Sequence[bool],
            seed: SupportsIndex,
            start: Sequence[SupportsIndex],
            source_field: str,
        ) -> None: ...
        def source_of(self, index: SupportsIndex) -> int: ...
        def row_of(self, index: SupportsIndex) -> int: ...
        def draws_before(self, position: SupportsIndex) -> list[int]: ...
        def length(self, index: SupportsIndex) -> int: ...

    class RemoteFileReader:
        def __init__(self, remote: _VisionModule.RemoteOptions) -> None: ...
        @staticmethod
        def is_url(arg0: str) -> bool: ...
        def size(self, url: str) -> int: ...
        def glob(self, pattern: str) -> list[str]: ...
        def read_into(self, url: str, offset: SupportsIndex, into: Any) -> int: ...
        @property
        def connections(self) -> int: ...

    class RemoteFileCache:
        def __init__(
            self,
            urls: Sequence[str],
            sizes: Sequence[SupportsIndex],
            remote: _VisionModule.RemoteOptions,
        ) -> None: ...
        def path(self, file: SupportsIndex) -> str: ...
        def ensure(self, file: SupportsIndex) -> str: ...
        @property
        def downloads(self) -> int: ...
        @property
        def prefetches(self) -> int: ...
        @property
        def peak_bytes_ahead(self) -> int: ...

    class ColumnarDataset(_Dataset):
        def __init__(
            self,
            read: Callable[[int], list[tuple[Any, Any]]],
            rows: Sequence[SupportsIndex],
            names: Sequence[str],
            columns: Sequence[tuple[str, str, str, str, str]],
            max_row_groups: SupportsIndex,
            readahead: SupportsIndex,
            row_map: Any,
            lengths: Any,
            files: _TextModule.RemoteFileCache | None = None,
            file_of_group: Sequence[SupportsIndex] = ...,
        ) -> None: ...
        @property
        def num_row_groups(self) -> int: ...
        @property
        def object_fields(self) -> list[str]: ...
        @property
        def row_group_reads(self) -> int: ...
        @property
        def row_groups_held(self) -> int: ...
        @property
        def row_group_reads_ahead(self) -> int: ...
        @property
        def row_group_read_log(self) -> list[int]: ...
        @property
        def rows_kept(self) -> int: ...
        @property
        def kept_bytes(self) -> int: ...
        @property
        def has_lengths(self) -> bool: ...
        def length(self, index: SupportsIndex) -> int: ...

    @staticmethod
    def check_pack_options(
        seq_len: SupportsIndex,
        strategy: str,
        max_segments: SupportsIndex,
        open_rows: SupportsIndex,
        long_documents: str,
    ) -> None: ...
    @staticmethod
    def dynamic_batch_sampler(
        documents: _Dataset,
        max_tokens: SupportsIndex,
        max_batch_size: SupportsIndex,
        bucket_size: SupportsIndex,
        shuffle: bool,
        seed: SupportsIndex,
    ) -> _DynamicBatchSampler: ...
    @staticmethod
    def lengths_of(documents: _Dataset) -> Any: ...
    @staticmethod
    def plan_packing(
        order: Sequence[SupportsIndex],
        lengths: Sequence[SupportsIndex],
        seq_len: SupportsIndex,
        strategy: str,
        max_segments: SupportsIndex,
        open_rows: SupportsIndex,
        long_documents: str,
    ) -> dict[str, Any]: ...

vision: _VisionModule
storage: _StorageModule
text: _TextModule
