#!/usr/bin/python3
"""Trains a small CNN with PyTorch on an image folder, fed once by feedline and
once by torch's DataLoader (torchvision ImageFolder + transforms), and prints
each epoch's time and loss for both.

    PYTHONPATH=build/python /usr/bin/python3 examples/train_torch.py \
        --images 2000 --epochs 3 --data /tmp/feedline_train

Without an existing folder at --data, a synthetic one (JPEGs of 300-500
pixels, like photographs to a decoder) is written there first.
"""

import argparse
import os
import time

import torch
import torch.nn.functional as F
import torchvision
from torch import nn
from torchvision import transforms as tvt

import feedline
from feedline.vision import datasets, synth
from feedline.vision import transforms as T

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/feedline_train_torch",
                        help="image folder (root/<class>/<image>); written if missing")
    parser.add_argument("--images", type=int, default=1024, help="images to synthesize")
    parser.add_argument("--classes", type=int, default=4, help="classes to synthesize")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--size", type=int, default=64, help="crop size fed to the network")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


class SmallCNN(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def feedline_loader(args):
    transform = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(),
                           T.ToTensor(), T.Normalize(MEAN, STD)])
    data = datasets.ImageFolder(args.data, transform=transform)
    return feedline.DataLoader(data, batch_size=args.batch_size, shuffle=True,
                               num_workers=args.workers, seed=args.seed)


def torch_loader(args):
    transform = tvt.Compose([tvt.RandomResizedCrop(args.size), tvt.RandomHorizontalFlip(),
                             tvt.ToTensor(), tvt.Normalize(MEAN, STD)])
    data = torchvision.datasets.ImageFolder(args.data, transform=transform)
    return torch.utils.data.DataLoader(data, batch_size=args.batch_size, shuffle=True,
                                       num_workers=args.workers)


def train(name, loader, args):
    torch.manual_seed(args.seed)  # the same initial weights for both loaders
    model = SmallCNN(len(loader.dataset.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        start = time.perf_counter()
        total_loss, samples = 0.0, 0
        for images, labels in loader:
            # feedline gives numpy arrays viewing the batch memory: from_numpy
            # shares it, so nothing is copied on the way to the model.
            images = torch.as_tensor(images)
            labels = torch.as_tensor(labels)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * len(labels)
            samples += len(labels)
        seconds = time.perf_counter() - start
        print(f"{name:9s} epoch {epoch}: {seconds:7.2f} s  {samples / seconds:8.1f} img/s  "
              f"loss {total_loss / samples:.4f}", flush=True)
    return total_loss / samples


def main():
    args = parse_args()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // 2))
    if not os.path.isdir(args.data) or not os.listdir(args.data):
        print(f"writing {args.images} synthetic images to {args.data}", flush=True)
        synth.write_image_folder(args.data, args.images, classes=args.classes, seed=args.seed)
    losses = {
        "feedline": train("feedline", feedline_loader(args), args),
        "torch": train("torch", torch_loader(args), args),
    }
    for name, loss in losses.items():
        if not loss == loss:  # NaN
            raise SystemExit(f"{name}: the loss diverged")
    print("final loss: " + ", ".join(f"{k} {v:.4f}" for k, v in losses.items()))


if __name__ == "__main__":
    main()
