"""Batches shaped by the sample's schema, as a framework's own collate
shapes them. The engine records the first sample's schema
(feedline._feedline.SampleSchema: containers, their classes, each leaf's
kind); load_tree turns it into a tree with the classes resolved, and shape
and restore_sample walk it. What differs between frameworks (whether a
namedtuple stays one, how a leaf becomes a tensor) is a Shaping policy each
front end supplies."""

import numpy as np

from feedline import _feedline, _sample_types

# A batch field handed out for DLPack (feedline._feedline.BatchArray).
BatchArray = _feedline.BatchArray


def numpy_leaves(value):
    """`value` with every BatchArray in its tuples, lists and dicts made a
    numpy array: what a policy leaves as it is (a leaf's value that came
    with fields of its own) stays what it was before DLPack."""
    if isinstance(value, BatchArray):
        return value.numpy()
    if type(value) in (tuple, list):
        return type(value)(numpy_leaves(v) for v in value)
    if type(value) is dict:
        return {k: numpy_leaves(v) for k, v in value.items()}
    return value


def load_tree(native_loader):
    """The first sample's schema as a tree of ("leaf", kind),
    ("tuple", cls, [children]), ("list", list, [children]) and
    ("dict", cls, {key: child}), kind as the schema's leaf_type ("numpy",
    "numpy-scalar", "int", "float", "bool", "tensor", "paddle-tensor",
    "object"). None when there is none (a native dataset's batch, no sample
    yet) or a container class cannot be found (one defined inside a
    function, or gone since): batches then keep feedline's shapes."""
    get = getattr(native_loader, "sample_schema", None)
    schema = get() if get is not None else None
    if schema is None:
        return None
    try:
        return _tree(schema.root)
    except (LookupError, ImportError, AttributeError):
        return None


def _tree(node):
    kind = node.kind
    if node.is_leaf:
        if kind == "object":
            return ("leaf", "object")
        if kind == "bfloat16":
            return ("leaf", "tensor")
        leaf_type = node.leaf_type
        return ("leaf", "numpy" if leaf_type == "declared" else leaf_type)
    children = node.children
    if kind == "dict":
        return ("dict", _class(node, dict), {c.key: _tree(c) for c in children})
    if kind == "list":
        return ("list", list, [_tree(c) for c in children])
    return ("tuple", _class(node, tuple), [_tree(c) for c in children])


def _class(node, builtin):
    if not node.type_module and not node.type_qualname:
        return builtin
    if not node.type_locatable:
        raise LookupError(f"{node.type_module}.{node.type_qualname} cannot be found by name")
    return _sample_types.resolve(node.type_module, node.type_qualname)


class Shaping:
    """What a framework's collate makes of containers and leaves. The
    defaults are Paddle's: sequences become lists, mappings plain dicts."""

    def sequence(self, cls, parts, extras):
        return parts + extras

    def mapping(self, cls, items):
        return items

    def in_sequence(self, part, tree, unbatched):
        return part

    def leaf(self, value, kind, unbatched, to_tensor):
        raise NotImplementedError

    def restore_leaf(self, value, kind, to_tensor):
        raise NotImplementedError


def as_mapping(cls, items):
    """`items` (a dict) as the sample's mapping class, when that class can
    be made from a dict (torch's collate tries the same, else a dict)."""
    if cls is dict:
        return items
    try:
        return cls(items)
    except TypeError:
        return items


def shape(batch, tree, unbatched, to_tensor, policy):
    """`batch` (feedline's nesting of tuples, dicts and leaves) shaped by the
    sample's tree. `to_tensor` turns a numpy array into the delivered
    tensor."""
    kind = tree[0]
    if kind == "leaf":
        return policy.leaf(batch, tree[1], unbatched, to_tensor)
    if kind in ("tuple", "list"):
        cls, children = tree[1], tree[2]
        values = list(batch) if isinstance(batch, (tuple, list)) else [batch]
        parts = [policy.in_sequence(shape(v, c, unbatched, to_tensor, policy), c, unbatched)
                 for v, c in zip(values, children)]
        # Arrays the loader adds after the sample's elements ("<i>_lengths",
        # the "replaced" mask) follow, converted.
        extras = [policy.leaf(v, "numpy", False, to_tensor) for v in values[len(children):]]
        return policy.sequence(cls, parts, extras)
    if kind == "dict":
        cls, children = tree[1], tree[2]
        out = {}
        for key, value in batch.items():
            child = children.get(key)
            out[key] = (shape(value, child, unbatched, to_tensor, policy) if child is not None
                        else policy.leaf(value, "numpy", False, to_tensor))
        return policy.mapping(cls, out)
    raise ValueError(f"unknown schema kind {kind!r}")


def restore_sample(sample, tree, to_tensor, policy):
    """One sample as its dataset returned it, from the copy feedline hands a
    collate_fn (tuples, dicts and numpy values): the namedtuple or dict
    class, lists and tuples, Python numbers and numpy scalars restored, and
    tensors as the policy makes them."""
    kind = tree[0]
    if kind == "leaf":
        return policy.restore_leaf(sample, tree[1], to_tensor)
    if kind in ("tuple", "list"):
        cls, children = tree[1], tree[2]
        values = list(sample) if isinstance(sample, (tuple, list)) else [sample]
        parts = [restore_sample(v, c, to_tensor, policy) for v, c in zip(values, children)]
        if cls is list:
            return parts
        if cls is tuple:
            return tuple(parts)
        return cls(*parts)  # a namedtuple
    if kind == "dict":
        cls, children = tree[1], tree[2]
        out = {k: restore_sample(v, children[k], to_tensor, policy) if k in children else v
               for k, v in sample.items()}
        return as_mapping(cls, out)
    raise ValueError(f"unknown schema kind {kind!r}")


def restore_number(value, kind):
    """A sample's numpy value as the dataset gave it, for a Python number or
    a numpy scalar (`kind`); any other value as it is."""
    if kind in ("int", "float", "bool"):
        return value.item()
    if kind == "numpy-scalar":
        return value[()] if isinstance(value, np.ndarray) else value
    return value
