"""A sample's schema: the typed description of its tree that the engine
records from the first sample (feedline._feedline.SampleSchema), that worker
processes send their parent as data, and that shapes batches. Field names
are plain paths; no character of a key is reserved."""

import collections

import numpy as np
import pytest

import feedline
from feedline import _feedline, io
from feedline.vision import datasets
from feedline.vision import transforms as T

from conftest import image_folder

MODES = [dict(num_workers=0), dict(num_workers=2, worker_mode="thread"),
         dict(num_workers=2, worker_mode="process")]
MODE_IDS = ["no-workers", "threads", "processes"]

Record = collections.namedtuple("Record", ["image", "meta", "label"])


class Holder:
    # A namedtuple made in a class body: its qualified name is not where its
    # module holds it (Holder.Inner), yet it is found.
    Inner = collections.namedtuple("Inner", ["a", "b"])


class Records(io.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        meta = {"box": np.arange(4, dtype=np.float32) + i, "name": f"r{i}", "id": np.int64(i)}
        return Record(np.full((2, 2), i, np.uint8), meta, i)


def schema_of(loader):
    next(iter(loader))
    return loader._loader.sample_schema()


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_the_first_samples_schema_is_an_object_with_typed_nodes(mode):
    with feedline.DataLoader(Records(), batch_size=4, **mode) as loader:
        schema = schema_of(loader)
    assert isinstance(schema, _feedline.SampleSchema)
    root = schema.root
    assert root.kind == "namedtuple"
    assert (root.type_module, root.type_qualname, root.type_locatable) == (
        __name__, "Record", True)
    assert [c.key for c in root.children] == ["image", "meta", "label"]
    image, meta, label = root.children
    assert (image.kind, image.dtype, image.leaf_type) == ("tensor", "u8", "numpy")
    assert (label.kind, label.leaf_type) == ("scalar", "int")
    assert meta.kind == "dict" and [c.key for c in meta.children] == ["box", "name", "id"]
    box, name, index = meta.children
    assert (box.kind, box.dtype, box.path) == ("tensor", "f32", '1["box"]')
    assert (name.kind, name.leaf_type) == ("object", "object")
    assert index.leaf_type == "numpy-scalar"
    assert schema.fields == ["0", '1["box"]', '1["name"]', '1["id"]', "2"]


def test_a_worker_process_sends_the_schema_a_thread_records():
    with feedline.DataLoader(Records(), batch_size=4, num_workers=0) as loader:
        here = schema_of(loader)
    with feedline.DataLoader(Records(), batch_size=4, num_workers=2,
                             worker_mode="process") as loader:
        there = schema_of(loader)
    assert here == there
    assert here != "a schema"


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_field_names_are_plain_paths(mode):
    with feedline.DataLoader(Records(), batch_size=4, **mode) as loader:
        next(iter(loader))
        kind, names = loader._loader.structure()
    assert kind == "tuple"
    assert names == ["0", '1["box"]', '1["name"]', '1["id"]', "2"]
    assert not any(c in name for name in names for c in "\x1e\x1f")


def test_a_namedtuple_of_a_class_body_is_located():
    class Inner(io.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return Holder.Inner(np.zeros(2), i)

    with feedline.DataLoader(Inner(), batch_size=2, num_workers=2,
                             worker_mode="process") as loader:
        root = schema_of(loader).root
    assert (root.type_module, root.type_qualname, root.type_locatable) == (
        __name__, "Holder.Inner", True)


def test_a_class_defined_in_a_function_is_named_but_not_locatable():
    Local = collections.namedtuple("Local", ["x", "y"])

    class Locals(io.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return Local(np.zeros(2), i)

    with feedline.DataLoader(Locals(), batch_size=2) as loader:
        root = schema_of(loader).root
    assert root.kind == "namedtuple" and root.type_qualname.endswith("Local")
    assert root.type_locatable is False


def test_a_native_datasets_declared_fields_have_no_sample_schema(tmp_path_factory):
    # Its batches are shaped by the fields it declares; a front end keeps
    # its own shapes for them.
    folder = image_folder(tmp_path_factory, "images", 4, classes=2, seed=3)
    data = datasets.ImageFolder(folder, transform=T.Compose([T.Resize((8, 8)), T.ToTensor()]))
    with feedline.DataLoader(data, batch_size=2) as loader:
        batch = next(iter(loader))
        assert loader._loader.sample_schema() is None
        kind, names = loader._loader.structure()
    assert kind == "tuple" and len(batch) >= 2 and names[:1] == ["image"]


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_torch_batches_keep_a_located_namedtuple_and_fall_back_for_a_local_one(mode):
    import torch

    from feedline.torch import DataLoader as TorchLoader

    with TorchLoader(Records(), batch_size=4, **mode) as loader:
        batch = next(iter(loader))
    assert type(batch) is Record
    assert torch.equal(batch.meta["box"][:, 0], torch.tensor([0.0, 1.0, 2.0, 3.0]))
    assert batch.meta["name"] == ["r0", "r1", "r2", "r3"]

    Local = collections.namedtuple("Local", ["x", "y"])

    class Locals(io.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return Local(np.zeros(2), i)

    # Its class cannot be found by name: feedline's own shapes, as before
    # the schema (tuples become lists).
    with TorchLoader(Locals(), batch_size=2, **mode) as loader:
        batch = next(iter(loader))
    assert type(batch) is list and len(batch) == 2
    assert torch.equal(batch[1], torch.tensor([0, 1]))
