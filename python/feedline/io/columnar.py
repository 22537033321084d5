"""Columnar data as a map-style dataset: Parquet files (ParquetDataset) and
Arrow tables (a Hugging Face datasets.Dataset among them), read one row group
at a time with pyarrow and served row by row in C++ (ColumnarDataset,
src/text/columnar_dataset.cc). docs/text.md describes the fields.

Python runs once per row group (pyarrow decodes it, releasing the GIL; its
buffers cross to C++ whole), never per row.
"""

import atexit
import glob
import io
import os
import weakref

import numpy as np

from feedline import _feedline
from feedline.io.arguments import _remote_options
from feedline.io.datasets import NativeDataset

# Arrow integer and float types and the dtype their values keep.
_SCALAR_DTYPES = {
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "i64", "uint64": "i64",
    "halffloat": "f16", "float": "f32", "double": "f64", "bool": "bool",
}
# numpy dtypes of the codes above.
_NUMPY = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
          "u16": np.uint16, "f16": np.float16, "f32": np.float32, "f64": np.float64,
          "bool": np.bool_}


def is_url(path):
    """Whether `path` names a served file (http://, https://, s3://)."""
    return isinstance(path, str) and path.startswith(("http://", "https://", "s3://"))


def parquet_files(paths, owner, remote=None):
    """The files that `paths` (a path, a glob, a URL, or a list of them)
    names, each pattern's matches in sorted order; an s3:// glob
    ("s3://bucket/corpus/*.parquet") by listing its folder with the storage
    layer's client (`remote`: its options), other URLs as they are (a web
    server lists no folder)."""
    patterns = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not patterns:
        raise ValueError(f"{owner}: no paths given")
    files = []
    for pattern in patterns:
        pattern = os.fspath(pattern)
        if is_url(pattern):
            if not glob.has_magic(pattern):
                files.append(pattern)
                continue
            if not pattern.startswith("s3://"):
                raise ValueError(f"{owner}: {pattern}: a URL cannot be a glob over http(s), "
                                 "where the server lists no folder (list the files; an s3:// "
                                 "URL can be one)")
            try:
                matched = remote_reader(remote).glob(pattern)  # the listing runs without the GIL
            except Exception as error:  # the storage layer's Error names the folder
                raise ValueError(f"{owner}: {pattern}: cannot list ({error})") from None
            if not matched:
                raise FileNotFoundError(f"{owner}: no file matches {pattern!r}")
            files += matched
            continue
        matched = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matched:
            raise FileNotFoundError(f"{owner}: no file matches {pattern!r}")
        for path in matched:
            if os.path.isdir(path):
                raise IsADirectoryError(
                    f"{owner}: {path} is a folder: name its files, e.g. "
                    f"{os.path.join(path, '*.parquet')!r}")
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{owner}: {path}: no such file")
        files += matched
    return files


class RemoteFile(io.RawIOBase):
    """A served file as a read-only, seekable Python file for pyarrow: each
    read is one ranged GET of the storage layer's HTTP client (its retries,
    timeouts and S3 signing), so a Parquet reader fetches the footer and then
    a row group's column chunks, nothing else."""

    def __init__(self, reader, url, size=None):
        super().__init__()
        self.reader, self.url = reader, url
        self.size = reader.size(url) if size is None else size
        self.position = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.position

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer):
        view = memoryview(buffer).cast("B")
        count = max(0, min(len(view), self.size - self.position))
        if count:
            self.reader.read_into(self.url, self.position, view[:count])
        self.position += count
        return count


def remote_reader(remote):
    """The HTTP(S) / S3 reader of a dict of RemoteOptions fields (retries,
    timeouts, ca_file: docs/storage.md)."""
    return _feedline.text.RemoteFileReader(_remote_options(remote))


def open_parquet(path, reader, metadata=None, size=None):
    """A pyarrow ParquetFile of a local path, or of a URL through `reader`."""
    import pyarrow.parquet as pq

    if is_url(path):
        return pq.ParquetFile(RemoteFile(reader, path, size), metadata=metadata)
    return pq.ParquetFile(path, metadata=metadata)


