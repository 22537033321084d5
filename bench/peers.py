#!/usr/bin/env python3
"""feedline side by side with the data loaders users would pick instead.

The same four jobs over the same folder of JPEGs on the same cores, batch 64,
2 workers (or threads) for every loader that has them, each loader set up as
its own documentation recommends for the job (docs/peers.md says how, per
loader):

  train       RandomResizedCrop 224 + horizontal flip + normalize, float32 CHW
  val         Resize 256 (shorter side) + CenterCrop 224 + normalize
  python      a user's Python __getitem__: PIL open + convert + resize to
              224x224 + float32 CHW in [0, 1] (for the loaders that take
              Python datasets)
  paddleclas  PaddleClas's ImageNet training pipeline written as a Python
              dataset (cv2 decode to RGB, RandCropImage 224, RandFlipImage,
              NormalizeImage, CHW) under paddle.io.DataLoader and
              feedline.paddle.DataLoader with num_workers 0 and 2

Each measured run is one loader on one job in a child process of its own
(`--child JOB LOADER`), which imports what the loader needs, builds the
dataset and the loader, and loads --epochs epochs of N // 64 full batches.
The child enters a fresh memory cgroup and a fresh cpuacct cgroup before it
execs (cgroup v1, root needed), so its worker processes and threads are in
them too. Printed per row:

  images/s        the images of epochs 2.. over their wall time (the first
                  epoch pays for starting workers, building pipelines,
                  faulting memory in)
  CPU ms/image    user + system time of the whole group (every process and
                  thread of the job) over the same epochs, per image
  peak memory     the memory cgroup's max_usage_in_bytes over the whole job:
                  anonymous and shared memory, page cache it brought in,
                  kernel memory, each page once (the JPEGs and the libraries
                  are read before the runs, outside the groups, so no loader
                  is charged for them)
  after imports   the group's usage once the imports are done, before the
                  dataset and the loader exist (the framework's own cost)
  first batch     seconds from building the dataset and the loader to the
                  first batch (imports not included)

Rounds alternate: every loader runs once per round, in an order that rotates
from round to round; medians over the rounds are printed, with min-max of the
rate. A loader that cannot run here is printed with its error. Where no
cgroup can be made, ru_maxrss of the child tree (its largest process, from
getrusage of the reaped children) and its CPU time stand in, and the header
says so.

The loaders run in three interpreters: the venv (.venv: torch 2.13 CPU,
torchdata, DALI, SPDL, Grain, paddle; no torchvision imports beside torch
2.13 CPU), Debian's /usr/bin/python3 (torch 1.13 + torchvision 0.14, the
README's historical baseline) and, when `make bench-peers` made it,
.venv/peer-torchvision (torch 2.14.1 + torchvision 0.29.1 from the machine's
disk, a CUDA build run on the CPU).

Usage: bench/peers.py [--data DIR] [--rounds 3] [--jobs train,val,python,paddleclas]
                      [--loaders REGEX] [--wait-quiet 600] [--json FILE]
"""
import argparse
import datetime
import json
import math
import os
import platform
import random
import re
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from machine import cpu_model  # noqa: E402  (bench/machine.py)

BATCH = 64
SIZE = 224
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
INTERPRETERS = {
    "venv": os.path.join(ROOT, ".venv", "bin", "python"),
    "debian": "/usr/bin/python3",
    "torchvision": os.path.join(ROOT, ".venv", "peer-torchvision", "bin", "python"),
}
JOBS = {
    "train": "train: RandomResizedCrop 224 + flip + normalize, float32 CHW",
    "val": "val: Resize 256 + CenterCrop 224 + normalize, float32 CHW",
    "python": "python: a Python __getitem__ (PIL decode + resize 224, float32 CHW)",
    "paddleclas": "paddleclas: PaddleClas ImageNet ops (cv2 decode, RandCropImage, "
                  "RandFlipImage, NormalizeImage) as a Python dataset",
}


# --------------------------------------------------------------------------
# The data: one folder, listed the way torchvision's ImageFolder lists it.
# --------------------------------------------------------------------------

def list_folder(root):
    """[(path, label)]: class folders in sorted order, files sorted in each."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    items = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for file in sorted(os.listdir(folder)):
            if file.lower().endswith((".jpg", ".jpeg")):
                items.append((os.path.join(folder, file), label))
    return items


def normalize_hwc(array):
    """uint8 HWC -> float32 CHW, (x / 255 - mean) / std (ToTensor + Normalize)."""
    import numpy as np
    scale = np.array([1.0 / (255.0 * s) for s in STD], dtype=np.float32)
    shift = np.array([m / s for m, s in zip(MEAN, STD)], dtype=np.float32)
    out = array.astype(np.float32) * scale - shift
    return np.ascontiguousarray(out.transpose(2, 0, 1))


def crop_box(width, height, rand, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """RandomResizedCrop's box as torchvision defines it: an area fraction
    uniform in `scale`, an aspect ratio log-uniform in `ratio`, 10 tries,
    then the largest centred box within `ratio`. Returns (left, top, w, h)."""
    area = width * height
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target = area * rand.uniform(scale[0], scale[1])
        aspect = math.exp(rand.uniform(log_lo, log_hi))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rand.randint(0, width - w), rand.randint(0, height - h), w, h
    if width / height < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif width / height > ratio[1]:
        w, h = int(round(height * ratio[1])), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def shorter_side(width, height, target=256):
    """torchvision Resize(int): the shorter side to `target`, the other scaled
    and truncated."""
    if width <= height:
        return target, int(target * height / width)
    return int(target * width / height), target


# --------------------------------------------------------------------------
# PIL transforms, written here for the loaders that bring no image ops
# (torch 2.13 without torchvision, torchdata, Grain): torchvision's
# RandomResizedCrop / Resize / CenterCrop / ToTensor / Normalize on PIL.
# --------------------------------------------------------------------------

def pil_train(path, rand):
    from PIL import Image
    with Image.open(path) as image:
        image = image.convert("RGB")
    left, top, w, h = crop_box(image.width, image.height, rand)
    image = image.resize((SIZE, SIZE), Image.BILINEAR, box=(left, top, left + w, top + h))
    if rand.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    import numpy as np
    return normalize_hwc(np.asarray(image))


def pil_val(path, rand=None):
    from PIL import Image
    with Image.open(path) as image:
        image = image.convert("RGB")
    w, h = shorter_side(image.width, image.height)
    image = image.resize((w, h), Image.BILINEAR)
    left, top = int(round((w - SIZE) / 2.0)), int(round((h - SIZE) / 2.0))
    image = image.crop((left, top, left + SIZE, top + SIZE))
    import numpy as np
    return normalize_hwc(np.asarray(image))


class PilFolder:
    """A map-style dataset: (float32 CHW, int64 label) through pil_train or
    pil_val. The random draws use Python's `random`, which torch's and
    paddle's workers seed per worker."""

    def __init__(self, root, job):
        self.items = list_folder(root)
        self.fn = pil_train if job == "train" else pil_val

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        import numpy as np
        path, label = self.items[index]
        return self.fn(path, random), np.int64(label)


