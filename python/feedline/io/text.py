"""Token data: documents of token ids (TokenDataset), packing them into
fixed-length rows (PackOptions, given to DataLoader as pack=...), and
blending several sources by weight (MixedDataset). The planning and the
rows are C++ (src/text/); docs/text.md describes the fields and the
guarantees."""

import operator

import numpy as np

from feedline import _feedline
from feedline.io import hf_datasets
from feedline.io.columnar import parquet_files
from feedline.io.datasets import NativeDataset, _native_dataset

_STRATEGIES = ("best_fit", "first_fit", "concat_split")
_LONG_DOCUMENTS = ("split", "truncate", "drop")
_STOPPING = ("first_exhausted", "all_exhausted", "never")


def _positive_int(owner, name, value, low=1):
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{owner}: {name} must be an int, got {type(value).__name__}") from None
    if number < low:
        raise ValueError(f"{owner}: {name} must be >= {low}, got {number}")
    return number


def _choice(owner, name, value, choices):
    if value not in choices:
        raise ValueError(f"{owner}: {name} must be one of {', '.join(map(repr, choices))}, "
                         f"got {value!r}")
    return value


class TokenDataset(NativeDataset):
    """Tokenized documents held in memory as one flat array of token ids and
    the offsets where each document starts (Megatron's indexed layout):
    document i is tokens[offsets[i]:offsets[i + 1]]. A sample is a dict with
    one int64 array, `field`. Lengths are known without loading, so the
    dataset can be packed (PackOptions) and batched by a token budget.
    Token ids must fit in 32 bits (they are stored so)."""

    def __init__(self, tokens, offsets, field="input_ids"):
        tokens = np.ascontiguousarray(np.asarray(tokens).ravel())
        offsets = np.ascontiguousarray(np.asarray(offsets, dtype=np.int64).ravel())
        if tokens.size and not np.issubdtype(tokens.dtype, np.integer):
            raise TypeError(f"TokenDataset: tokens must be integers, got dtype {tokens.dtype}")
        if tokens.dtype != np.int32:
            tokens = tokens.astype(np.int64, copy=False)  # checked to fit in 32 bits in C++
        super().__init__(_feedline.text.TokenDataset(tokens, offsets, str(field)))
        self.field = str(field)

    @classmethod
    def from_documents(cls, documents, field="input_ids"):
        """From a sequence of 1-D arrays (or lists) of token ids."""
        arrays = [np.asarray(d, dtype=np.int64).ravel() for d in documents]
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([a.size for a in arrays], out=offsets[1:])
        tokens = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        return cls(tokens, offsets, field)

    @classmethod
    def from_dataset(cls, dataset, field="input_ids"):
        """Reads every sample of a map-style dataset once and keeps its
        `field` (a 1-D integer array or list; a sample may be a dict or
        have the field as an attribute). For Python datasets, whose samples
        the loader could otherwise only read under the GIL."""
        documents = []
        for i in range(len(dataset)):
            sample = dataset[i]
            try:
                tokens = sample[field] if isinstance(sample, dict) else getattr(sample, field)
            except (KeyError, AttributeError):
                raise ValueError(f"TokenDataset.from_dataset: sample {i} has no field {field!r}") \
                    from None
            tokens = np.asarray(tokens)
            if tokens.ndim != 1 or (tokens.size and not np.issubdtype(tokens.dtype, np.integer)):
                raise ValueError(f"TokenDataset.from_dataset: field {field!r} of sample {i} must "
                                 f"be a 1-D integer array, got shape {tokens.shape} of "
                                 f"{tokens.dtype}")
            documents.append(tokens)
        return cls.from_documents(documents, field)

    @classmethod
    def from_arrow(cls, data, column="input_ids"):
        """From Arrow data (pyarrow): a Table or RecordBatch (its `column`), or
        a (Chunked)Array of list<int> / large_list<int>, one list per
        document. The values and offsets cross as whole buffers: no Python
        runs per document."""
        tokens, offsets = _arrow_documents(data, column, "from_arrow")
        return cls(tokens, offsets, column)

    @classmethod
    def from_parquet(cls, paths, column="input_ids"):
        """From Parquet files (a path, a glob such as "corpus/*.parquet", or a
        list of them; files in sorted order): `column`, a list<int> column,
        read with Arrow's C++ reader (pyarrow) one row group at a time, each
        row group's values and offsets appended as whole buffers. The
        documents are then held in memory."""
        files = _parquet_files(paths)
        import pyarrow.parquet as pq

        tokens, lengths = [], []
        for path in files:
            try:
                reader = pq.ParquetFile(path)
            except Exception as error:  # pyarrow's ArrowInvalid, OSError, ...
                raise ValueError(f"TokenDataset.from_parquet: {path}: not a readable Parquet "
                                 f"file ({error})") from None
            names = reader.schema_arrow.names
            if column not in names:
                raise ValueError(f"TokenDataset.from_parquet: {path} has no column {column!r} "
                                 f"(its columns: {', '.join(names)})")
            for group in range(reader.num_row_groups):
                table = reader.read_row_group(group, columns=[column])
                values, offsets = _arrow_documents(table, column,
                                                   f"from_parquet: {path}, row group {group}")
                tokens.append(values)
                lengths.append(np.diff(offsets))
        lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        offsets = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        tokens = np.concatenate(tokens) if tokens else np.zeros(0, np.int64)
        return cls(tokens, offsets, column)

    @property
    def lengths(self):
        """Every document's token count (an int64 array)."""
        return _feedline.text.lengths_of(self._native)


