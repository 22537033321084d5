#!/usr/bin/env python3
"""Trains a ResNet on an image folder the way PaddleClas does (a
paddle.io.Dataset decoding with OpenCV, RandCropImage, RandFlipImage,
NormalizeImage to CHW, a DistributedBatchSampler, Momentum SGD), fed by
paddle.io.DataLoader or by feedline.paddle.DataLoader: the one-line swap.
Prints each epoch's loss and exits with status 1 if the loss did not fall.

One process:

    PYTHONPATH=build/python .venv/bin/python examples/train_paddle.py \
        --loader feedline --data /tmp/feedline_train_paddle

Two ranks on a CPU-only machine (gloo), with paddle's launcher:

    PYTHONPATH=build/python CUDA_VISIBLE_DEVICES= .venv/bin/python \
        -m paddle.distributed.launch --nproc_per_node 2 --log_dir /tmp/paddle_log \
        examples/train_paddle.py --loader feedline --data /tmp/feedline_train_paddle

Each rank prints to its log (LOG_DIR/workerlog.<rank>; rank 0 also to the
terminal). Without a folder at --data, rank 0 first writes a small labelled
JPEG folder there that a network can learn: the class is the dominant
colour of the image.
"""

import argparse
import math
import os
import random
import sys
import time

import cv2
import numpy as np
import paddle
import paddle.distributed as dist
import paddle.nn.functional as F

# The classes of the synthesized folder and their dominant colour (BGR, as
# OpenCV writes it).
COLOURS = {"red": (40, 40, 220), "green": (40, 200, 40), "blue": (220, 60, 40),
           "yellow": (30, 210, 230)}
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loader", choices=["paddle", "feedline"], default="feedline",
                        help="whose DataLoader feeds the training")
    parser.add_argument("--data", default="/tmp/feedline_train_paddle",
                        help="image folder (root/<class>/<image>.jpg); written if missing")
    parser.add_argument("--images", type=int, default=96, help="images to synthesize")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16, help="per rank")
    parser.add_argument("--size", type=int, default=32, help="crop size fed to the network")
    parser.add_argument("--workers", type=int, default=1, help="loader workers per rank")
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


# ---------------------------------------------------------------------------
# Data, as PaddleClas prepares it


def synthesize(root, images, seed):
    """Writes `images` JPEGs in one folder per class of COLOURS: a noisy
    background with a few shapes, most of its area the class's colour."""
    rng = np.random.default_rng(seed)
    names = sorted(COLOURS)
    partial = root + ".partial"
    os.makedirs(partial, exist_ok=True)
    for i in range(images):
        name = names[i % len(names)]
        h, w = (int(v) for v in rng.integers(48, 72, 2))
        image = rng.integers(0, 90, (h, w, 3)).astype(np.uint8)
        colour = np.array(COLOURS[name], np.int16)
        image[:] = np.clip(colour + rng.integers(-30, 30, (h, w, 3)), 0, 255).astype(np.uint8)
        for _ in range(3):  # distractors of other colours, smaller than the background
            other = COLOURS[names[int(rng.integers(len(names)))]]
            centre = (int(rng.integers(w)), int(rng.integers(h)))
            cv2.circle(image, centre, int(rng.integers(2, 5)), other, -1)
        os.makedirs(os.path.join(partial, name), exist_ok=True)
        cv2.imwrite(os.path.join(partial, name, f"{i:05d}.jpg"), image)
    os.rename(partial, root)  # whole or not at all


