"""Runs torchvision's reference training script for object detection
(references/detection/train.py of torchvision 0.14.1, fetched at test time
by scripts/fetch_torchvision_references.sh) twice on the same small
COCO-format dataset: as it is, with torch's DataLoader, and with one line
added after its `import torch.utils.data`:

    import feedline.torch; torch.utils.data.DataLoader = feedline.torch.DataLoader

so that both of its DataLoaders are feedline's. Its datasets (get_coco with
DetectionPresetTrain("hflip") for training, DetectionPresetEval for
evaluation, the references' GroupedBatchSampler, utils.collate_fn) then
load natively (docs/detection.md, "The one-line swap"), and its evaluation
reads the COCO api from the loader's dataset.

The data: check_coco_detection.py's images (--images of 60-240 px with
polygon objects, crowds, a box with no height, an image with no object) as
train2017, and again as val2017. Both runs train
fasterrcnn_mobilenet_v3_large_320_fpn from scratch on the CPU with the same
arguments (batch 2, 2 workers, --epochs, no pretrained weights: nothing is
downloaded). Debian's torch 1.13 takes 10-20 s an iteration here, so the
defaults are small: 1 epoch of 5 images (image 3 has no object and is left
out), evaluated on 6.

Checks, exiting non-zero on a failure, each named:
  - both runs finish;
  - feedline's run says that its training and evaluation sets load natively;
  - every logged training loss is a finite number, in both runs;
  - both runs' COCO evaluation prints its bbox table (12 "Average
    Precision/Recall" lines).
Prints the mean loss per epoch and the time of both runs.

    run_reference_detection_train.py --references DIR --out DIR [--python PY]
                                     [--pythonpath P] [--epochs 1] [--images 6]
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import time

SWAP = ("import feedline.torch; "
        "torch.utils.data.DataLoader = feedline.torch.DataLoader  # the swap\n")
NATIVE_LOG = re.compile(r"feedline\.torch: .*CocoDetection \(torchvision's detection "
                        r"references\).* run natively")


def write_data(root, images):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from check_coco_detection import write_dataset
    write_dataset(root, images)
    if not os.path.exists(os.path.join(root, "val2017")):
        os.symlink("train2017", os.path.join(root, "val2017"))
    shutil.copyfile(os.path.join(root, "annotations", "instances_train2017.json"),
                    os.path.join(root, "annotations", "instances_val2017.json"))


def run(label, script_dir, args, data):
    out_dir = os.path.join(args.out, label + "-output")
    os.makedirs(out_dir, exist_ok=True)
    # train.py runs as its own __main__, with logging at INFO (where
    # feedline.torch says what it loads natively), as a user's
    # logging.basicConfig(level=logging.INFO) would show it.
    launcher = ("import logging, runpy, sys; logging.basicConfig(level=logging.INFO); "
                "sys.argv[0] = 'train.py'; runpy.run_path('train.py', run_name='__main__')")
    command = [args.python, "-c", launcher, "--data-path", data, "--dataset", "coco",
               "--model", "fasterrcnn_mobilenet_v3_large_320_fpn", "--device", "cpu",
               "--epochs", str(args.epochs), "--batch-size", "2", "--workers", "2",
               "--lr", "0.01", "--data-augmentation", "hflip", "--print-freq", "1",
               "--output-dir", out_dir]
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            [args.pythonpath] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    start = time.monotonic()
    result = subprocess.run(command, cwd=script_dir, env=env, capture_output=True, text=True,
                            timeout=args.timeout)
    seconds = time.monotonic() - start
    log = result.stdout + result.stderr
    with open(os.path.join(args.out, label + ".log"), "w") as f:
        f.write(log)
    return result.returncode, log, seconds


def parse(log, epochs):
    """Every logged loss, and the mean loss per epoch."""
    losses, mean = [], {}
    for line in log.splitlines():
        m = re.match(r"Epoch: \[(\d+)\]", line)
        if not m:
            continue
        epoch = int(m.group(1))
        mm = re.search(r" loss: (\S+) \((\S+)\)", line)
        if mm:
            losses.append(mm.group(1))
            mean[epoch] = mm.group(2)  # running mean: the last one is the epoch's
    return losses, [mean.get(e) for e in range(epochs)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--references", required=True,
                        help="the folder fetch_torchvision_references.sh wrote")
    parser.add_argument("--out", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pythonpath", help="where feedline is (build/python)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--images", type=int, default=6)
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    args.out = os.path.abspath(args.out)
    if args.pythonpath:
        args.pythonpath = os.path.abspath(args.pythonpath)  # train.py runs in its own folder
    data = os.path.join(args.out, "data")
    shutil.rmtree(data, ignore_errors=True)
    write_data(data, args.images)

    source = os.path.join(args.references, "detection")
    scripts = {}
    for label in ("torch", "feedline"):
        target = os.path.join(args.out, label)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
        scripts[label] = target
    train = os.path.join(scripts["feedline"], "train.py")
    with open(train) as f:
        lines = f.readlines()
    at = lines.index("import torch.utils.data\n") + 1
    lines.insert(at, SWAP)
    with open(train, "w") as f:
        f.writelines(lines)

    failures, results = [], {}
    for label in ("torch", "feedline"):
        code, log, seconds = run(label, scripts[label], args, data)
        results[label] = (log, seconds)
        if code != 0:
            failures.append(f"{label}: train.py exited with {code} (log: "
                            f"{os.path.join(args.out, label + '.log')}):\n{log[-3000:]}")
            continue
        losses, means = parse(log, args.epochs)
        if not losses or any(not math.isfinite(float(v)) for v in losses):
            failures.append(f"{label}: losses {losses[:10]}, not all finite")
        tables = len(re.findall(r"Average (Precision|Recall) +\(A[PR]\)", log))
        if tables < 12:
            failures.append(f"{label}: the COCO evaluation printed {tables} of its 12 lines")
        print(f"{label:9s} mean loss per epoch {means}, {seconds:.0f} s in all")
    feedline_log = results.get("feedline", ("", 0))[0]
    native = NATIVE_LOG.findall(feedline_log)
    if len(native) < 2:
        failures.append(f"feedline: {len(native)} of its 2 datasets said they load natively: "
                        + "; ".join(line for line in feedline_log.splitlines()
                                    if "feedline.torch:" in line)[:600])
    for failure in failures:
        print("FAILED:", failure)
    print(f"run_reference_detection_train: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