class UserDataset:
    """Job "python": what a user writes (the Paddle article's dataset): PIL
    open + convert("RGB") + resize to 224x224 + float32 CHW in [0, 1]."""

    def __init__(self, root):
        self.items = list_folder(root)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        import numpy as np
        from PIL import Image
        path, label = self.items[index]
        with Image.open(path) as image:
            image = image.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
        array = np.asarray(image, dtype=np.float32) / 255.0
        return np.ascontiguousarray(array.transpose(2, 0, 1)), np.int64(label)


# --------------------------------------------------------------------------
# Job "paddleclas": PaddleClas's ImageNet training ops (ppcls/configs
# ImageNet/ResNet/ResNet50.yaml: DecodeImage to RGB, RandCropImage size 224,
# RandFlipImage flip_code 1, NormalizeImage scale 1/255 with ImageNet
# mean/std), written here from their documented behaviour, as a dataset of
# the kind PaddleClas hands to paddle.io.DataLoader.
# --------------------------------------------------------------------------

class PaddleClasImageNet:
    def __init__(self, root):
        import numpy as np
        self.items = list_folder(root)
        self.mean = np.array(MEAN, dtype=np.float32).reshape(1, 1, 3)
        self.std = np.array(STD, dtype=np.float32).reshape(1, 1, 3)

    def __len__(self):
        return len(self.items)

    @staticmethod
    def rand_crop(image, size=SIZE, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
        # One draw, no retries: an aspect ratio whose square root is uniform,
        # an area fraction bounded so that the box fits, a uniform position;
        # the box resized to size x size (cv2, bilinear).
        import cv2
        height, width = image.shape[:2]
        aspect = math.sqrt(random.uniform(*ratio))
        w_unit, h_unit = aspect, 1.0 / aspect
        fits = min((width / height) / (w_unit * w_unit), (height / width) / (h_unit * h_unit))
        area = width * height * random.uniform(min(scale[0], fits), min(scale[1], fits))
        side = math.sqrt(area)
        w, h = int(side * w_unit), int(side * h_unit)
        left, top = random.randint(0, width - w), random.randint(0, height - h)
        return cv2.resize(image[top:top + h, left:left + w], (size, size),
                          interpolation=cv2.INTER_LINEAR)

    def __getitem__(self, index):
        import cv2
        import numpy as np
        path, label = self.items[index]
        with open(path, "rb") as f:
            data = np.frombuffer(f.read(), dtype=np.uint8)
        image = cv2.cvtColor(cv2.imdecode(data, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        image = self.rand_crop(image)
        if random.randint(0, 1) == 1:
            image = cv2.flip(image, 1)
        image = (image.astype(np.float32) * np.float32(1.0 / 255.0) - self.mean) / self.std
        return np.ascontiguousarray(image.transpose(2, 0, 1)), np.int64(label)


# --------------------------------------------------------------------------
# The loaders. Each `make_*` returns a function epoch(e) -> iterable of
# batches (or a stream, for the loaders that run epochs back to back); the
# child takes N // 64 batches per epoch from it.
# --------------------------------------------------------------------------

NOTES = {}  # what the child learned about the path a loader took


def note_feedline(loader):
    """How a feedline loader runs the dataset: worker mode, native or not."""
    NOTES["worker_mode"] = getattr(loader, "worker_mode", None)
    NOTES["num_workers"] = getattr(loader, "num_workers", None)
    try:
        native = loader.stats().get("native_transforms")
    except Exception:  # noqa: BLE001
        native = None
    if isinstance(native, dict):
        native = native.get("text")
    NOTES["native_transforms"] = native


def epochs_of(iterable_factory):
    """A loader whose iteration is one epoch (torch-style)."""
    return lambda epoch: iterable_factory(epoch)


def stream_of(iterator):
    """A loader that streams all epochs back to back (Grain, SPDL)."""
    return lambda epoch: iterator


def make_feedline(job, root, workers, epochs):
    import feedline
    from feedline.vision import datasets
    if job == "python":
        dataset = UserDataset(root)
    else:
        dataset = datasets.ImageFolder(root, transform=feedline_transform(job))
    loader = feedline.DataLoader(dataset, batch_size=BATCH, shuffle=job == "train",
                                 num_workers=workers, persistent_workers=workers > 0,
                                 drop_last=True)
    note_feedline(loader)

    def epoch(e):
        loader.set_epoch(e)
        return loader
    return epoch


def feedline_transform(job):
    from feedline.vision import transforms as T
    if job == "train":
        steps = [T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip()]
    else:
        steps = [T.Resize(256), T.CenterCrop(SIZE)]
    return T.Compose(steps + [T.ToTensor(), T.Normalize(list(MEAN), list(STD))])


def make_feedline_torch(job, root, workers, epochs):
    """feedline.torch.DataLoader: the one-line swap. Where torchvision
    imports, over torchvision's own ImageFolder + transforms (lowered to the
    native pipeline); else over feedline.vision's ImageFolder."""
    import feedline.torch
    if job == "python":
        dataset = UserDataset(root)
    else:
        try:
            dataset = torchvision_folder(job, root, v2_tensors=False)
        except ImportError:
            from feedline.vision import datasets
            dataset = datasets.ImageFolder(root, transform=feedline_transform(job))
    loader = feedline.torch.DataLoader(dataset, batch_size=BATCH, shuffle=job == "train",
                                       num_workers=workers, persistent_workers=workers > 0,
                                       drop_last=True)
    note_feedline(loader)
    return epochs_of(lambda e: loader)


def torchvision_folder(job, root, v2_tensors):
    """torchvision.datasets.ImageFolder as its documentation writes it. With
    v2_tensors: decode_image (libjpeg-turbo) to a uint8 tensor and the v2
    transforms on it, the path torchvision's "performance considerations"
    recommend; else the PIL loader and the classic transforms."""
    import torch
    import torchvision
    if v2_tensors:
        from torchvision.io import ImageReadMode, decode_image
        from torchvision.transforms import v2 as T

        def loader(path):
            return decode_image(path, mode=ImageReadMode.RGB)
        if job == "train":
            steps = [T.RandomResizedCrop(SIZE, antialias=True), T.RandomHorizontalFlip()]
        else:
            steps = [T.Resize(256, antialias=True), T.CenterCrop(SIZE)]
        transform = T.Compose(steps + [T.ToDtype(torch.float32, scale=True),
                                       T.Normalize(list(MEAN), list(STD))])
        return torchvision.datasets.ImageFolder(root, transform=transform, loader=loader)
    from torchvision import transforms as T
    if job == "train":
        steps = [T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip()]
    else:
        steps = [T.Resize(256), T.CenterCrop(SIZE)]
    transform = T.Compose(steps + [T.ToTensor(), T.Normalize(list(MEAN), list(STD))])
    return torchvision.datasets.ImageFolder(root, transform=transform)


def make_feedline_paddle(job, root, workers, epochs, dataset_job=None):
    """feedline.paddle.DataLoader with paddle.io.DataLoader's arguments, over
    the dataset paddle.io gets in the same row (or that of `dataset_job`:
    "train" gives paddle.vision's DatasetFolder with RandomResizedCrop, which
    feedline.paddle loads natively)."""
    import feedline.paddle
    dataset = paddle_dataset(dataset_job or job, root)
    loader = feedline.paddle.DataLoader(dataset, batch_size=BATCH, shuffle=job != "val",
                                        num_workers=workers, drop_last=True,
                                        use_shared_memory=True,
                                        persistent_workers=workers > 0 and job != "paddleclas")
    note_feedline(loader)
    return epochs_of(lambda e: loader)


def paddle_dataset(job, root):
    if job == "python":
        return UserDataset(root)
    if job == "paddleclas":
        return PaddleClasImageNet(root)
    import paddle.vision.transforms as T
    from paddle.vision.datasets import DatasetFolder
    if job == "train":
        steps = [T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip()]
    else:
        steps = [T.Resize(256), T.CenterCrop(SIZE)]
    transform = T.Compose(steps + [T.ToTensor(), T.Normalize(list(MEAN), list(STD))])
    return DatasetFolder(root, transform=transform)


def make_paddle(job, root, workers, epochs):
    """paddle.io.DataLoader. For train / val: paddle.vision's DatasetFolder
    and transforms (its documented image path, PIL backend); for paddleclas
    PaddleClas's own settings: shared memory, no persistent workers."""
    import paddle
    paddle.set_device("cpu")
    dataset = paddle_dataset(job, root)
    loader = paddle.io.DataLoader(dataset, batch_size=BATCH, shuffle=job != "val",
                                  num_workers=workers, drop_last=True, return_list=True,
                                  use_shared_memory=True,
                                  persistent_workers=workers > 0 and job != "paddleclas")
    return epochs_of(lambda e: loader)


def torch_dataset(job, root):
    if job == "python":
        return UserDataset(root)
    if job == "paddleclas":
        return PaddleClasImageNet(root)
    return PilFolder(root, job)


def make_torch(job, root, workers, epochs):
    """torch.utils.data.DataLoader, 2 worker processes, persistent (torch
    2.13 CPU in the venv: the PIL transforms above, torchvision not being
    importable there)."""
    import torch
    loader = torch.utils.data.DataLoader(torch_dataset(job, root), batch_size=BATCH,
                                         shuffle=job == "train", num_workers=workers,
                                         persistent_workers=workers > 0, drop_last=True)
    return epochs_of(lambda e: loader)


def make_torchvision(job, root, workers, epochs, v2_tensors=False):
    """torch DataLoader over torchvision's ImageFolder (Debian's torch 1.13 +
    torchvision 0.14 with PIL; or torch 2.14 + torchvision 0.29)."""
    import torch
    dataset = torchvision_folder(job, root, v2_tensors)
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=job == "train",
                                         num_workers=workers, persistent_workers=workers > 0,
                                         drop_last=True)
    return epochs_of(lambda e: loader)


def make_torchdata(job, root, workers, epochs):
    """torchdata's StatefulDataLoader: torch's DataLoader with state_dict();
    its defaults (a snapshot every step)."""
    from torchdata.stateful_dataloader import StatefulDataLoader
    loader = StatefulDataLoader(torch_dataset(job, root), batch_size=BATCH,
                                shuffle=job == "train", num_workers=workers,
                                persistent_workers=workers > 0, drop_last=True)
    return epochs_of(lambda e: loader)


def make_dali(job, root, workers, epochs):
    """A CPU-only DALI pipeline (device_id=None, every operator on the CPU),
    DALI's ResNet-50 recipe: fn.readers.file, decoders.image_random_crop
    (decodes the crop's region only) + resize for train, decoders.image +
    resize(resize_shorter) for val, crop_mirror_normalize to float32 CHW;
    num_threads=2; batches handed to PyTorch by DALIGenericIterator. For the
    python job: fn.external_source(parallel=True) with 2 Python workers."""
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    mean = [m * 255 for m in MEAN]
    std = [s * 255 for s in STD]
    if job == "python":
        source = DaliPythonSource(root, epochs)

        @pipeline_def(batch_size=BATCH, num_threads=workers, device_id=None, seed=1,
                      py_num_workers=workers, py_start_method="fork")
        def python_pipeline():
            images, labels = fn.external_source(source=source, num_outputs=2, parallel=True,
                                                batch=False, dtype=[types.FLOAT, types.INT64])
            return images, labels
        pipe = python_pipeline()
        pipe.build()
        iterator = DALIGenericIterator(pipe, ["images", "labels"],
                                       last_batch_policy=LastBatchPolicy.DROP, auto_reset=True)
        return epochs_of(lambda e: iterator)

    @pipeline_def(batch_size=BATCH, num_threads=workers, device_id=None, seed=1)
    def image_pipeline():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=job == "train",
                                        name="Reader")
        if job == "train":
            images = fn.decoders.image_random_crop(
                jpegs, device="cpu", output_type=types.RGB, random_area=[0.08, 1.0],
                random_aspect_ratio=[3 / 4, 4 / 3], num_attempts=10)
            images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
            mirror = fn.random.coin_flip(probability=0.5)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                              mean=mean, std=std, mirror=mirror)
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.resize(images, resize_shorter=256)
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                              crop=(SIZE, SIZE), mean=mean, std=std)
        return images, labels
    pipe = image_pipeline()
    pipe.build()
    iterator = DALIGenericIterator(pipe, ["images", "labels"], reader_name="Reader",
                                   last_batch_policy=LastBatchPolicy.DROP, auto_reset=True)
    return epochs_of(lambda e: iterator)


