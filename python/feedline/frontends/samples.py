"""The samples a user's collate_fn receives: as the dataset returned them
(their namedtuples, Python numbers, numpy scalars and tensors restored from
the sample's schema, frontends/_shaping.py), as the framework's own loader
hands them to a collate_fn."""

import weakref

from feedline.frontends import _shaping


def _first_sample(collate_fn):
    """collate_fn called with the one sample of a batch (batch_size=None)."""
    return lambda samples: collate_fn(samples[0])


class SamplesAsReturned:
    """Calls `collate_fn` with the samples restored by `policy` (the front
    end's Shaping). `per_sample` (Paddle's batch_size=None): collate_fn gets
    each sample alone."""

    def __init__(self, loader, collate_fn, policy, per_sample=False):
        # Weakly: the native loader holds this function, and a strong
        # reference back would be a cycle through C++ that Python's garbage
        # collector cannot see (the loader, its workers and shared memory
        # would never be freed).
        self.loader = weakref.ref(loader)
        self.collate_fn = collate_fn
        self.policy = policy
        self.per_sample = per_sample
        self.tree = None
        # What a worker process calls with the samples it loaded, which are
        # as the dataset returned them (docs/python.md, "collate_fn").
        self.in_worker = _first_sample(collate_fn) if per_sample else collate_fn

    def __call__(self, samples):
        loader = self.loader()
        if self.tree is None and loader is not None:
            # False when there is no schema or a class cannot be found.
            self.tree = _shaping.load_tree(loader._loader) or False
        if self.tree and loader is not None:
            to_tensor = loader._to_tensor
            samples = [_shaping.restore_sample(s, self.tree, to_tensor, self.policy)
                       for s in samples]
        if self.per_sample:
            return self.collate_fn(samples[0])
        return self.collate_fn(samples)