class ImageFolder(paddle.io.Dataset):
    """root/<class>/<file>: (CHW float32 image, int64 label), decoded with
    OpenCV and transformed by `ops` in order."""

    def __init__(self, root, ops):
        self.classes = sorted(d for d in os.listdir(root)
                              if os.path.isdir(os.path.join(root, d)))
        self.samples = [(os.path.join(root, c, f), label)
                        for label, c in enumerate(self.classes)
                        for f in sorted(os.listdir(os.path.join(root, c)))]
        self.ops = ops

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        image = cv2.imread(path, cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError(f"{path} is not an image OpenCV can read")
        image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
        for op in self.ops:
            image = op(image)
        return image, np.int64(label)


class RandCropImage:
    """A random crop of a random share of the area (scale) and aspect ratio
    (ratio), resized to size x size: PaddleClas's RandCropImage. The ratio
    is drawn in square-root space so that w/h and h/w are equally likely,
    and the area is capped so that the crop fits in the image."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0)):
        self.size = size
        self.scale = scale
        self.ratio = ratio

    def __call__(self, image):
        height, width = image.shape[:2]
        stretch = math.sqrt(random.uniform(*self.ratio))
        unit_w, unit_h = stretch, 1.0 / stretch
        fits = min(width / height / unit_w ** 2, height / width / unit_h ** 2)
        area = width * height * random.uniform(min(self.scale[0], fits),
                                               min(self.scale[1], fits))
        side = math.sqrt(area)
        crop_w = max(1, min(width, int(side * unit_w)))
        crop_h = max(1, min(height, int(side * unit_h)))
        x = random.randint(0, width - crop_w)
        y = random.randint(0, height - crop_h)
        crop = image[y:y + crop_h, x:x + crop_w]
        return cv2.resize(crop, (self.size, self.size), interpolation=cv2.INTER_LINEAR)


class RandFlipImage:
    """Mirrors the image left-right with probability 1/2."""

    def __call__(self, image):
        return cv2.flip(image, 1) if random.random() < 0.5 else image


class NormalizeImage:
    """uint8 HWC to float32 CHW: scaled to [0, 1], then (x - mean) / std per
    channel."""

    def __init__(self, mean, std, scale=1.0 / 255.0):
        self.scale = np.float32(scale)
        self.mean = np.array(mean, np.float32).reshape(1, 1, 3)
        self.std = np.array(std, np.float32).reshape(1, 1, 3)

    def __call__(self, image):
        image = (image.astype(np.float32) * self.scale - self.mean) / self.std
        return np.ascontiguousarray(image.transpose(2, 0, 1))


# ---------------------------------------------------------------------------
# Training


def main():
    args = parse_args()
    # The swap: everything else is the same for both loaders.
    if args.loader == "feedline":
        from feedline.paddle import DataLoader
    else:
        from paddle.io import DataLoader

    paddle.set_device("cpu")
    world_size = int(os.environ.get("PADDLE_TRAINERS_NUM", "1"))
    if world_size > 1:
        dist.init_parallel_env()  # gloo on a CPU-only machine
    rank = dist.get_rank() if world_size > 1 else 0

    if rank == 0 and not os.path.isdir(args.data):
        synthesize(args.data, args.images, args.seed)
    if world_size > 1:
        dist.barrier()  # the folder is whole before any rank lists it

    paddle.seed(args.seed)  # the same initial weights on every rank
    np.random.seed(args.seed)
    random.seed(args.seed)
    dataset = ImageFolder(args.data, [RandCropImage(args.size), RandFlipImage(),
                                      NormalizeImage(MEAN, STD)])
    sampler = paddle.io.DistributedBatchSampler(dataset, batch_size=args.batch_size,
                                                shuffle=True, drop_last=True)
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=args.workers,
                        use_shared_memory=True)

    model = paddle.vision.models.resnet18(num_classes=len(dataset.classes))
    if world_size > 1:
        model = paddle.DataParallel(model)
    optimizer = paddle.optimizer.Momentum(learning_rate=args.lr, momentum=0.9,
                                          parameters=model.parameters(), weight_decay=1e-4)

    losses = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        start, total, steps = time.time(), 0.0, 0
        for images, labels in loader:
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            total += float(loss)
            steps += 1
        if steps == 0:
            sys.exit(f"rank {rank}: epoch {epoch} had no batches: more --images or a smaller "
                     "--batch-size")
        mean = paddle.to_tensor([total / steps], dtype="float32")
        if world_size > 1:
            dist.all_reduce(mean)  # every rank decides on the same number
            mean = mean / world_size
        losses.append(float(mean))
        print(f"rank {rank} epoch {epoch} loss {losses[-1]:.4f} steps {steps} "
              f"seconds {time.time() - start:.1f} loader {args.loader}", flush=True)

    fell = losses[-1] < losses[0]
    print(f"rank {rank} loss {'fell' if fell else 'did not fall'}: {losses[0]:.4f} -> "
          f"{losses[-1]:.4f}", flush=True)
    sys.exit(0 if fell else 1)


if __name__ == "__main__":
    main()