class DaliPythonSource:
    """The user's dataset as a per-sample external_source callback: sample
    idx_in_epoch of a per-epoch permutation; StopIteration ends the epoch."""

    def __init__(self, root, epochs):
        self.dataset = UserDataset(root)
        self.full = len(self.dataset) // BATCH * BATCH
        self.orders = {}

    def __call__(self, info):
        import numpy as np
        if info.idx_in_epoch >= self.full:
            raise StopIteration
        order = self.orders.get(info.epoch_idx)
        if order is None:
            order = list(range(len(self.dataset)))
            random.Random(info.epoch_idx).shuffle(order)
            self.orders = {info.epoch_idx: order}
        image, label = self.dataset[order[info.idx_in_epoch]]
        return image, np.array(label, dtype=np.int64)  # DALI takes arrays, not numpy scalars


def make_spdl(job, root, workers, epochs):
    """SPDL: a thread-based pipeline (PipelineBuilder, num_threads=2), images
    decoded by SPDL's FFmpeg binding. train: each image demuxed, decoded
    through a filter graph (crop, scale to 224 bilinear, optional hflip,
    rgb24) and normalized in a stage with concurrency 2, then batched. val:
    load_image_batch per 64 files (scale the shorter side to 256, centre crop
    224), then normalized. python: the dataset's __getitem__ as a stage with
    concurrency 2."""
    import numpy as np
    import spdl.io
    from spdl.pipeline import PipelineBuilder
    items = list_folder(root)
    n = len(items)
    rand = random.Random(0)

    def indices():
        for e in range(epochs):
            order = list(range(n))
            if job != "val":
                rand.shuffle(order)
            yield from order

    builder = PipelineBuilder().add_source(indices())
    if job == "python":
        dataset = UserDataset(root)
        builder = builder.pipe(dataset.__getitem__, concurrency=workers, output_order="input")
        builder = builder.aggregate(BATCH, drop_last=True)
        builder = builder.pipe(lambda rows: (np.stack([r[0] for r in rows]),
                                             np.array([r[1] for r in rows])))
    elif job == "train":
        def load(index):
            path, label = items[index]
            local = random.Random(index * 7919 + rand.random())
            packets = spdl.io.demux_image(path)
            left, top, w, h = crop_box(packets.width, packets.height, local)
            flip = ",hflip" if local.random() < 0.5 else ""
            graph = (f"crop={w}:{h}:{left}:{top},scale={SIZE}:{SIZE}:flags=bilinear"
                     f"{flip},format=pix_fmts=rgb24")
            frames = spdl.io.decode_packets(packets, filter_desc=graph)
            image = spdl.io.to_numpy(spdl.io.convert_frames(frames))
            return normalize_hwc(image.reshape(SIZE, SIZE, 3)), label
        builder = builder.pipe(load, concurrency=workers, output_order="input")
        builder = builder.aggregate(BATCH, drop_last=True)
        builder = builder.pipe(lambda rows: (np.stack([r[0] for r in rows]),
                                             np.array([r[1] for r in rows])))
    else:
        graph = ("scale=w='if(lte(iw,ih),256,trunc(256*iw/ih))':"
                 "h='if(lte(iw,ih),trunc(256*ih/iw),256)':flags=bilinear,"
                 f"crop={SIZE}:{SIZE},format=pix_fmts=rgb24")

        def load_batch(index_list):
            buffer = spdl.io.load_image_batch([items[i][0] for i in index_list], width=SIZE,
                                              height=SIZE, filter_desc=graph)
            batch = spdl.io.to_numpy(buffer)
            scale = np.array([1.0 / (255.0 * s) for s in STD], dtype=np.float32)
            shift = np.array([m / s for m, s in zip(MEAN, STD)], dtype=np.float32)
            images = np.ascontiguousarray(
                (batch.astype(np.float32) * scale - shift).transpose(0, 3, 1, 2))
            return images, np.array([items[i][1] for i in index_list])
        builder = builder.aggregate(BATCH, drop_last=True)
        builder = builder.pipe(load_batch, concurrency=workers, output_order="input")
    pipeline = builder.add_sink(3).build(num_threads=workers)
    pipeline.start()
    import atexit
    atexit.register(pipeline.stop)
    return stream_of(pipeline.get_iterator(timeout=300))