def _parquet_files(paths):
    """The files that `paths` (a path, a glob, or a list of them) names."""
    return parquet_files(paths, "TokenDataset.from_parquet")


def _arrow_documents(data, column, where):
    """(tokens, offsets) as numpy arrays from Arrow list data."""
    import pyarrow as pa

    if isinstance(data, (pa.Table, pa.RecordBatch)):
        if column not in data.schema.names:
            raise ValueError(f"TokenDataset.{where}: no column {column!r} (the columns: "
                             f"{', '.join(data.schema.names)})")
        data = data.column(column)
    if isinstance(data, pa.Array):
        chunks = [data]
    elif isinstance(data, pa.ChunkedArray):
        chunks = data.chunks
    else:
        raise TypeError(f"TokenDataset.{where}: expected a pyarrow Table, RecordBatch, Array or "
                        f"ChunkedArray, got {type(data).__name__}")
    values, lengths = [], []
    for chunk in chunks:
        kind = chunk.type
        if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) or \
                not pa.types.is_integer(kind.value_type):
            raise TypeError(f"TokenDataset.{where}: column {column!r} is {kind}, not a list of "
                            "integers (one list of token ids per document)")
        if chunk.null_count:
            raise ValueError(f"TokenDataset.{where}: column {column!r} has {chunk.null_count} "
                             "null documents")
        # flatten() honours a sliced array's offset; the offsets are the
        # slice's own, so their differences are the documents' lengths.
        flat = chunk.flatten()
        if flat.null_count:
            raise ValueError(f"TokenDataset.{where}: column {column!r} has {flat.null_count} "
                             "null tokens")
        values.append(flat.to_numpy(zero_copy_only=False))
        lengths.append(np.diff(np.asarray(chunk.offsets, dtype=np.int64)))
    lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = np.concatenate(values) if values else np.zeros(0, np.int64)
    return tokens, offsets


