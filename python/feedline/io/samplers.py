"""Samplers and batch samplers (paddle.io's). Each native sampler is a pure
function of the epoch; iterating one from Python walks epochs 0, 1, 2, ...
so that every pass gives a new order, while the DataLoader asks it for its
own epoch."""

import numbers
import operator

import numpy as np

from feedline import _feedline
from feedline.io.arguments import _seed_from


def _native(obj):
    return getattr(obj, "_native", obj)


class Sampler:
    """Base of samplers (paddle.io.Sampler): __iter__ yields indices and
    __len__ counts them. A Python subclass is called under the GIL, once per
    epoch."""

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        if not hasattr(self, "_native"):
            raise NotImplementedError(f"{type(self).__name__} must define __iter__")
        epoch = self._epoch
        self._epoch += 1
        return iter(self._native.indices(epoch).tolist())

    def __len__(self):
        if not hasattr(self, "_native"):
            raise NotImplementedError(f"{type(self).__name__} must define __len__")
        return len(self._native)


class SequenceSampler(Sampler):
    """0, 1, ..., len(data_source) - 1 (paddle.io.SequenceSampler)."""

    def __init__(self, data_source):
        super().__init__(data_source)
        self._native = _feedline._SequentialSampler(len(data_source))
        self._epoch = 0


SequentialSampler = SequenceSampler


class RandomSampler(Sampler):
    """A new random order every epoch (paddle.io.RandomSampler): a permutation,
    or with replacement num_samples uniform draws. `generator` (an int seed, a
    numpy Generator or a torch.Generator) or `seed` fixes the orders."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None, seed=None):
        super().__init__(data_source)
        self.replacement = replacement
        self.seed = _seed_from(generator, seed)
        self._native = _feedline._RandomSampler(
            len(data_source), self.seed, bool(replacement), num_samples
        )
        self._epoch = 0

    @property
    def num_samples(self):
        return len(self._native)


class SubsetRandomSampler(Sampler):
    """A random permutation of `indices` each epoch."""

    def __init__(self, indices, generator=None, seed=None):
        super().__init__(None)
        self.indices = [int(i) for i in indices]
        self._native = _feedline._SubsetRandomSampler(self.indices, _seed_from(generator, seed))
        self._epoch = 0


class WeightedRandomSampler(Sampler):
    """num_samples draws of index i with probability weights[i] / sum(weights)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None, seed=None):
        super().__init__(None)
        weights = np.asarray(weights, dtype=np.float64).ravel().tolist()
        self._native = _feedline._WeightedRandomSampler(
            weights, int(num_samples), _seed_from(generator, seed), bool(replacement)
        )
        self._epoch = 0


class ClassBalancedSampler(Sampler):
    """Every class equally likely whatever its size: each draw picks a class
    uniformly, then one of its samples (with replacement). labels[i] is the
    class of sample i; num_samples defaults to len(labels). For native image
    datasets pass dataset.targets."""

    def __init__(self, labels, num_samples=None, generator=None, seed=None):
        super().__init__(None)
        labels = np.asarray(labels, dtype=np.int64).ravel().tolist()
        self._native = _feedline._ClassBalancedSampler(
            labels, _seed_from(generator, seed), num_samples
        )
        self._epoch = 0


def _as_array(values, name, dtype):
    # A torch tensor (even one that requires grad, on any device) or anything
    # numpy takes; flattened.
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    if dtype is np.int64 and array.size and array.dtype.kind not in "iu":
        raise TypeError(
            f"HardExampleSampler.update: {name} must hold integers, got dtype {array.dtype}"
        )
    if array.dtype.kind not in "biuf":
        raise TypeError(f"HardExampleSampler.update: {name} must hold numbers, got dtype {array.dtype}")
    return np.ascontiguousarray(array.ravel(), dtype=dtype)