def make_grain(job, root, workers, epochs, threads=2):
    """Grain: MapDataset.source(...).shuffle(seed).repeat(epochs)
    .random_map(transform) (Grain's per-record RNG) .batch(64), to an
    IterDataset with ReadOptions(num_threads, prefetch_buffer_size=2 batches)
    and mp_prefetch(MultiprocessingOptions(num_workers=2)). Grain has no
    image ops: the PIL transforms above."""
    import grain.python as grain
    import numpy as np
    if job == "python":
        dataset = grain.MapDataset.source(UserDataset(root)).shuffle(seed=0).repeat(epochs)
    else:
        items = list_folder(root)
        fn = pil_train if job == "train" else pil_val

        class Transform(grain.RandomMapTransform):
            def random_map(self, item, rng):
                path, label = item
                return fn(path, random.Random(int(rng.integers(1 << 62)))), np.int64(label)
        dataset = grain.MapDataset.source(items)
        if job == "train":
            dataset = dataset.shuffle(seed=0)
        dataset = dataset.repeat(epochs).random_map(Transform(), seed=0)
    dataset = dataset.batch(BATCH, drop_remainder=True)
    iterable = dataset.to_iter_dataset(grain.ReadOptions(num_threads=threads,
                                                         prefetch_buffer_size=2))
    iterable = iterable.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers))
    return stream_of(iter(iterable))