class PackOptions:
    """How DataLoader(..., pack=PackOptions(...)) packs documents into rows of
    seq_len tokens (docs/text.md).

      seq_len          tokens per row.
      strategy         "best_fit" (the open row with the least room that fits,
                       least padding), "first_fit" (the oldest open row that
                       fits) or "concat_split" (end to end, cut every seq_len
                       tokens: no padding, documents cut across rows).
      max_segments     at most this many pieces in a row (None: no cap); also
                       the size of cu_seqlens, max_segments + 1.
      open_rows        rows the fit strategies keep open at once (the fullest
                       closes when another must open).
      long_documents   a document over seq_len tokens: "split" (full rows,
                       the rest packed), "truncate" (its first seq_len tokens)
                       or "drop".
      tokens_field     the samples' field holding the token ids.
      pad_id           input_ids of the padding.
      shift_labels     labels[t] is the next token (True), or input_ids with
                       -100 at document starts for models that shift labels
                       themselves (False: Hugging Face's causal LMs).
      mask_boundaries  -100 where the next token belongs to another document.
      num_replicas,    the ranks that share the rows (every rank with the same
      rank             seed): step s of rank r is rows (s * num_replicas + r) *
                       batch_size onwards, so all ranks take the same number of
                       steps (the last filled with the epoch's first rows, or
                       dropped with drop_last) and together consume a prefix of
                       the epoch's rows. state_dict() records that prefix
                       (pack_position): load_state_dict() in a job of another
                       world size continues after it.

    Each batch is a dict of input_ids, labels, position_ids (int64
    [B, seq_len]), segment_ids (int32 [B, seq_len], 0 in padding) and
    cu_seqlens (int32 [B, max_segments + 1]). The documents' order comes from
    the loader's sampler, or shuffle (from seed and epoch), so every epoch
    packs other documents together, identically for any num_workers."""

    def __init__(self, seq_len, strategy="best_fit", max_segments=None, open_rows=64,
                 long_documents="split", tokens_field="input_ids", pad_id=0, shift_labels=True,
                 mask_boundaries=True, num_replicas=1, rank=0):
        self.seq_len = _positive_int("PackOptions", "seq_len", seq_len)
        self.strategy = _choice("PackOptions", "strategy", strategy, _STRATEGIES)
        self.max_segments = (None if max_segments is None else
                             _positive_int("PackOptions", "max_segments", max_segments))
        self.open_rows = _positive_int("PackOptions", "open_rows", open_rows)
        self.long_documents = _choice("PackOptions", "long_documents", long_documents,
                                      _LONG_DOCUMENTS)
        if not isinstance(tokens_field, str) or not tokens_field:
            raise ValueError(
                f"PackOptions: tokens_field must be a field name, got {tokens_field!r}")
        self.tokens_field = tokens_field
        self.pad_id = _positive_int("PackOptions", "pad_id", pad_id, low=-(2**63))
        self.shift_labels = bool(shift_labels)
        self.mask_boundaries = bool(mask_boundaries)
        self.num_replicas = _positive_int("PackOptions", "num_replicas", num_replicas)
        self.rank = _positive_int("PackOptions", "rank", rank, low=0)
        if self.rank >= self.num_replicas:
            raise ValueError(f"PackOptions: rank must be below num_replicas ({self.num_replicas}), "
                             f"got {self.rank}")
        if self.pad_id >= 2**63:
            raise ValueError(f"PackOptions: pad_id must be an int64, got {self.pad_id}")
        # The bounds the packer itself holds (seq_len, max_segments,
        # open_rows), checked here so that a bad value fails where it is given.
        try:
            _feedline.text.check_pack_options(**self._planning())
        except (OverflowError, TypeError):
            raise ValueError(f"PackOptions: seq_len, max_segments and open_rows must fit in "
                             f"int64, got {self!r}") from None

    def __repr__(self):
        return (f"PackOptions(seq_len={self.seq_len}, strategy={self.strategy!r}, "
                f"max_segments={self.max_segments}, open_rows={self.open_rows}, "
                f"long_documents={self.long_documents!r})")

    def _planning(self):
        return dict(seq_len=self.seq_len, strategy=self.strategy,
                    max_segments=self.max_segments or 0, open_rows=self.open_rows,
                    long_documents=self.long_documents)

    def plan(self, lengths, order=None):
        """The rows of documents of these lengths, visited in `order` (default
        0, 1, ...): a dict of numpy arrays document, offset, length (one
        entry per piece) and row_offsets (row r is pieces
        row_offsets[r]:row_offsets[r + 1]), with tokens, dropped_documents,
        dropped_tokens and padding_fraction."""
        lengths = np.asarray(lengths, dtype=np.int64).ravel()
        order = np.arange(lengths.size) if order is None else np.asarray(order, np.int64).ravel()
        plan = _feedline.text.plan_packing(order.tolist(), lengths.tolist(), **self._planning())
        rows = len(plan["row_offsets"]) - 1
        plan["padding_fraction"] = 1.0 - plan["tokens"] / (rows * self.seq_len) if rows else 0.0
        return plan


def _pack_position(pack, batches, state):
    """Where a loader's state stands in the rows of its epoch, over all ranks."""
    epoch, done = int(state["epoch"]), int(state["next_batch"])
    return {"epoch": epoch, "rows": batches.global_position(epoch, done),
            "epoch_start": batches.global_position(epoch, 0),
            "num_replicas": pack.num_replicas, "rank": pack.rank}


def _pack_state_to_restore(pack, batches, state):
    """The loader state to restore from a state_dict() with pack_position.
    The same ranks: the exact (fingerprinted) path, the epoch cut where it
    was if it was itself resumed. Another world size: the rest of the
    epoch's rows, split across this job's ranks from batch 0."""
    state = dict(state)
    position = state.pop("pack_position")
    if not isinstance(position, dict) or not {"epoch", "rows", "epoch_start"} <= set(position):
        raise ValueError(f"load_state_dict: pack_position must be the dict state_dict() wrote, "
                         f"got {position!r}")
    epoch = int(position["epoch"])
    same_job = (position.get("num_replicas"), position.get("rank")) == (pack.num_replicas,
                                                                        pack.rank)
    if same_job:
        if position["epoch_start"] > 0 and epoch == state.get("epoch"):
            batches.resume_from(epoch, int(position["epoch_start"]))
        return state
    batches.resume_from(epoch, int(position["rows"]))
    return {"epoch": epoch, "next_batch": 0}