class _Column:
    """How one Arrow column becomes a sample's field: kind "list" (token
    ids: int64 [n]), "scalar" (a number of `dtype`) or "bytes" (a str or
    bytes object, `prefix` "s" or "b")."""

    def __init__(self, name, kind, dtype, prefix=""):
        self.name, self.kind, self.dtype, self.prefix = name, kind, dtype, prefix

    def spec(self):
        return (self.name, self.name, self.kind, self.dtype, self.prefix)

    def __eq__(self, other):
        return self.spec() == other.spec()


def column_of(name, arrow_type, where):
    """The _Column for an Arrow field, or TypeError naming `where`, the column
    and its type."""
    import pyarrow as pa

    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        value = arrow_type.value_type
        if pa.types.is_integer(value):
            wide = value.bit_width > 32 or (value.bit_width == 32 and pa.types.is_unsigned_integer(value))
            return _Column(name, "list", "i64" if wide else "i32")
        raise TypeError(f"{where}: column {name!r} is {arrow_type}: a list column must hold "
                        "integers (token ids)")
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return _Column(name, "bytes", "u8", "s")
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return _Column(name, "bytes", "u8", "b")
    dtype = _SCALAR_DTYPES.get(str(arrow_type))
    if dtype is not None:
        return _Column(name, "scalar", dtype)
    raise TypeError(f"{where}: column {name!r} is {arrow_type}, which is not read natively "
                    "(supported: lists of integers, integers, floats, bool, strings, binary)")


def given_as(columns, dtypes):
    """Sets the dtype of each scalar _Column of `columns` that `dtypes` (a
    dict, or None) names: column_buffers casts its values to it as its row
    groups are read."""
    for column in columns:
        if dtypes and column.kind == "scalar" and column.name in dtypes:
            column.dtype = dtypes[column.name]


def _whole(array):
    """One Array from a ChunkedArray or Array."""
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array


def column_buffers(array, column, where):
    """(values, offsets) numpy arrays of one column of a row group: the
    values end to end and, for lists and bytes, rows + 1 offsets from 0.
    Nulls are refused (ValueError naming `where` and the column)."""
    import pyarrow as pa

    array = _whole(array)
    if array.null_count:
        raise ValueError(f"{where}: column {column.name!r} has {array.null_count} null rows")
    if column.kind == "scalar":
        if pa.types.is_boolean(array.type):
            return array.to_numpy(zero_copy_only=False).astype(np.bool_), None
        return np.ascontiguousarray(array.to_numpy(zero_copy_only=False),
                                    dtype=_NUMPY[column.dtype]), None
    if column.kind == "list":
        offsets = np.asarray(array.offsets, dtype=np.int64)
        # flatten() honours a sliced array's offset, as the offsets do.
        flat = array.flatten()
        if flat.null_count:
            raise ValueError(f"{where}: column {column.name!r} has {flat.null_count} null "
                             "tokens")
        values = np.ascontiguousarray(flat.to_numpy(zero_copy_only=False),
                                      dtype=_NUMPY[column.dtype])
        return values, offsets - offsets[0]
    # String and binary arrays: (validity, offsets, data) buffers, the
    # offsets of a sliced array starting at its offset.
    _, offset_buffer, data = array.buffers()
    wide = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    offsets = np.frombuffer(offset_buffer, dtype=np.int64 if wide else np.int32)
    offsets = offsets[array.offset:array.offset + len(array) + 1].astype(np.int64)
    values = (np.frombuffer(data, dtype=np.uint8) if data is not None
              else np.zeros(0, np.uint8))[offsets[0]:offsets[-1]]
    return values, offsets - offsets[0]


def list_lengths(array):
    """Every row's list length (an int64 numpy array) of a list column,
    from its offsets alone."""
    import pyarrow.compute as pc

    lengths = pc.list_value_length(_whole(array)).fill_null(0)
    return lengths.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def scalar_lengths(array, column, where):
    """A length column's values as int64, checked >= 0."""
    values = _whole(array)
    if values.null_count:
        raise ValueError(f"{where}: length column {column!r} has {values.null_count} nulls")
    values = values.to_numpy(zero_copy_only=False).astype(np.int64)
    if values.size and values.min() < 0:
        raise ValueError(f"{where}: length column {column!r} holds a negative length")
    return values


def decode_objects(sample, object_fields):
    """A native sample with its string and bytes fields (`object_fields`,
    tagged bytes: python/object_fields.h) as str / bytes, as batches give
    them."""
    out = {}
    for name, value in sample.items():
        if name in object_fields:
            raw = value.tobytes()
            value = raw[1:].decode("utf-8") if raw[:1] == b"s" else raw[1:]
        out[name] = value
    return out