class HardExampleSampler(Sampler):
    """Draws the samples with a high recent loss more often; the training loop
    reports losses with update(indices, losses).

    Each sample's score is a moving average of its losses (the first loss
    sets it, then score = decay * score + (1 - decay) * loss); a sample never
    reported scores like the hardest one seen, so new samples come early.
    Index i is drawn with probability floor / n + (1 - floor) * score_i /
    sum(scores): loss-proportional, and never below floor / n, so no sample
    starves. An epoch is num_samples (default n) draws with replacement,
    planned when the epoch starts: losses reported during an epoch shape the
    next one (a small num_samples re-plans often). Deterministic for a seed
    and a sequence of updates; DataLoader.state_dict() carries this sampler's
    state, so a checkpoint resumes exactly. docs/samplers.md has the details.

    `data_source` is the dataset (or its length).
    """

    def __init__(self, data_source, num_samples=None, decay=0.5, floor=0.1, generator=None,
                 seed=None):
        if isinstance(data_source, numbers.Integral) and not isinstance(data_source, bool):
            n, data_source = int(data_source), None
        else:
            n = len(data_source)
        super().__init__(data_source)
        self.seed = _seed_from(generator, seed)
        self.decay = float(decay)
        self.floor = float(floor)
        self._native = _feedline._HardExampleSampler(
            n, self.seed, None if num_samples is None else operator.index(num_samples),
            self.decay, self.floor
        )
        self._epoch = 0

    @property
    def num_samples(self):
        return len(self._native)

    def update(self, indices, losses):
        """Reports losses[k] for sample indices[k] (arrays, lists or torch
        tensors of equal length; a batch's per-sample losses, e.g. from
        reduction="none"). Raises ValueError or IndexError naming the argument
        and entry for a length mismatch, an index outside [0, n), or a loss
        that is negative or not finite; then nothing is applied."""
        self._native.update(_as_array(indices, "indices", np.int64),
                            _as_array(losses, "losses", np.float64))

    def probabilities(self):
        """The probability of each index in the next epoch planned (a numpy array)."""
        return self._native.probabilities()

    def state_dict(self):
        """The scores and the probabilities of the last planned epoch (plain
        lists, O(n)); DataLoader.state_dict() includes it."""
        return self._native.state()

    def load_state_dict(self, state):
        """Continues from state_dict(). Raises ValueError naming the field
        if it does not fit this sampler."""
        if not isinstance(state, dict):
            raise TypeError(
                f"HardExampleSampler.load_state_dict takes a dict from state_dict(), "
                f"got {type(state).__name__}"
            )
        self._native.restore(state)


class BatchSampler:
    """Groups a sampler's indices into lists of batch_size (paddle.io.BatchSampler).

    Give either `dataset` (with `shuffle`) or `sampler`; the last, shorter
    batch is dropped when `drop_last`.
    """

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler needs exactly one of dataset and sampler")
        if sampler is None:
            sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        elif shuffle:
            raise ValueError("shuffle must be False when a sampler is given")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last
        self._native = _feedline._FixedBatchSampler(_native(sampler), batch_size, drop_last)
        self._epoch = 0

    def _next_epoch(self):
        epoch = self._epoch
        self._epoch += 1
        return epoch

    def __iter__(self):
        indices, offsets = self._native.plan(self._next_epoch())
        indices = indices.tolist()
        for b in range(len(offsets) - 1):
            yield indices[offsets[b] : offsets[b + 1]]

    def __len__(self):
        return len(self._native)


class DynamicBatchSampler(BatchSampler):
    """Batches of samples of similar length under a token budget: a batch of k
    samples whose longest has length L costs k * L, at most max_tokens.
    Samples are sorted by length within buckets of bucket_size (0: the whole
    epoch), cut into batches, and the batches shuffled, from (seed, epoch).
    lengths[i] is the length of sample i; or give a native dataset that knows
    its lengths (feedline.io.TokenDataset, from Parquet or Arrow too): they
    are read in C++, with no Python list of them."""

    def __init__(self, lengths, max_tokens, max_batch_size=0, bucket_size=0, shuffle=True,
                 seed=None):
        seed = _seed_from(None, seed)
        native = getattr(lengths, "_native", None)
        if isinstance(native, _feedline._Dataset):
            self.lengths = None
            self._native = _feedline.text.dynamic_batch_sampler(
                native, int(max_tokens), int(max_batch_size), int(bucket_size), bool(shuffle),
                seed)
        else:
            self.lengths = np.asarray(lengths, dtype=np.int64).ravel().tolist()
            self._native = _feedline._DynamicBatchSampler(
                self.lengths, int(max_tokens), int(max_batch_size), int(bucket_size),
                bool(shuffle), seed
            )
        self._epoch = 0


