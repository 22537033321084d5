"""Runs torchvision's reference training script for image classification
(references/classification/train.py of torchvision 0.14.1, fetched at test
time by scripts/fetch_torchvision_references.sh) twice on the same small
image folder: as it is, with torch's DataLoader, and with one line added
after its `import torch.utils.data`:

    import feedline.torch; torch.utils.data.DataLoader = feedline.torch.DataLoader

so that its two `torch.utils.data.DataLoader(...)` calls build feedline's.
The script's own dataset (torchvision.datasets.ImageFolder with its
ClassificationPresetTrain / ClassificationPresetEval transforms) is then
loaded natively (docs/python.md, "Native transforms").

The folder: --classes classes whose images differ by colour and stripes
(so that a few epochs learn them), JPEGs of 120-200 px, --per-class per
class for training and a quarter of that for validation. Both runs train
resnet18 on the CPU with the same arguments (--train-crop-size 96, batch 32,
2 workers, SGD lr 0.01, --epochs).

Checks, exiting non-zero on a failure, each named:
  - both runs finish;
  - feedline's run says that it loads natively (its one-line log);
  - in both, the epoch's mean training loss falls from the first epoch to
    the last, and the last epoch's validation Acc@1 is above chance;
  - feedline's last mean loss is within 0.5 of torch's, or below it.
Prints a table of mean loss per epoch, Acc@1 and the training images/s.

    run_reference_train.py --references DIR --out DIR [--python PY]
                           [--pythonpath P] [--epochs 4]
"""

import os
import random
import re
import shutil
import sys

from reference_scripts import copy_scripts, parse_arguments, run_train

NATIVE_LOG = re.compile(r"feedline\.torch: .*run natively")


def make_folder(root, classes, per_class, seed=0):
    """Colour and stripe direction by class, noise and size at random."""
    from PIL import Image, ImageDraw
    rng = random.Random(seed)
    for split, count in (("train", per_class), ("val", max(4, per_class // 4))):
        for c in range(classes):
            folder = os.path.join(root, split, f"class_{c:02d}")
            os.makedirs(folder, exist_ok=True)
            hue = (c * 97) % 256
            base = (hue, (hue * 3 + 80) % 256, (255 - hue) % 256)
            for i in range(count):
                w, h = rng.randint(120, 200), rng.randint(120, 200)
                color = tuple(max(0, min(255, v + rng.randint(-30, 30))) for v in base)
                image = Image.new("RGB", (w, h), color)
                draw = ImageDraw.Draw(image)
                step = 8 + (c % 3) * 6
                for x in range(0, max(w, h) * 2, step):
                    if c % 2 == 0:
                        draw.line([(x, 0), (x - h, h)], fill=(255, 255, 255), width=2)
                    else:
                        draw.line([(0, x), (w, x)], fill=(0, 0, 0), width=2)
                image.save(os.path.join(folder, f"{i:04d}.jpg"), quality=90)


def run(label, script_dir, args, data):
    return run_train(label, script_dir, args.out,
                     ["--data-path", data, "--model", "resnet18", "--device", "cpu",
                      "--epochs", str(args.epochs), "--batch-size", "32", "--workers", "2",
                      "--lr", "0.01", "--lr-step-size", "100", "--train-crop-size", "96",
                      "--val-resize-size", "110", "--val-crop-size", "96", "--print-freq", "1"],
                     args.python, args.pythonpath, args.timeout)


def parse(log, epochs):
    """Mean training loss, Acc@1 and images/s per epoch."""
    loss, acc1, rate = {}, {}, {}
    current = None
    for line in log.splitlines():
        m = re.match(r"Epoch: \[(\d+)\]", line)
        if m:
            current = int(m.group(1))
            mm = re.search(r"loss: [\d.]+ \(([\d.]+)\)", line)
            if mm:
                loss[current] = float(mm.group(1))  # running mean: the last one is the epoch's
            mm = re.search(r"img/s: ([\d.]+)", line)
            if mm:
                rate.setdefault(current, []).append(float(mm.group(1)))
        m = re.search(r"Acc@1 ([\d.]+) Acc@5", line)
        if m and current is not None:
            acc1[current] = float(m.group(1))
    return ([loss.get(e) for e in range(epochs)], [acc1.get(e) for e in range(epochs)],
            [sorted(rate.get(e, [0]))[len(rate.get(e, [0])) // 2] for e in range(epochs)])


def main():
    def data_arguments(parser):
        parser.add_argument("--classes", type=int, default=10)
        parser.add_argument("--per-class", type=int, default=48)

    args = parse_arguments(__doc__, epochs=4, add_data_arguments=data_arguments)

    data = os.path.join(args.out, "data")
    if not os.path.exists(os.path.join(data, ".complete")):
        shutil.rmtree(data, ignore_errors=True)
        make_folder(data, args.classes, args.per_class)
        open(os.path.join(data, ".complete"), "w").close()

    scripts = copy_scripts(os.path.join(args.references, "classification"), args.out)

    failures = []
    results = {}
    for label in ("torch", "feedline"):
        code, log, seconds = run(label, scripts[label], args, data)
        if code != 0:
            failures.append(f"{label}: train.py exited with {code} (log: {args.out}/{label}.log)")
            print(log[-3000:], file=sys.stderr)
            continue
        results[label] = parse(log, args.epochs) + (seconds,)
        if label == "feedline" and not NATIVE_LOG.search(log):
            failures.append("feedline: no 'feedline.torch: ... run natively' line in its log")

    print(f"torchvision 0.14.1 references/classification/train.py, resnet18 on the CPU, "
          f"{args.classes} classes x {args.per_class} images, batch 32, 2 workers")
    print("| DataLoader | mean loss per epoch | val Acc@1 per epoch | train images/s (median) "
          "| wall s |")
    print("|---|---|---|---|---:|")
    for label, (loss, acc1, rate, seconds) in results.items():
        print(f"| {label} | {' -> '.join(f'{v:.3f}' if v is not None else '?' for v in loss)} | "
              f"{' -> '.join(f'{v:.1f}' if v is not None else '?' for v in acc1)} | "
              f"{' / '.join(f'{v:.0f}' for v in rate)} | {seconds:.0f} |")
        if None in loss or None in acc1:
            failures.append(f"{label}: a loss or Acc@1 is missing from the log")
            continue
        if not loss[-1] < loss[0]:
            failures.append(f"{label}: the loss did not fall ({loss[0]:.3f} -> {loss[-1]:.3f})")
        if not acc1[-1] > 100.0 / args.classes:
            failures.append(f"{label}: the last Acc@1 ({acc1[-1]:.1f}) is not above chance")
    if "torch" in results and "feedline" in results:
        torch_last, feedline_last = results["torch"][0][-1], results["feedline"][0][-1]
        if None not in (torch_last, feedline_last) and feedline_last > torch_last + 0.5:
            failures.append(f"feedline's last mean loss {feedline_last:.3f} is more than 0.5 "
                            f"above torch's {torch_last:.3f}")
    for failure in failures:
        print("reference-train: FAILED: " + failure, file=sys.stderr)
    print(f"reference-train: {'failed' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