class ColumnarSamples(NativeDataset):
    """A NativeDataset over a ColumnarDataset: dataset[i] gives str / bytes
    for string and binary columns, as batches do."""

    def __getitem__(self, index):
        return decode_objects(super().__getitem__(index), self._native.object_fields)


class ParquetDataset(ColumnarSamples):
    """The rows of Parquet files as samples, read in C++ from decoded row
    groups (docs/text.md, "Parquet files row group by row group").

      paths           a path, a glob ("corpus/*.parquet"), a URL
                      ("https://host/corpus/part-0.parquet", "s3://bucket/
                      key"), an s3:// glob ("s3://bucket/corpus/*.parquet":
                      its folder listed), or a list of them; each
                      pattern's files in sorted order, rows file by file.
      columns         the columns that become the sample's fields (default
                      all): list<int> / large_list<int> columns int64 arrays
                      (token ids), integer / float / bool columns scalars of
                      their dtype (uint32 and uint64 as int64), string and
                      binary columns str / bytes objects (in batches, a list
                      of one per row).
      length_column   an integer column holding each row's length (tokens);
                      read, with nothing else, at construction. Default: the
                      lengths of `lengths_from`.
      lengths_from    the list column whose list lengths are the rows'
                      lengths (default: the first list column of `columns`);
                      read once at construction to count them. None of
                      either: no lengths (then no pack= and no
                      DynamicBatchSampler).
      max_row_groups  decoded row groups held at most (with the loader's
                      plan, the ones it has passed or needs latest let go
                      first, else the least recently used); memory is about
                      (max_row_groups + num_workers) decoded row groups,
                      plus at most max_row_groups groups' bytes of rows
                      kept from groups let go while the plan still needs
                      them (documents waiting in rows still open, pack=).
      readahead       row groups read ahead of need: the next ones the
                      loader's epoch order needs, each decoded by one of
                      the dataset's reader threads (up to readahead at
                      once), not in a worker's Get (see docs/text.md).
      remote          for URLs: a dict of the storage layer's options
                      (docs/storage.md): retries, timeouts and HTTPS
                      (max_attempts, retry_budget_s, connect_timeout_s,
                      stall_timeout_s, backoff_s, ca_file), and the node's
                      cache (cache_dir, cache_limit, prefetch_bytes,
                      prefetch_requests, download_part_bytes,
                      download_parts). Without cache_dir, a served file is
                      read by ranged GETs: its footer at construction, then
                      a row group's column chunks when the group is read.
                      With cache_dir, each file is downloaded whole into
                      the cache once per node (every rank and worker naming
                      the folder shares it), fetched ahead in the order the
                      loader's epoch first needs the files, and read from
                      there (docs/text.md, "Parquet in object storage").
                      Lengths from a list column read that column whole at
                      construction (with a cache, by downloading the files):
                      give a length_column to read less.

    Row groups are the unit of I/O: the first row a sample needs from a
    group reads (decodes) the whole group's columns, and later rows of it
    are served from memory. Samples are dicts of the columns' fields.
    A file that is not Parquet, a missing column (the message lists the
    file's columns), a column of another type in another file or of a type
    not read natively, are errors at construction naming the file and
    column; a row group that cannot be read, or holds nulls, is a
    feedline.SampleError naming the file, row group and column, handled by
    the loader's error policy.
    """

    def __init__(self, paths, columns=None, *, length_column=None, lengths_from=None,
                 max_row_groups=4, readahead=3, remote=None, _dtypes=None):
        # _dtypes: {column: dtype code} the values of scalar columns are cast
        # to as their row groups are read (hf_datasets.py: the dtypes a
        # datasets.IterableDataset's format gives).
        owner = "ParquetDataset"
        files = parquet_files(paths, owner, remote)
        self.paths = files
        served = remote_reader(remote) if any(is_url(f) for f in files) else None

        def size_of(path):
            try:
                return served.size(path) if is_url(path) else None
            except Exception as error:  # the storage layer's Error names the URL
                raise ValueError(f"{owner}: {path}: cannot be read ({error})") from None

        sizes = _each(size_of, files, served is not None)
        opened = _Opened(files, sizes, served, _file_cache(files, sizes, remote))

        def footer(index):
            # The schema and metadata only: the reader (an open file, when
            # local) is let go at once.
            try:
                reader = opened.open_footer(index)
                return reader.schema_arrow, reader.metadata
            except Exception as error:  # pyarrow's ArrowInvalid, OSError, ...
                raise ValueError(f"{owner}: {files[index]}: not a readable Parquet file "
                                 f"({error})") from None

        footers = _each(footer, range(len(files)), served is not None)
        metadata, groups, names = [], [], []
        schema_columns = None
        for index, path in enumerate(files):
            schema, footer_metadata = footers[index]
            wanted = list(schema.names) if columns is None else [str(c) for c in columns]
            missing = [c for c in wanted if c not in schema.names]
            if missing:
                raise ValueError(f"{owner}: {path} has no column {missing[0]!r} (its columns: "
                                 f"{', '.join(schema.names)})")
            found = [column_of(c, schema.field(c).type, f"{owner}: {path}") for c in wanted]
            if schema_columns is None:
                schema_columns = found
            elif found != schema_columns:
                differs = next(a.name for a, b in zip(found, schema_columns) if a != b)
                raise TypeError(f"{owner}: {path}: column {differs!r} is "
                                f"{schema.field(differs).type}, unlike in {files[0]}")
            metadata.append(footer_metadata)
            for group in range(footer_metadata.num_row_groups):
                groups.append((len(metadata) - 1, group))
                names.append(f"{path}, row group {group}")
        if not schema_columns:
            raise ValueError(f"{owner}: no columns to read")
        given_as(schema_columns, _dtypes)
        self.columns = [c.name for c in schema_columns]
        self._kinds = {c.name: c for c in schema_columns}
        rows = [metadata[f].row_group(g).num_rows for f, g in groups]
        opened.metadata = metadata
        lengths = self._lengths(opened, groups, length_column, lengths_from, schema_columns)
        read = _ParquetRowGroups(opened, groups, names, schema_columns)
        cache = opened.cache
        native = _feedline.text.ColumnarDataset(
            read, rows, names, [c.spec() for c in schema_columns], int(max_row_groups),
            int(readahead), None, lengths, files=cache,
            file_of_group=[opened.cached_of[f] for f, _ in groups] if cache else [])
        super().__init__(native)
        _live_datasets.add(self)
        self._cache = cache
        # The first row of each file, and the rows of each row group (for
        # ShardOrderSampler, whose shards are the files).
        file_rows = np.zeros(len(files), np.int64)
        np.add.at(file_rows, [f for f, _ in groups], rows)
        self._file_starts = np.concatenate([[0], np.cumsum(file_rows)[:-1]]).astype(np.int64)
        self._group_rows = np.asarray(rows, np.int64)
        self._arguments = (files, self.columns, length_column, lengths_from, max_row_groups,
                           readahead, remote, _dtypes)

    @staticmethod
    def _lengths(opened, groups, length_column, lengths_from, columns):
        files = opened.files
        owner = "ParquetDataset"
        if length_column is not None and lengths_from is not None:
            raise ValueError(f"{owner}: give length_column or lengths_from, not both")
        if length_column is None and lengths_from is None:
            lists = [c.name for c in columns if c.kind == "list"]
            if not lists:
                return None
            lengths_from = lists[0]
        elif lengths_from is not None and not any(
                c.name == lengths_from and c.kind == "list" for c in columns):
            raise ValueError(f"{owner}: lengths_from={lengths_from!r} is not a list column of "
                             f"columns ({', '.join(c.name for c in columns)})")
        name = length_column if length_column is not None else lengths_from
        groups_of = [[] for _ in files]
        for f, group in groups:
            groups_of[f].append(group)

        def file_lengths(index):
            import pyarrow as pa

            path = files[index]
            # A length column is a few small reads (from the cached copy if
            # there is one); a list column's lengths read the column whole,
            # so through the node's cache when there is one.
            reader = opened.open_footer(index) if length_column is not None \
                else opened.open(index)
            if name not in reader.schema_arrow.names:
                raise ValueError(f"{owner}: {path} has no column {name!r} (its columns: "
                                 f"{', '.join(reader.schema_arrow.names)})")
            kind = reader.schema_arrow.field(name).type
            if length_column is not None and not pa.types.is_integer(kind):
                raise TypeError(f"{owner}: {path}: length column {name!r} is {kind}, "
                                "not integers")
            parts = []
            for group in groups_of[index]:
                where = f"{owner}: {path}, row group {group}"
                array = read_row_group(reader, group, [name], where).column(0)
                parts.append(scalar_lengths(array, name, where) if length_column is not None
                             else list_lengths(array))
            return parts

        parts = [part for file_parts in _each(file_lengths, range(len(files)),
                                              opened.reader is not None)
                 for part in file_parts]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    @property
    def lengths(self):
        """Every row's length (an int64 array), when the dataset has them."""
        return _feedline.text.lengths_of(self._native)

    @property
    def num_row_groups(self):
        return self._native.num_row_groups

    @property
    def file_starts(self):
        """The first row of each file (an int64 array, one per path)."""
        return self._file_starts.copy()

    @property
    def row_group_rows(self):
        """The rows of each row group, file by file (an int64 array)."""
        return self._group_rows.copy()

    def stats(self):
        """Row groups read so far, those of them read ahead of need, and
        those held now; the rows kept from groups let go while the epoch's
        order still needs them (rows_kept, kept_bytes: docs/text.md); with a node cache (remote cache_dir), the files this
        process downloaded into it (file_downloads), the files made present
        ahead of their reads (file_prefetches, those already cached
        included) and the most bytes fetched ahead at once
        (prefetch_peak_bytes)."""
        stats = {"row_group_reads": self._native.row_group_reads,
                 "row_group_reads_ahead": self._native.row_group_reads_ahead,
                 "row_groups_held": self._native.row_groups_held,
                 "rows_kept": self._native.rows_kept,
                 "kept_bytes": self._native.kept_bytes}
        if self._cache is not None:
            stats.update(file_downloads=self._cache.downloads,
                         file_prefetches=self._cache.prefetches,
                         prefetch_peak_bytes=self._cache.peak_bytes_ahead)
        return stats

    def __reduce__(self):
        return (_rebuild_parquet, self._arguments)

    def __repr__(self):
        return (f"ParquetDataset({len(self.paths)} files, {len(self)} rows, "
                f"{self.num_row_groups} row groups, columns={self.columns})")