class GroupedBatchSampler(BatchSampler):
    """Batches whose indices share a group, as torchvision's detection
    references' GroupedBatchSampler makes them (images of similar aspect
    ratio together, so a batch pads little): each index of `sampler` goes to
    its group's buffer (`group_ids[index]`), a full buffer is a batch, and
    len(sampler) // batch_size batches come out each epoch, the fullest
    leftover buffers topped up with their group's indices of the epoch.
    `group_ids`: e.g. aspect_ratio_groups(dataset, k=3). In C++, from
    (seed, epoch) like every feedline sampler (docs/samplers.md)."""

    def __init__(self, sampler, group_ids, batch_size):
        self.sampler = sampler
        self.group_ids = np.asarray(group_ids, dtype=np.int64).ravel().tolist()
        self.batch_size = batch_size
        self._native = _feedline._GroupedBatchSampler(_native(sampler), self.group_ids,
                                                      int(batch_size))
        self._epoch = 0


def aspect_ratio_groups(dataset, k=0):
    """The group of each image by its aspect ratio, as the detection
    references' create_aspect_ratio_groups(dataset, k) gives them: width /
    height against the bins 2 ** linspace(-1, 1, 2k + 1) (k = 0: the one bin
    1). `dataset`: a feedline.vision.datasets.CocoDetection, VOCDetection
    or DetectionShardDataset (their image_sizes: from the annotations or the
    pack's index, no image read) or a (heights, widths) pair."""
    sizes = getattr(getattr(dataset, "_native", None), "image_sizes", None)
    heights, widths = sizes if sizes is not None else dataset
    return _feedline._aspect_ratio_groups(np.asarray(widths, dtype=np.int64).tolist(),
                                          np.asarray(heights, dtype=np.int64).tolist(),
                                          int(k)).tolist()


def resolve_launch(num_replicas=None, rank=None):
    """Where this process stands in a distributed job, without a process group.

    Explicit arguments win; a missing one comes from the launcher's
    environment, first match: torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
    LOCAL_WORLD_SIZE), paddle.distributed.launch (PADDLE_TRAINER_ID,
    PADDLE_TRAINERS_NUM, PADDLE_LOCAL_RANK, PADDLE_LOCAL_SIZE), OpenMPI
    (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE), PMI (PMI_RANK,
    PMI_SIZE); else one process. Returns a dict with rank, world_size,
    local_rank, local_world_size and source. A malformed or inconsistent
    variable raises ValueError naming it (docs/distributed.md)."""
    return _feedline._resolve_launch(
        None if num_replicas is None else int(num_replicas), None if rank is None else int(rank)
    )