# (job, label, interpreter, maker, extra kwargs)
LOADERS = [
    # train and val
    *[(job, label, python, maker, kwargs) for job in ("train", "val") for label, python, maker, kwargs in [
        ("feedline (feedline.DataLoader, native ImageFolder)", "venv", "feedline", {}),
        ("feedline.torch swap (torchvision 0.29 ImageFolder)", "torchvision", "feedline_torch", {}),
        ("feedline.paddle swap (paddle.vision DatasetFolder)", "venv", "feedline_paddle", {}),
        ("torch 2.14 + torchvision 0.29 (decode_image + v2)", "torchvision", "torchvision",
         {"v2_tensors": True}),
        ("torch 2.14 + torchvision 0.29 (PIL)", "torchvision", "torchvision", {}),
        ("torch 1.13 + torchvision 0.14 (PIL, Debian)", "debian", "torchvision", {}),
        ("torch 2.13 DataLoader (PIL)", "venv", "torch", {}),
        ("torchdata 0.11 StatefulDataLoader (PIL)", "venv", "torchdata", {}),
        ("DALI 2.4 (CPU only)", "venv", "dali", {}),
        ("SPDL 0.8 (FFmpeg)", "venv", "spdl", {}),
        ("Grain 0.2.18 (PIL)", "venv", "grain", {}),
        ("paddle.io 3.3 (paddle.vision DatasetFolder)", "venv", "paddle", {}),
    ]],
    # a user's Python __getitem__
    ("python", "feedline (feedline.DataLoader, processes)", "venv", "feedline", {}),
    ("python", "feedline.torch", "venv", "feedline_torch", {}),
    ("python", "feedline.paddle", "venv", "feedline_paddle", {}),
    ("python", "torch 2.13 DataLoader", "venv", "torch", {}),
    ("python", "torchdata 0.11 StatefulDataLoader", "venv", "torchdata", {}),
    ("python", "DALI 2.4 (parallel external_source)", "venv", "dali", {}),
    ("python", "SPDL 0.8 (thread stage)", "venv", "spdl", {}),
    ("python", "Grain 0.2.18", "venv", "grain", {}),
    ("python", "paddle.io 3.3", "venv", "paddle", {}),
    # PaddleClas's pipeline: the seed article's table
    ("paddleclas", "paddle.io 3.3, num_workers=0", "venv", "paddle", {"workers": 0}),
    ("paddleclas", "paddle.io 3.3, num_workers=2", "venv", "paddle", {}),
    ("paddleclas", "feedline.paddle swap, num_workers=0", "venv", "feedline_paddle",
     {"workers": 0}),
    ("paddleclas", "feedline.paddle swap, num_workers=2", "venv", "feedline_paddle", {}),
    ("paddleclas", "feedline.paddle swap, paddle.vision DatasetFolder + RandomResizedCrop + "
                   "flip + normalize instead of PaddleClas's ops, num_workers=2", "venv",
     "feedline_paddle", {"dataset_job": "train"}),
]
MAKERS = {
    "feedline": make_feedline, "feedline_torch": make_feedline_torch,
    "feedline_paddle": make_feedline_paddle, "paddle": make_paddle, "torch": make_torch,
    "torchvision": make_torchvision, "torchdata": make_torchdata, "dali": make_dali,
    "spdl": make_spdl, "grain": make_grain,
}


# --------------------------------------------------------------------------
# The child: one loader, one job, in its own cgroups.
# --------------------------------------------------------------------------

def images_of(batch):
    if isinstance(batch, (list, tuple)) and batch and isinstance(batch[0], dict):
        batch = batch[0]  # DALIGenericIterator: one dict per pipeline
    if isinstance(batch, dict):
        return batch["images"]
    return batch[0]


def descendants():
    """The pids of this process's descendants, children first."""
    found, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop(0)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    kids = [int(c) for c in f.read().split()]
                found += kids
                todo += kids
        except OSError:
            pass
    return found


