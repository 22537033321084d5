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

import math
import os
import re
import shutil
import sys

from reference_scripts import copy_scripts, parse_arguments, run_train

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
    return run_train(label, script_dir, args.out,
                     ["--data-path", data, "--dataset", "coco",
                      "--model", "fasterrcnn_mobilenet_v3_large_320_fpn", "--device", "cpu",
                      "--epochs", str(args.epochs), "--batch-size", "2", "--workers", "2",
                      "--lr", "0.01", "--data-augmentation", "hflip", "--print-freq", "1"],
                     args.python, args.pythonpath, args.timeout)


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
    def data_arguments(parser):
        parser.add_argument("--images", type=int, default=6)

    args = parse_arguments(__doc__, epochs=1, add_data_arguments=data_arguments)
    data = os.path.join(args.out, "data")
    shutil.rmtree(data, ignore_errors=True)
    write_data(data, args.images)

    scripts = copy_scripts(os.path.join(args.references, "detection"), args.out)

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