class DistributedBatchSampler(BatchSampler):
    """Each of num_replicas ranks gets its share of every epoch's batches
    (paddle.io.DistributedBatchSampler). num_replicas and rank default to the
    launcher's environment (resolve_launch: torchrun, paddle, OpenMPI, PMI),
    else 1 and 0. The shuffle depends on (seed, epoch), so every rank must use
    the same seed; call set_epoch(epoch) before each epoch as with Paddle and
    torch.

    partition="paddle" (default) deals batch-sized blocks round-robin as
    Paddle does; partition="torch" strides by rank as torch's
    DistributedSampler does. pad=False (evaluation) sees every sample exactly
    once over all ranks: no padding, so ranks may get one batch fewer or a
    short last batch. resume=global_position(...) from a job of any world
    size continues that epoch with what no rank has seen (docs/distributed.md).
    """

    def __init__(
        self,
        dataset,
        batch_size,
        num_replicas=None,
        rank=None,
        shuffle=False,
        drop_last=False,
        seed=0,
        partition="paddle",
        pad=True,
        resume=None,
    ):
        self.dataset = dataset
        self.batch_size = batch_size
        self.launch = resolve_launch(num_replicas, rank)
        self.nranks = self.launch["world_size"]
        self.local_rank = self.launch["rank"]
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.partition = partition
        self.pad = pad
        self.epoch = 0
        self._native = _feedline._DistributedBatchSampler(
            len(dataset), batch_size, self.nranks, self.local_rank, shuffle, drop_last, seed,
            partition, pad
        )
        self.num_samples = self._native.num_samples
        if resume is not None:
            self.resume_from(resume)

    def resume_from(self, position):
        """Continues position["epoch"] (from global_position(), taken by a job
        of any world size) with the samples no rank has consumed, split across
        this job's ranks; pins that epoch like set_epoch. Call it on every rank
        before iterating; later epochs are whole. Raises ValueError when the
        position belongs to another dataset size, seed or shuffle."""
        # The global order depends on these only; the world size, rank,
        # partition and padding may change.
        if not isinstance(position, dict) or "epoch" not in position or "position" not in position:
            raise ValueError(
                f"resume_from takes a dict from global_position() with epoch and position, "
                f"got {position!r}"
            )
        for key, mine in (("dataset_size", len(self.dataset)), ("seed", self.seed),
                          ("shuffle", bool(self.shuffle))):
            if key in position and position[key] != mine:
                raise ValueError(
                    f"resume_from: {key} differs: the position was taken with "
                    f"{position[key]!r}, this sampler has {mine!r}"
                )
        epoch = int(position["epoch"])
        self._native.resume_from(epoch, int(position["position"]))
        self.epoch = epoch

    def set_epoch(self, epoch):
        """Fixes the epoch that shuffles the next pass. It is also the
        loader's epoch (one source: loader.epoch and state_dict() report it,
        and a loader.set_epoch with another value raises ValueError);
        set_epoch(-1) lets the loader count epochs again."""
        self.epoch = int(epoch)
        self._native.set_epoch(self.epoch)

    def global_position(self, state=None, epoch=None):
        """The epoch's samples consumed over all ranks, for a checkpoint that
        a job with another world size can resume from (resume=...).

        `state` is the loader's state_dict() (its epoch and next_batch), or the
        number of batches every rank has taken of `epoch` (default: the
        current one). Every rank must have taken the same number; the result is
        a small dict (epoch, position, epoch_start, dataset_size, seed, shuffle)."""
        if isinstance(state, dict):
            for key, mine in (("num_replicas", self.nranks), ("rank", self.local_rank)):
                if key in state and state[key] != mine:
                    raise ValueError(
                        f"global_position: the state's {key} is {state[key]}, this sampler's "
                        f"is {mine}"
                    )
            epoch, batches_done = int(state["epoch"]), int(state["next_batch"])
        else:
            batches_done = 0 if state is None else int(state)
            epoch = self.epoch if epoch is None else int(epoch)
        return {
            "epoch": epoch,
            "position": self._native.global_position(epoch, batches_done),
            # Where this epoch began: > 0 when it was itself resumed.
            "epoch_start": self._native.global_position(epoch, 0),
            "dataset_size": len(self.dataset),
            "seed": self.seed,
            "shuffle": bool(self.shuffle),
        }

    def valid_masks(self, epoch=None):
        """One bool array per batch of `epoch` (default: the current one),
        aligned with this rank's batches: False for padding rows that repeat a
        sample. Over all ranks the True rows are each sample exactly once, so
        an evaluation can keep pad=True (equal steps on every rank) and still
        count exactly: sum only the rows whose mask is True."""
        epoch = self.epoch if epoch is None else int(epoch)
        mask = self._native.valid_mask(epoch)
        _, offsets = self._native.plan(epoch)
        return [mask[offsets[b]:offsets[b + 1]] for b in range(len(offsets) - 1)]

    def _position_to_restore(self, state):
        # A state taken by another world size (or rank) continues from the
        # global position: this sampler splits the rest of that epoch, and the
        # loader starts it at batch 0. Otherwise the exact, fingerprinted path,
        # which refuses a different num_replicas or rank.
        state = dict(state)
        position = state.pop("global_position", None)
        mine = (self.nranks, self.local_rank)
        other_job = (state.get("num_replicas", mine[0]), state.get("rank", mine[1])) != mine
        if position is None:
            return state
        if not other_job:
            # The same job: the exact path. An epoch that was itself resumed
            # (epoch_start > 0) must be cut the same way for its digest to match.
            if position.get("epoch_start", 0) > 0 and position.get("epoch") == state.get("epoch"):
                self.resume_from(dict(position, position=position["epoch_start"]))
            return state
        if position.get("epoch") != state.get("epoch"):
            raise ValueError(
                f"load_state_dict: global_position is of epoch {position.get('epoch')}, the "
                f"state of epoch {state.get('epoch')}"
            )
        self.resume_from(position)
        return {"epoch": int(position["epoch"]), "next_batch": 0}

    def _next_epoch(self):
        return self.epoch
