#!/usr/bin/env python3
"""Trains a ResNet on an image folder in Paddle's static graph, the way
PaddleClas's static trainer (ppcls/static/train.py) does: paddle.static.data
inputs, the loader built with feed_list, places and return_list=False, a
DistributedBatchSampler, an Executor running the program on each feed. The
data is examples/train_paddle.py's (OpenCV decoding, RandCropImage,
RandFlipImage, NormalizeImage to CHW). Prints each epoch's loss and images/s,
and exits with status 1 if the loss did not fall.

    PYTHONPATH=build/python .venv/bin/python examples/train_paddle_static.py \
        --loader feedline --data /tmp/feedline_train_paddle

--loader both trains --rounds times with each loader, alternating, in one
process, and prints each round's images/s and the median ratio.
"""

import argparse
import os
import random
import statistics
import sys
import time

import numpy as np
import paddle

# The dataset and PaddleClas's transforms, shared with the dynamic-graph
# example beside this file.
from train_paddle import MEAN, STD, ImageFolder, NormalizeImage, RandCropImage, \
    RandFlipImage, synthesize


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loader", choices=["paddle", "feedline", "both"], default="feedline",
                        help="whose DataLoader feeds the training (both: alternating rounds)")
    parser.add_argument("--data", default="/tmp/feedline_train_paddle",
                        help="image folder (root/<class>/<image>.jpg); written if missing")
    parser.add_argument("--images", type=int, default=96, help="images to synthesize")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1, help="trainings per loader")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--size", type=int, default=32, help="crop size fed to the network")
    parser.add_argument("--workers", type=int, default=1, help="loader workers")
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def loader_class(name):
    # The swap: everything else is the same for both loaders.
    if name == "feedline":
        from feedline.paddle import DataLoader
    else:
        from paddle.io import DataLoader
    return DataLoader


def build_program(classes, size, lr):
    """The training program: ResNet-18, softmax cross-entropy, Momentum."""
    startup, main = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        image = paddle.static.data(name="image", shape=[None, 3, size, size], dtype="float32")
        label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")
        model = paddle.vision.models.resnet18(num_classes=classes)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(model(image), label))
        optimizer = paddle.optimizer.Momentum(learning_rate=lr, momentum=0.9,
                                              weight_decay=1e-4)
        optimizer.minimize(loss)
    return startup, main, image, label, loss


def train(args, name):
    """One training with loader `name`: the losses by epoch and images/s
    over the epochs after the first (which includes the program's build)."""
    paddle.seed(args.seed)
    np.random.seed(args.seed)
    random.seed(args.seed)
    dataset = ImageFolder(args.data, [RandCropImage(args.size), RandFlipImage(),
                                      NormalizeImage(MEAN, STD)])
    startup, main, image, label, loss = build_program(len(dataset.classes), args.size, args.lr)
    place = paddle.CPUPlace()
    sampler = paddle.io.DistributedBatchSampler(dataset, batch_size=args.batch_size,
                                                shuffle=True, drop_last=True)
    loader = loader_class(name)(_WithLabelColumn(dataset), feed_list=[image, label],
                                places=[place], batch_sampler=sampler,
                                num_workers=args.workers, use_shared_memory=True,
                                return_list=False)
    exe = paddle.static.Executor(place)
    with paddle.static.scope_guard(paddle.static.Scope()):
        exe.run(startup)
        losses, timed_images, timed_seconds = [], 0, 0.0
        for epoch in range(args.epochs):
            sampler.set_epoch(epoch)
            start, total, steps = time.perf_counter(), 0.0, 0
            for feed in loader:
                (value,) = exe.run(main, feed=feed, fetch_list=[loss])
                total += float(np.mean(value))
                steps += 1
            seconds = time.perf_counter() - start
            if steps == 0:
                sys.exit(f"epoch {epoch} had no batches: more --images or a smaller "
                         "--batch-size")
            losses.append(total / steps)
            rate = steps * args.batch_size / seconds
            if epoch > 0:
                timed_images += steps * args.batch_size
                timed_seconds += seconds
            print(f"epoch {epoch} loss {losses[-1]:.4f} steps {steps} images/s {rate:.1f} "
                  f"loader {name}", flush=True)
    return losses, timed_images / timed_seconds if timed_seconds else float("nan")


class _WithLabelColumn(paddle.io.Dataset):
    """ImageFolder's (image, label) with the label as an int64 [1] array,
    the shape of the static program's label variable."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        image, label = self.dataset[index]
        return image, np.array([label], np.int64)


def main():
    args = parse_args()
    paddle.enable_static()
    if not os.path.isdir(args.data):
        synthesize(args.data, args.images, args.seed)
    names = ["paddle", "feedline"] if args.loader == "both" else [args.loader]
    rates = {name: [] for name in names}
    fell = True
    for round_ in range(args.rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            losses, rate = train(args, name)
            rates[name].append(rate)
            ok = losses[-1] < losses[0]
            fell = fell and ok
            print(f"round {round_} loader {name} loss {'fell' if ok else 'did not fall'}: "
                  f"{losses[0]:.4f} -> {losses[-1]:.4f} images/s {rate:.1f}", flush=True)
    for name in names:
        print(f"loader {name} median images/s {statistics.median(rates[name]):.1f} "
              f"rounds {rates[name]}", flush=True)
    if len(names) == 2:
        ratio = statistics.median(rates["feedline"]) / statistics.median(rates["paddle"])
        print(f"feedline / paddle.io images/s: {ratio:.2f}", flush=True)
    sys.exit(0 if fell else 1)


if __name__ == "__main__":
    main()