# Every ParquetDataset of this process, for _stop_reads_ahead.
_live_datasets = weakref.WeakSet()


@atexit.register
def _stop_reads_ahead():
    # A dataset's reader threads call Python to decode its row groups: they
    # are stopped and joined before the interpreter starts to finalize, as
    # the loaders' workers are (feedline/io/loader.py); a reader taking the
    # GIL after that point crashed the process.
    for dataset in list(_live_datasets):
        dataset._native.stop_reads_ahead()


def _rebuild_parquet(files, columns, length_column, lengths_from, max_row_groups, readahead,
                     remote=None, dtypes=None):
    return ParquetDataset(files, columns, length_column=length_column,
                          lengths_from=lengths_from, max_row_groups=max_row_groups,
                          readahead=readahead, remote=remote, _dtypes=dtypes)


# Served files are opened this many at a time at construction: each opening
# waits on round trips (a HEAD, the footer's GETs, a length column's), with
# the GIL let go, so that a corpus of many files far away is not opened one
# round trip after another.
_OPENING_THREADS = 16


def _each(function, items, parallel):
    """[function(item) for item in items], on up to _OPENING_THREADS threads
    when `parallel` (some files are served); the error raised is that of the
    first item, in order, that failed."""
    items = list(items)
    if not parallel or len(items) < 2:
        return [function(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(_OPENING_THREADS, len(items))) as pool:
        return list(pool.map(function, items))


def _file_cache(files, sizes, remote):
    """The node's cache of the served files among `files` (a RemoteFileCache
    of them, in order) when `remote` names a cache_dir, else None."""
    if not remote or not remote.get("cache_dir"):
        return None
    urls = [f for f in files if is_url(f)]
    if not urls:
        return None
    return _feedline.text.RemoteFileCache(
        urls, [s for f, s in zip(files, sizes) if is_url(f)], _remote_options(remote))


# How many times a file is made present in the cache before its open gives
# up: another process's download may evict it in between when cache_limit
# holds fewer files than are downloaded at once.
_OPEN_TRIES = 4


class _Opened:
    """The dataset's files with their parsed footers (`metadata`, once read):
    open(i) is a new ParquetFile of file i, so that reads of several row
    groups share no reader: a local path; a URL's copy in the node's cache
    (made present first: downloaded whole, once per node); else a URL read
    by ranged GETs. open_footer(i), for the few small reads of a footer or
    a length column: the cached copy if it is there, else ranged GETs."""

    def __init__(self, files, sizes, reader, cache):
        self.files, self.sizes, self.reader, self.cache = files, sizes, reader, cache
        self.metadata = [None] * len(files)
        # Each file's entry in the cache, -1 for a local file.
        self.cached_of, count = [], 0
        for path in files:
            self.cached_of.append(count if cache is not None and is_url(path) else -1)
            count += self.cached_of[-1] >= 0

    def open(self, index):
        entry = self.cached_of[index]
        if entry < 0:
            return open_parquet(self.files[index], self.reader, self.metadata[index],
                                self.sizes[index])
        import pyarrow.parquet as pq

        for _ in range(_OPEN_TRIES):
            path = self.cache.ensure(entry)  # the download runs without the GIL
            try:
                return pq.ParquetFile(path, metadata=self.metadata[index])
            except FileNotFoundError:
                continue
        raise OSError(f"{self.files[index]}: evicted from the cache each of {_OPEN_TRIES} "
                      "times it was downloaded before it could be opened (cache_limit holds "
                      "fewer files than are downloaded at once)")

    def open_footer(self, index):
        entry = self.cached_of[index]
        if entry >= 0:
            import pyarrow.parquet as pq

            path = self.cache.path(entry)
            try:
                if os.path.getsize(path) == self.sizes[index]:
                    return pq.ParquetFile(path, metadata=self.metadata[index])
            except FileNotFoundError:  # not cached (or evicted just now)
                pass
        return open_parquet(self.files[index], self.reader, self.metadata[index],
                            self.sizes[index])


def read_row_group(reader, group, names, where):
    """Columns `names` of row group `group` (a pyarrow Table); what pyarrow
    raises (a corrupt page: "Couldn't deserialize thrift") becomes a
    ValueError naming `where` (the file and row group) and the column that
    cannot be read, found by reading the columns one by one.

    Decoded on the calling thread (use_threads=False): the dataset's reader
    threads read several row groups at once, each with the GIL let go, where Arrow's
    own pool (use_threads=True) ran two threads' reads one after the other
    here (2 threads reading groups: 1.0 cores busy with the pool, 1.9
    without)."""
    try:
        return reader.read_row_group(group, columns=names, use_threads=False)
    except Exception as error:
        culprit = None
        for name in names if len(names) > 1 else ():
            try:
                reader.read_row_group(group, columns=[name])
            except Exception:
                culprit = name
                break
        column = culprit if culprit is not None else (names[0] if len(names) == 1 else None)
        what = f"column {column!r}" if column is not None else "its columns"
        raise ValueError(f"{where}: {what} unreadable ({type(error).__name__}: {error})") from None


class _ParquetRowGroups:
    """read(g): the buffers of row group g's columns. Each read opens its
    file anew with the metadata already parsed, so that reads of several
    groups (pyarrow releases the GIL while it decodes) share no reader."""

    def __init__(self, opened, groups, names, columns):
        self.opened, self.groups = opened, groups
        self.names, self.columns = names, columns

    def __call__(self, g):
        f, group = self.groups[g]
        where = f"ParquetDataset: {self.names[g]}"
        try:
            reader = self.opened.open(f)
        except Exception as error:
            raise ValueError(f"{where}: unreadable ({type(error).__name__}: {error})") from None
        table = read_row_group(reader, group, [c.name for c in self.columns], where)
        return [column_buffers(table.column(c.name), c, where) for c in self.columns]


class ArrowRowGroups:
    """read(g): the buffers of record batch g of an in-memory (or memory
    mapped) Arrow table. Zero-copy: the C++ side views Arrow's buffers, so
    every batch can be held at once at the cost of its offsets only."""

    def __init__(self, table, columns, what):
        self.batches = table.to_batches()
        self.columns, self.what = columns, what
        starts = np.cumsum([0] + [b.num_rows for b in self.batches])
        self.names = [f"{what}, rows {a}:{b}" for a, b in zip(starts, starts[1:])]

    @property
    def rows(self):
        return [b.num_rows for b in self.batches]

    def __call__(self, g):
        batch = self.batches[g]
        return [column_buffers(batch.column(batch.schema.get_field_index(c.name)), c,
                               self.names[g]) for c in self.columns]