def group_cpu_seconds(cpuacct):
    """User + system CPU of the child's cpuacct group (every process and
    thread in it, alive or exited), or of this process and its reaped
    children where there is no group."""
    if cpuacct:
        with open(os.path.join(cpuacct, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9
    import resource
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + tree_cpu_seconds()


def tree_cpu_seconds():
    """CPU of the live descendants (the fallback without cgroups)."""
    total, todo = 0, [os.getpid()]
    first = True
    while todo:
        pid = todo.pop()
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            if not first:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
        first = False
    return total / os.sysconf("SC_CLK_TCK")


def group_memory(memory):
    if not memory:
        return None
    with open(os.path.join(memory, "memory.usage_in_bytes")) as f:
        return int(f.read())


def run_child(args):
    job, maker_name = args.child
    kwargs = json.loads(args.kwargs)
    workers = kwargs.pop("workers", args.workers)
    root = args.data
    import numpy  # noqa: F401  (every loader imports it)
    n_batches = len(list_folder(root)) // BATCH
    start = time.perf_counter()
    maker = MAKERS[maker_name]
    import_modules(maker_name, job)
    imported = time.perf_counter()
    after_imports = group_memory(args.memory)
    t0 = time.perf_counter()
    epoch_of = maker(job, root, workers, args.epochs, **kwargs)
    first = None
    marks = []
    shape = dtype = None
    for e in range(args.epochs):
        marks.append((time.perf_counter(), group_cpu_seconds(args.cpuacct)))
        got = 0
        for batch in epoch_of(e):
            if first is None:
                first = time.perf_counter() - t0
                images = images_of(batch)
                shape, dtype = list(images.shape), str(images.dtype)
                if shape != [BATCH, 3, SIZE, SIZE] or "float32" not in dtype:
                    raise RuntimeError(f"the batch is {dtype} {shape}, not float32 "
                                       f"[{BATCH}, 3, {SIZE}, {SIZE}]")
            got += 1
            if got == n_batches or args.first_only:
                break
        if args.first_only:  # a warm-up: the libraries are in the page cache now
            finish({"first_batch_s": first, "shape": shape, "dtype": dtype})
        if got != n_batches:
            raise RuntimeError(f"epoch {e} gave {got} batches, expected {n_batches}")
    marks.append((time.perf_counter(), group_cpu_seconds(args.cpuacct)))
    steady = marks[1:] if len(marks) > 2 else marks
    seconds = steady[-1][0] - steady[0][0]
    cpu = steady[-1][1] - steady[0][1]
    images = n_batches * BATCH * (len(steady) - 1)
    out = {"images_per_s": images / seconds, "cpu_ms_per_image": cpu / images * 1000,
           "first_batch_s": first, "import_s": imported - start,
           "after_imports_bytes": after_imports, "shape": shape, "dtype": dtype,
           "epoch_seconds": [b[0] - a[0] for a, b in zip(marks, marks[1:])],
           "notes": NOTES,
           "versions": versions(maker_name)}
    finish(out)


def finish(out):
    print("PEERS-RESULT " + json.dumps(out), flush=True)
    # The numbers are out. Some loaders' shutdown takes seconds or leaves
    # spawned workers behind once the interpreter is gone (Grain's, Paddle's
    # after os._exit): this run's own processes end here.
    for pid in descendants():
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    os._exit(0)


def import_modules(maker_name, job):
    """The loader's imports, timed apart from the loading."""
    import numpy  # noqa: F401
    import PIL.Image  # noqa: F401
    if maker_name.startswith("feedline"):
        import feedline  # noqa: F401
        import feedline.vision.datasets  # noqa: F401
    if maker_name in ("feedline_torch", "torch", "torchvision", "torchdata", "dali"):
        import torch  # noqa: F401
    if maker_name in ("feedline_torch", "torchvision"):
        try:
            import torchvision  # noqa: F401
        except ImportError:
            pass
    if maker_name in ("paddle", "feedline_paddle"):
        import paddle  # noqa: F401
        import paddle.vision  # noqa: F401
    if maker_name == "dali":
        import nvidia.dali  # noqa: F401
        import nvidia.dali.plugin.pytorch  # noqa: F401
    if maker_name == "spdl":
        import spdl.io  # noqa: F401
        import spdl.pipeline  # noqa: F401
    if maker_name == "grain":
        import grain.python  # noqa: F401
    if maker_name == "torchdata":
        import torchdata.stateful_dataloader  # noqa: F401
    if job == "paddleclas":
        import cv2  # noqa: F401


def versions(maker_name):
    found = {"python": platform.python_version()}
    for name in ("numpy", "PIL", "torch", "torchvision", "torchdata", "paddle", "cv2",
                 "nvidia.dali", "grain", "spdl.io", "feedline"):
        module = sys.modules.get(name)
        if module is not None:
            found[name] = getattr(module, "__version__", "?")
    if "spdl.io" in sys.modules:
        try:
            from importlib.metadata import version
            found["spdl.io"] = version("spdl")
        except Exception:  # noqa: BLE001
            pass
    if "grain" in sys.modules:
        try:
            from importlib.metadata import version
            found["grain"] = version("grain")
        except Exception:  # noqa: BLE001
            pass
    return found


# --------------------------------------------------------------------------
# The parent: cgroups, rounds, the table.
# --------------------------------------------------------------------------

class Cgroups:
    """A fresh memory cgroup and a fresh cpuacct cgroup (v1) for one run, as
    bench/python_workers_vs_torch.py makes them: the child's shell writes its
    pid into both before it execs the interpreter, so everything it starts is
    in them. The memory group is made under this process's own group, so
    the machine's limits on it still hold."""

    MEMORY = "/sys/fs/cgroup/memory"
    CPUACCT = "/sys/fs/cgroup/cpuacct"
    count = 0

    @classmethod
    def unavailable(cls):
        if os.geteuid() != 0:
            return "not root"
        for root, name in ((cls.MEMORY, "memory.max_usage_in_bytes"),
                           (cls.CPUACCT, "cpuacct.usage")):
            if not os.path.exists(os.path.join(root, name)):
                return f"no cgroup v1 {root}/{name}"
        return None

    @classmethod
    def own(cls, controller):
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, names, path = line.rstrip("\n").split(":", 2)
                if controller in names.split(","):
                    return path.lstrip("/")
        return ""

    def __init__(self):
        Cgroups.count += 1
        name = f"feedline-peers-{os.getpid()}-{Cgroups.count}"
        self.memory = os.path.join(self.MEMORY, self.own("memory"), name)
        self.cpuacct = os.path.join(self.CPUACCT, self.own("cpuacct"), name)
        os.mkdir(self.memory)
        try:
            os.mkdir(self.cpuacct)
        except OSError:
            os.rmdir(self.memory)
            raise

    def wrap(self, command):
        procs = [shlex.quote(os.path.join(p, "cgroup.procs")) for p in (self.memory, self.cpuacct)]
        return ["/bin/sh", "-c", f"echo $$ > {procs[0]} && echo $$ > {procs[1]} && "
                                 f"exec {shlex.join(command)}"]

    def peak_bytes(self):
        with open(os.path.join(self.memory, "memory.max_usage_in_bytes")) as f:
            return int(f.read())

    def cpu_seconds(self):
        with open(os.path.join(self.cpuacct, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9

    def remove(self):
        deadline = time.monotonic() + 20
        for path in (self.memory, self.cpuacct):
            while True:
                with open(os.path.join(path, "cgroup.procs")) as f:
                    left = f.read().split()
                if not left:
                    break
                if time.monotonic() > deadline:
                    for pid in left:  # the run's own leftovers (a worker that outlived it)
                        try:
                            os.kill(int(pid), 9)
                        except OSError:
                            pass
                time.sleep(0.05)
            os.rmdir(path)


def child_command(args, loader):
    job, _, python, maker, kwargs = loader
    command = [INTERPRETERS[python], os.path.abspath(__file__), "--child", job, maker,
               "--kwargs", json.dumps(kwargs), "--data", args.data, "--epochs",
               str(args.epochs), "--workers", str(args.workers)]
    return command


def child_env(python):
    env = dict(os.environ)
    paths = [os.path.join(ROOT, "build", "python")]
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("GLOG_minloglevel", "2")  # paddle's start-up chatter
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def run_one(args, loader, measure=True):
    """One child run. Returns a dict (images_per_s, ...) or {"error": ...}."""
    job, label, python, maker, kwargs = loader
    if not os.access(INTERPRETERS[python], os.X_OK):
        return {"error": f"no interpreter {INTERPRETERS[python]} (make bench-peers creates it)"}
    command = child_command(args, loader)
    if not measure:
        command.append("--first-only")
    groups = None
    if measure and args.cgroups_skipped is None:
        groups = Cgroups()
        command += ["--memory", groups.memory, "--cpuacct", groups.cpuacct]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        run = subprocess.run(groups.wrap(command) if groups else command,
                             capture_output=True, text=True, env=child_env(python),
                             cwd=ROOT, timeout=args.timeout)
        output = run.stdout + run.stderr
        peak = groups.peak_bytes() if groups else None
        job_cpu = groups.cpu_seconds() if groups else None
    except subprocess.TimeoutExpired as error:
        output = (error.stdout or b"").decode(errors="replace") if isinstance(
            error.stdout, bytes) else (error.stdout or "")
        return {"error": f"timed out after {args.timeout} s", "load": load}
    finally:
        if groups:
            groups.remove()
    wall = time.perf_counter() - started
    found = [line for line in output.splitlines() if line.startswith("PEERS-RESULT ")]
    if not found:
        lines = [line for line in output.strip().splitlines() if line.strip()]
        errors = [line for line in lines if re.match(r"^\w*(Error|Exception)\b", line)
                  or re.match(r"^[\w.]+(Error|Exception):", line)]
        reason = (errors or lines or [f"exit status {run.returncode}, no output"])[-1]
        return {"error": reason.strip()[:400], "load": load, "log": output[-4000:]}
    result = json.loads(found[-1].split(" ", 1)[1])
    if not groups and measure:
        import resource
        result["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    result.update(peak_bytes=peak, job_cpu_s=job_cpu, wall_s=wall, load=load)
    return result


def wait_quiet(limit_s, threshold):
    """Waits until the 1-minute load average is under `threshold`, for at
    most limit_s seconds; returns the load average when it stopped waiting."""
    deadline = time.monotonic() + limit_s
    while os.getloadavg()[0] >= threshold and time.monotonic() < deadline:
        time.sleep(10)
    return os.getloadavg()


def stamp():
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{now}, load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def ensure_data(args):
    if args.data:
        if not os.path.isdir(args.data):
            sys.exit(f"--data {args.data}: no such folder")
        return
    args.data = "/tmp/feedline-bench-2000"
    if os.path.isdir(args.data) and list_folder(args.data):
        return
    binary = os.path.join(ROOT, "build", "tools", "feedline")
    if not os.access(binary, os.X_OK):
        sys.exit(f"no {binary} to synthesize the images: build feedline_cli, or pass --data")
    subprocess.run([binary, "synth", args.data, "--images", "2000", "--classes", "10",
                    "--seed", "1"], check=True)


def read_files_once(root):
    """The JPEGs into the page cache, charged to this process's group, so no
    measured run is charged for them."""
    total = 0
    for path, _ in list_folder(root):
        with open(path, "rb") as f:
            total += len(f.read())
    return total


def mib(value):
    return "n/a" if value is None else f"{value / 2**20:,.0f}"


def print_tables(args, loaders, results, header):
    print(header)
    for job in args.jobs:
        rows = [loader for loader in loaders if loader[0] == job]
        if not rows:
            continue
        reference = rows[0][1]
        ref_runs = [r for r in results[(job, reference)] if "error" not in r]
        ref_rate = statistics.median([r["images_per_s"] for r in ref_runs]) if ref_runs else None
        print(f"\n### {JOBS[job]}\n")
        print(f"| loader | images/s (min-max) | / {reference.split(' (')[0].split(',')[0]} "
              "| CPU ms/image | peak memory, MiB | after imports, MiB | first batch, s |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for loader in rows:
            label = loader[1]
            runs = results[(job, label)]
            good = [r for r in runs if "error" not in r]
            if not good:
                reason = runs[-1]["error"] if runs else "not run"
                print(f"| {label} | could not run: {reason.replace('|', '/')} | | | | | |")
                continue
            rate = [r["images_per_s"] for r in good]
            med = statistics.median

            def pick(key):
                values = [r.get(key) for r in good]
                return None if any(v is None for v in values) else med(values)
            peak = pick("peak_bytes") if args.cgroups_skipped is None else pick("maxrss_bytes")
            note = "" if len(good) == len(runs) else f" ({len(runs) - len(good)} of {len(runs)} failed)"
            ratio = f"{med(rate) / ref_rate:.2f}x" if ref_rate else "n/a"
            print(f"| {label}{note} | {med(rate):,.0f} ({min(rate):,.0f}-{max(rate):,.0f}) "
                  f"| {ratio} | {pick('cpu_ms_per_image'):.2f} | {mib(peak)} | {mib(pick('after_imports_bytes'))} "
                  f"| {pick('first_batch_s'):.2f} |")
        paths = []
        for loader in rows:
            notes = next((r.get("notes") for r in results[(job, loader[1])]
                          if r.get("notes")), None)
            if notes:
                native = notes.get("native_transforms") or (
                    "a native dataset" if notes.get("worker_mode") == "thread"
                    and notes.get("num_workers") else "the dataset's Python code")
                where = (f"{notes.get('worker_mode')} workers" if notes.get("num_workers")
                         else "in the loop's thread")
                paths.append(f"{loader[1]}: {where}, {native}")
        if paths:
            print("\nHow feedline ran it: " + "; ".join(paths) + ".")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of class folders of JPEGs "
                        "(default /tmp/feedline-bench-2000, synthesized if missing)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2,
                        help="epochs per run; the rate is of epochs 2.. (default 2)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--jobs", default="train,val,python,paddleclas")
    parser.add_argument("--loaders", help="only loaders whose label matches this regex")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per run")
    parser.add_argument("--wait-quiet", type=int, default=0,
                        help="wait up to this many seconds for a 1-minute load average "
                             "under --quiet-load before the run")
    parser.add_argument("--quiet-load", type=float, default=1.0)
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--json", help="write every run's figures to this file")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--kwargs", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--memory", help=argparse.SUPPRESS)
    parser.add_argument("--cpuacct", help=argparse.SUPPRESS)
    parser.add_argument("--first-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
        return
    if args.rounds < 1 or args.epochs < 1:
        sys.exit("--rounds and --epochs must be >= 1")
    args.jobs = [j for j in args.jobs.split(",") if j]
    unknown = [j for j in args.jobs if j not in JOBS]
    if unknown:
        sys.exit(f"--jobs: unknown {', '.join(unknown)}; choose from {', '.join(JOBS)}")
    ensure_data(args)
    loaders = [loader for loader in LOADERS if loader[0] in args.jobs
               and (not args.loaders or re.search(args.loaders, loader[1]))]
    args.cgroups_skipped = Cgroups.unavailable()
    files = list_folder(args.data)
    size = read_files_once(args.data)
    if args.wait_quiet:
        wait_quiet(args.wait_quiet, args.quiet_load)
    started = stamp()
    print(f"feedline/bench/peers.py: {len(files)} JPEGs in {args.data} "
          f"(average {size / len(files) / 1024:.1f} KiB), batch {BATCH}, {args.workers} workers, "
          f"{args.epochs} epochs of {len(files) // BATCH} batches per run, {args.rounds} rounds; "
          f"{os.cpu_count()} CPUs ({cpu_model()}); start {started}", flush=True)
    if args.cgroups_skipped:
        print(f"no cgroups ({args.cgroups_skipped}): peak memory is ru_maxrss of the largest "
              "process of the run, CPU time that of this process tree", flush=True)
    if not args.no_warmup:  # libraries into the page cache, outside the measured groups
        print("warm-up: each loader to its first batch, outside the measured groups", flush=True)
        for loader in loaders:
            result = run_one(args, loader, measure=False)
            state = "error: " + result["error"] if "error" in result else \
                f"first batch in {result['first_batch_s']:.2f} s"
            print(f"  warm-up {loader[0]} / {loader[1]}: {state}", flush=True)
    results = {(loader[0], loader[1]): [] for loader in loaders}
    loads = []
    for r in range(args.rounds):
        order = loaders[r % len(loaders):] + loaders[:r % len(loaders)]
        if args.wait_quiet:
            wait_quiet(args.wait_quiet, args.quiet_load)
        loads.append(stamp())
        print(f"round {r + 1}: {loads[-1]}", flush=True)
        for loader in order:
            result = run_one(args, loader)
            results[(loader[0], loader[1])].append(result)
            state = "error: " + result["error"] if "error" in result else \
                (f"{result['images_per_s']:.0f} images/s, {result['cpu_ms_per_image']:.2f} ms CPU, "
                 f"{mib(result.get('peak_bytes'))} MiB, load {result['load']:.2f}")
            print(f"  {loader[0]} / {loader[1]}: {state}", flush=True)
    ended = stamp()
    vers = {}
    for runs in results.values():
        for run in runs:
            for name, value in run.get("versions", {}).items():
                vers.setdefault(name, set()).add(value)
    header = (f"\n## Side by side, {datetime.date.today()}: {len(files)} JPEGs "
              f"({size / len(files) / 1024:.1f} KiB on average), batch {BATCH}, {args.workers} workers "
              f"or threads, medians of {args.rounds} alternating rounds; start {started}, "
              f"end {ended}; rounds began at " + "; ".join(s.split(", load average ")[1].split(",")[0]
                                                            for s in loads)
              + " (1-minute load average)\nversions: "
              + ", ".join(f"{k} {'/'.join(sorted(v))}" for k, v in sorted(vers.items())))
    print_tables(args, loaders, results, header)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"start": started, "end": ended, "rounds": loads, "data": args.data,
                       "results": [{"job": k[0], "loader": k[1], "runs": v}
                                   for k, v in results.items()]}, f, indent=1)


if __name__ == "__main__":
    main()