def _packed(dataset, pack, batch_size, shuffle, sampler, drop_last, seed):
    """The native dataset of packed rows and the batch sampler of its rows,
    for DataLoader(dataset, ..., pack=pack)."""
    if not isinstance(pack, PackOptions):
        raise TypeError(f"DataLoader: pack must be a feedline.io.PackOptions, got "
                        f"{type(pack).__name__}")
    documents = _native_dataset(dataset)
    if documents is None:
        # A Hugging Face datasets.Dataset: its Arrow table, read natively.
        arrow = hf_datasets.native_documents(dataset)
        documents = None if arrow is None else arrow._native
    if documents is None:
        # A Python dataset: its documents are read once, here, into memory.
        documents = TokenDataset.from_dataset(dataset, pack.tokens_field)._native
    n = len(documents)
    if sampler is not None:
        order = getattr(sampler, "_native", sampler)
        if not isinstance(order, _feedline._Sampler):
            raise TypeError("DataLoader: with pack, the sampler (which orders the documents) "
                            f"must be a feedline sampler, got {type(sampler).__name__}")
    elif shuffle:
        order = _feedline._RandomSampler(n, seed)
    else:
        order = _feedline._SequentialSampler(n)
    schedule = _feedline.text.PackSchedule(_feedline.text.lengths_of(documents).tolist(), order,
                                           **pack._planning())
    rows = _feedline.text.PackedDataset(documents, schedule, pack.tokens_field, pack.pad_id,
                                        pack.shift_labels, pack.mask_boundaries)
    batches = _feedline.text.PackBatchSampler(schedule, batch_size, bool(drop_last),
                                              pack.num_replicas, pack.rank)
    return rows, batches


class MixedDataset(NativeDataset):
    """Rows of several native datasets blended by weight, deterministically
    (Megatron's BlendedDataset): each position takes the source whose share so
    far is furthest below its weight, so every window of rows holds the
    weights to within a row or two per source. Keep the loader's shuffle off:
    it would reorder the blend (the sources shuffle themselves).

      datasets      native datasets (TokenDataset, feedline.vision datasets...).
      weights       one per dataset, >= 0, normalized.
      stopping      "first_exhausted": ends before any source would repeat;
                    "all_exhausted": once every source with a weight gave every
                    row (the others start another pass); "never": num_samples
                    rows, every source cycling.
      num_samples   the rows of the mix ("never"), or a cap.
      shuffle       each source in its own random order (a bool for all, or
                    one per source), a new one every pass, from seed.
      start         rows each source gave already: with state_at(position)
                    from a mix that stopped there, a mix with other weights
                    continues every source where it was.
      source_field  if given, each sample also has this int64 field: the
                    index of its source."""

    def __init__(self, datasets, weights, stopping="first_exhausted", num_samples=None,
                 shuffle=False, seed=0, start=None, source_field=None):
        datasets = list(datasets)
        natives = []
        for k, dataset in enumerate(datasets):
            native = _native_dataset(dataset)
            if native is None:
                raise TypeError(f"MixedDataset: dataset {k} ({type(dataset).__name__}) is not "
                                "native; wrap token documents in feedline.io.TokenDataset "
                                "(TokenDataset.from_dataset reads a Python dataset once)")
            natives.append(native)
        weights = [float(w) for w in weights]
        stopping = _choice("MixedDataset", "stopping", stopping, _STOPPING)
        if isinstance(shuffle, (bool, np.bool_, int)):
            shuffle = [bool(shuffle)] * len(natives)
        shuffle = [bool(s) for s in shuffle]
        start = [] if start is None else [int(s) for s in start]
        self.datasets = datasets
        self.weights = weights
        self.stopping = stopping
        self.seed = int(seed)
        fields = [getattr(d, "_fields", None) for d in datasets]
        same = fields[0] if fields and all(f == fields[0] for f in fields) else None
        if same is not None and source_field is not None:
            same = tuple(same) + (source_field,)
        super().__init__(
            _feedline.text.MixedDataset(
                natives, weights, stopping, -1 if num_samples is None else int(num_samples),
                shuffle, self.seed, start, "" if source_field is None else str(source_field)),
            same)

    def source_of(self, index):
        """The source that position `index` reads."""
        return self._native.source_of(int(index))

    def row_of(self, index):
        """The row of its source that position `index` reads."""
        return self._native.row_of(int(index))

    def state_at(self, position):
        """What a mix resuming at `position` (rows consumed so far: a
        loader's next_batch * batch_size with shuffle off) needs:
        {"draws": rows each source gave}; pass its draws as start=."""
        return {"draws": list(self._native.draws_before(int(position)))}
