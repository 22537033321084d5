#!/usr/bin/python3
"""torchvision's detection reference dataset through 2 worker processes:
torch's DataLoader against feedline.torch.DataLoader.

The dataset is the one torchvision 0.14.1's detection reference script
trains on (references/detection, fetched from Debian's source package by
scripts/fetch_torchvision_references.sh, never committed here):
coco_utils.get_coco(root, "train", presets.DetectionPresetTrain(
data_augmentation=PRESET)), i.e. torchvision.datasets.CocoDetection with
ConvertCocoPolysToMask (polygons rasterized into masks with pycocotools)
and the preset's transforms, batched by utils.collate_fn. It is wrapped in a
torch.utils.data.Dataset subclass of this script whose __getitem__ calls the
reference dataset's, as a training script of one's own would: nothing in it
can be recognized and lowered to native code, so both loaders run the same
Python in their worker processes.

Presets (--presets, default hflip,ssd):
  hflip  RandomHorizontalFlip, PILToTensor, ConvertImageDtype(float)
  ssd    RandomPhotometricDistort, RandomZoomOut (canvas up to 4x the
         side), RandomIoUCrop, RandomHorizontalFlip, PILToTensor,
         ConvertImageDtype(float)
(multiscale, ssdlite and lsj, the reference's other presets, are accepted
too.)

The data: a COCO-format dataset synthesized once into a cache folder
(--cache, default ~/.cache/feedline/bench-detection), in COCO's layout so
that get_coco reads it as it is: train2017/*.jpg and
annotations/instances_train2017.json. Images are photo-like JPEGs (PIL,
quality 90) with a long side of 640 px: a smooth two-colour gradient, a
low-frequency texture, 1-8 filled polygons that are the annotated objects
(each with its polygon segmentation, bbox, area, one of 20 categories,
iscrowd 0), a few unannotated shapes and sensor-like noise. Image i is drawn
from seed i, so the cache only grows: --images N uses its first N images
and writes the ones missing.

Loaders, each with batch_size 8, shuffle, 2 worker processes, persistent
workers and the reference's collate_fn:
  torch     torch.utils.data.DataLoader
  feedline  feedline.torch.DataLoader from this checkout (--pythonpath,
            default: build/python beside this script)
  main      the same from another build (--baseline-pythonpath); left out
            when not given
  swap      with --swap: feedline.torch.DataLoader over the references'
            dataset itself (get_coco's Subset, not wrapped), as their
            train.py hands it over with the one-line swap: it loads
            natively (the swap lowers every preset of the references);
            the line says so, or why it ran in Python
  native    with --native, the hflip, ssd and ssdlite presets: no Python
            dataset at all, but feedline.vision.datasets.CocoDetection over
            the same files (skip_empty, masks=True, or "source" as the ssd
            presets leave them, the preset's steps, PILToTensor,
            ConvertImageDtype(float32), run in C++ with the boxes and
            masks) through feedline.DataLoader, each batch
            turned into the same (images, targets) lists by
            detection_targets (views of the padded batch)

Each loader runs in its own interpreter (two feedline builds cannot share
one), which builds the dataset, makes its loader, runs a warm-up epoch (the
workers start; the batches' structure is checked) and then one timed epoch
when the driver asks; rounds alternate between the loaders, the order turned
each round, so that every loader sees the same machine state. Printed per
preset: the median images/s over the rounds and their range, the CPU time
per image of the loader's process tree (the process, its threads and its
worker processes, from /proc: persistent workers are live children, which
getrusage(RUSAGE_CHILDREN) would not count until they exit), and both
against torch. CPU that a loader spends between its epochs (while another
loader is timed) is reported when it is more than a trace, since it would
slow the other loader and escape this loader's figure.

Set-up, once: pycocotools (which the references import) is on PyPI, not in
Debian; scripts/make_detection_bench_venv.sh makes .venv/detection-bench
over /usr/bin/python3's packages (torch 1.13, torchvision 0.14.1, numpy)
with pycocotools added, and fetches the references. `make bench-detection`
does both and runs this script (DETECTION_ARGS="..." for its options).

Usage: .venv/detection-bench/bin/python bench/detection_python_vs_torch.py
       [--rounds 5] [--images 800] [--presets hflip,ssd]
       [--pythonpath build/python] [--baseline-pythonpath OTHER/build/python]
       [--swap] [--native]
Tiny check: --rounds 1 --images 32
"""
import argparse
import contextlib
import datetime
import io
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKERS = 2
BATCH = 8
PRESETS = ("hflip", "ssd", "ssdlite", "multiscale", "lsj")
CATEGORIES = 20
LONG_SIDE = 640
# Bumped when the synthesized images or annotations change, so that a cache
# written by another version is rebuilt rather than mixed with new images.
DATA_VERSION = "1"
DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "feedline", "bench-detection")
DEFAULT_REFERENCES = os.path.join(ROOT, "build", "peer-tests", "references")


# ----------------------------------------------------------------------------
# The synthesized COCO dataset


def describe_image(image_id):
    """Size and annotated objects of image `image_id`, from its seed alone
    (the annotation file is rewritten for more images without decoding the
    ones written before)."""
    import numpy as np
    rng = np.random.default_rng([image_id, 1])
    short = int(rng.integers(360, LONG_SIDE + 1))
    width, height = (LONG_SIDE, short) if rng.random() < 0.75 else (short, LONG_SIDE)
    objects = []
    for _ in range(int(rng.integers(1, 9))):
        # A star-shaped polygon: vertices at sorted angles around a centre,
        # which never self-intersects, so its area and mask agree.
        radius = rng.uniform(16, min(width, height) / 3.5)
        cx = rng.uniform(radius * 0.5, width - radius * 0.5)
        cy = rng.uniform(radius * 0.5, height - radius * 0.5)
        count = int(rng.integers(5, 13))
        angles = np.sort(rng.uniform(0, 2 * math.pi, count))
        radii = radius * rng.uniform(0.55, 1.0, count)
        xs = np.clip(cx + radii * np.cos(angles), 0, width - 1)
        ys = np.clip(cy + radii * np.sin(angles), 0, height - 1)
        x0, y0, x1, y1 = xs.min(), ys.min(), xs.max(), ys.max()
        if x1 - x0 < 4 or y1 - y0 < 4:
            continue
        area = 0.5 * abs(float(np.dot(xs, np.roll(ys, 1)) - np.dot(ys, np.roll(xs, 1))))
        polygon = [round(float(v), 2) for xy in zip(xs, ys) for v in xy]
        objects.append({
            "segmentation": [polygon],
            "bbox": [round(float(x0), 2), round(float(y0), 2), round(float(x1 - x0), 2),
                     round(float(y1 - y0), 2)],
            "area": round(area, 2),
            "category_id": int(rng.integers(1, CATEGORIES + 1)),
            "iscrowd": 0,
        })
    if not objects:  # every image has at least one object, as get_coco's "train" keeps only those
        objects.append({"segmentation": [[10.0, 10.0, 90.0, 10.0, 90.0, 70.0, 10.0, 70.0]],
                        "bbox": [10.0, 10.0, 80.0, 60.0], "area": 4800.0,
                        "category_id": 1, "iscrowd": 0})
    return width, height, objects


def paint_image(image_id, width, height, objects):
    """A photo-like picture: what a JPEG decoder and encoder meet in photos
    (smooth areas, texture, edges, noise), not flat colour or white noise,
    which would make decoding unrealistically cheap or dear."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter
    rng = np.random.default_rng([image_id, 2])
    angle = rng.uniform(0, 2 * math.pi)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    t = xx * math.cos(angle) + yy * math.sin(angle)
    t = (t - t.min()) / max(float(t.max() - t.min()), 1.0)
    top, bottom = rng.uniform(30, 225, 3), rng.uniform(30, 225, 3)
    pixels = top + (bottom - top) * t[..., None]
    # Texture at two scales: broad shading and finer detail, which is where
    # a photo's JPEG spends its bytes.
    for cell, amplitude in ((48, 20), (6, 18)):
        coarse = rng.normal(0, amplitude, (height // cell + 2, width // cell + 2, 3))
        texture = Image.fromarray(np.clip(coarse + 128, 0, 255).astype(np.uint8)).resize(
            (width, height), Image.BICUBIC)
        pixels += np.asarray(texture, dtype=np.float32) - 128
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(2, 6))):  # background clutter, not annotated
        x, y = rng.uniform(0, width), rng.uniform(0, height)
        r = rng.uniform(8, 60)
        draw.ellipse([x - r, y - r * rng.uniform(0.5, 1.5), x + r, y + r],
                     fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
    image = image.filter(ImageFilter.GaussianBlur(1.2))  # soft background edges
    draw = ImageDraw.Draw(image)
    for obj in objects:
        polygon = obj["segmentation"][0]
        draw.polygon(list(zip(polygon[0::2], polygon[1::2])),
                     fill=tuple(int(v) for v in rng.integers(0, 256, 3)),
                     outline=tuple(int(v) for v in rng.integers(0, 256, 3)))
    pixels = np.asarray(image, dtype=np.float32) + rng.normal(0, 6, (height, width, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def image_name(image_id):
    return f"{image_id:012d}.jpg"


def ensure_dataset(root, count):
    """The first `count` images of the cache and an annotation file naming
    at least them; writes what is missing. Returns how many it wrote."""
    images_dir = os.path.join(root, "train2017")
    ann_path = os.path.join(root, "annotations", "instances_train2017.json")
    have = 0
    try:
        with open(ann_path) as f:
            info = json.load(f).get("info", {})
        if info.get("version") == f"feedline-bench-detection-{DATA_VERSION}":
            have = int(info["images"])
    except (OSError, ValueError, KeyError):
        pass
    if have >= count:
        return 0
    os.makedirs(images_dir, exist_ok=True)
    os.makedirs(os.path.dirname(ann_path), exist_ok=True)
    images, annotations = [], []
    written = 0
    start = time.monotonic()
    for image_id in range(1, count + 1):
        width, height, objects = describe_image(image_id)
        path = os.path.join(images_dir, image_name(image_id))
        if image_id > have or not os.path.exists(path):
            part = path + ".part"
            paint_image(image_id, width, height, objects).save(part, format="JPEG", quality=90)
            os.replace(part, path)
            written += 1
            if written % 100 == 0:
                print(f"detection bench: wrote {written} images "
                      f"({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True)
        images.append({"id": image_id, "file_name": image_name(image_id), "width": width,
                       "height": height})
        for obj in objects:
            annotations.append(dict(obj, id=len(annotations) + 1, image_id=image_id))
    document = {
        "info": {"description": "synthesized by bench/detection_python_vs_torch.py",
                 "version": f"feedline-bench-detection-{DATA_VERSION}", "images": count},
        "licenses": [],
        "images": images,
        "annotations": annotations,
        "categories": [{"id": c, "name": f"category_{c:02d}", "supercategory": "object"}
                       for c in range(1, CATEGORIES + 1)],
    }
    # Written last and whole: an interrupted run leaves the previous file,
    # which names only images that are complete.
    with open(ann_path + ".part", "w") as f:
        json.dump(document, f)
    os.replace(ann_path + ".part", ann_path)
    return written


def ensure_references(folder):
    if not os.path.isfile(os.path.join(folder, "detection", "coco_utils.py")):
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "fetch_torchvision_references.sh"),
                        folder, "detection"], check=True)
    return os.path.join(folder, "detection")


# ----------------------------------------------------------------------------
# One loader, served in its own interpreter

def user_dataset_class():
    import torch.utils.data

    class DetectionTrainSet(torch.utils.data.Dataset):
        """A training script's own dataset over the reference one: its
        __getitem__ is opaque Python to any loader."""

        def __init__(self, reference, count):
            self.reference = reference
            self.count = min(count, len(reference))

        def __len__(self):
            return self.count

        def __getitem__(self, index):
            image, target = self.reference[index]
            return image, target

    return DetectionTrainSet


def tree_cpu_seconds():
    """CPU of this process, its live descendants and the children each of
    them reaped: a worker that exits and is waited for is still counted."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    from machine import process_tree_cpu
    return process_tree_cpu(reaped=True)


def check_batch(batch, name):
    """The reference's collate_fn output: (images, targets), tuples of one
    float image [3, H, W] and one target dict per sample."""
    import torch
    images, targets = batch
    if len(images) != len(targets):
        raise SystemExit(f"{name}: a batch of {len(images)} images and {len(targets)} targets")
    for image, target in zip(images, targets):
        if not (isinstance(image, torch.Tensor) and image.dtype == torch.float32
                and image.dim() == 3 and image.shape[0] == 3):
            raise SystemExit(f"{name}: an image is {type(image).__name__} "
                             f"{getattr(image, 'dtype', '')} {tuple(getattr(image, 'shape', ()))}")
        missing = {"boxes", "labels", "masks", "image_id", "area", "iscrowd"} - set(target)
        if missing:
            raise SystemExit(f"{name}: a target lacks {sorted(missing)}")
        # Only the boxes follow the image through every preset: ssd's
        # RandomZoomOut and RandomIoUCrop leave the masks as they were.
        boxes, labels, masks = target["boxes"], target["labels"], target["masks"]
        if (boxes.dim() != 2 or boxes.shape[1] != 4 or len(labels) != len(boxes)
                or masks.dim() != 3):
            raise SystemExit(f"{name}: boxes {tuple(boxes.shape)}, labels "
                             f"{tuple(labels.shape)}, masks {tuple(masks.shape)}")


def answer_epochs(epoch, answers):
    """One timed epoch(), with the CPU of this process tree, per line
    'epoch' on stdin; each answer a JSON line on `answers`."""
    last = tree_cpu_seconds()
    for line in sys.stdin:
        if line.strip() != "epoch":
            break
        before = tree_cpu_seconds()
        images, seconds = epoch()
        after = tree_cpu_seconds()
        print(json.dumps({"images": images, "seconds": seconds, "cpu": after - before,
                          "idle_cpu": before - last}), file=answers, flush=True)
        last = after


def serve(args):
    """A warm-up epoch, then one timed epoch per line 'epoch' on stdin; each
    answer is a JSON line on stdout."""
    # The answers go to the driver on a descriptor of their own: stdout is
    # stderr from here on, so that what the dataset or a worker prints
    # cannot be read as an answer.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.path.insert(0, args.references_dir)  # the references import each other by bare name
    import coco_utils
    import presets
    import utils
    if args.loader == "native":
        serve_native(args, answers)
        return
    if args.loader == "torch":
        import torch.utils.data as tud
        make, origin = tud.DataLoader, "torch " + __import__("torch").__version__
    else:
        import feedline
        import feedline.torch
        make, origin = feedline.torch.DataLoader, os.path.dirname(feedline.__file__)
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools' "loading annotations..."
        reference = coco_utils.get_coco(
            args.cache, "train", presets.DetectionPresetTrain(data_augmentation=args.preset))
    if args.loader == "swap":
        # The references' dataset itself, as their train.py hands it over.
        import torch.utils.data as tud
        dataset = tud.Subset(reference, range(min(args.images, len(reference))))
    else:
        dataset = user_dataset_class()(reference, args.images)
    loader = make(dataset, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                  collate_fn=utils.collate_fn, persistent_workers=True)
    if args.loader == "swap":
        origin += f" ({loader.stats()['native_transforms']['text']})"

    def epoch(check=False):
        start = time.perf_counter()
        images = 0
        for batch in loader:
            if check:
                check_batch(batch, args.loader)
            images += len(batch[0])
        return images, time.perf_counter() - start

    images, _ = epoch(check=True)  # warm-up: the workers start
    if images != len(dataset):
        raise SystemExit(f"{args.loader}: the warm-up epoch gave {images} images of "
                         f"{len(dataset)}")
    print(json.dumps({"ready": True, "origin": origin}), file=answers, flush=True)
    answer_epochs(epoch, answers)


def serve_native(args, answers):
    """serve() for the native loader: CocoDetection's C++ pipeline in place
    of the reference's Python one (the hflip preset's steps)."""
    import feedline
    from feedline import io as fio
    from feedline.vision import datasets
    from feedline.vision import transforms as T
    steps = {"hflip": [T.RandomHorizontalFlip(0.5)],
             "ssd": [T.RandomPhotometricDistort(), T.RandomZoomOut(fill=[123.0, 117.0, 104.0]),
                     T.RandomIoUCrop(), T.RandomHorizontalFlip(0.5)],
             "ssdlite": [T.RandomIoUCrop(), T.RandomHorizontalFlip(0.5)]}
    if args.preset not in steps:
        raise SystemExit(f"native: the {args.preset} preset's transforms are not native yet")
    # The ssd presets' masks as the references leave them (source size).
    data = datasets.CocoDetection(
        os.path.join(args.cache, "train2017"),
        os.path.join(args.cache, "annotations", "instances_train2017.json"),
        T.Compose(steps[args.preset] + [T.PILToTensor(), T.ConvertImageDtype("float32")]),
        masks=True if args.preset == "hflip" else "source", skip_empty=True)
    data = fio.Subset(data, range(min(args.images, len(data))))
    loader = feedline.DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                                 persistent_workers=True)

    def epoch(check=False):
        start = time.perf_counter()
        images = 0
        for batch in loader:
            pictures, targets = datasets.detection_targets(batch)
            if check:
                for picture, target in zip(pictures, targets):
                    if picture.dtype.name != "float32" or picture.shape[0] != 3:
                        raise SystemExit(f"native: an image is {picture.dtype} {picture.shape}")
                    if target["masks"].shape[0] < len(target["boxes"]):
                        raise SystemExit("native: masks and boxes disagree")
            images += len(pictures)
        return images, time.perf_counter() - start

    images, _ = epoch(check=True)
    if images != len(data):
        raise SystemExit(f"native: the warm-up epoch gave {images} images of {len(data)}")
    print(json.dumps({"ready": True, "origin": os.path.dirname(feedline.__file__) + " (native)"}),
          file=answers, flush=True)
    answer_epochs(epoch, answers)


# ----------------------------------------------------------------------------
# The driver

def start_loader(name, pythonpath, preset, args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the fetched references stay as fetched
    cmd = [sys.executable, os.path.abspath(__file__), "--serve", "--loader", name,
           "--preset", preset, "--images", str(args.images), "--cache", args.cache,
           "--references-dir", args.references_dir]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    answer = proc.stdout.readline()
    if not answer:
        proc.wait()
        raise SystemExit(f"the {name} loader ({preset}) exited with {proc.returncode} before "
                         f"its warm-up epoch ended (PYTHONPATH={pythonpath!r})")
    return proc, json.loads(answer)["origin"]


def timed_epoch(name, proc):
    proc.stdin.write("epoch\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"the {name} loader exited during a timed epoch")
    return json.loads(line)


def run_preset(preset, loaders, args):
    procs, origins = {}, {}
    try:
        for name, path in loaders.items():
            procs[name], origins[name] = start_loader(name, path, preset, args)
        names = list(loaders)
        runs = {name: [] for name in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                runs[name].append(timed_epoch(name, procs[name]))
    finally:
        for proc in procs.values():
            proc.stdin.close()
        for proc in procs.values():
            proc.wait()
    rate = {n: [a["images"] / a["seconds"] for a in v] for n, v in runs.items()}
    cpu = {n: [a["cpu"] / a["images"] * 1e3 for a in v] for n, v in runs.items()}
    idle = {n: sum(a["idle_cpu"] for a in v) / max(sum(a["cpu"] for a in v), 1e-9)
            for n, v in runs.items()}
    med = {n: statistics.median(v) for n, v in rate.items()}
    med_cpu = {n: statistics.median(v) for n, v in cpu.items()}
    print(f"\n{preset}: DetectionPresetTrain(data_augmentation={preset!r}), {args.images} "
          f"images, batch {BATCH}, {WORKERS} worker processes, {args.rounds} alternating "
          f"round{'s' if args.rounds != 1 else ''}")
    for name in names:
        line = (f"  {name:9s} median {med[name]:7.1f} images/s "
                f"(range {min(rate[name]):.1f}-{max(rate[name]):.1f})  "
                f"CPU {med_cpu[name]:6.1f} ms/image")
        if name != "torch" and "torch" in med:
            line += (f"  {med[name] / med['torch']:.2f}x torch's rate, "
                     f"{med_cpu[name] / med_cpu['torch']:.2f}x its CPU")
        if name in ("native", "swap") and "feedline" in med:
            line += f"  {med[name] / med['feedline']:.2f}x feedline.torch's"
        if name == "feedline" and "main" in med:
            line += f"  {med[name] / med['main']:.2f}x main's rate"
        print(line)
        if idle[name] > 0.02:
            print(f"  {'':9s} (and {idle[name] * 100:.0f}% more CPU between its epochs, "
                  f"while the other loaders ran)")
    for name in names:
        print(f"  {name:9s} from {origins[name]}")
    sys.stdout.flush()


def machine_line():
    sys.path.insert(0, HERE)
    from machine import cpu_model
    load = os.getloadavg()
    return (f"{cpu_model()}, {os.cpu_count()} cores, load average {load[0]:.2f} "
            f"{load[1]:.2f} {load[2]:.2f} at the start")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--images", type=int, default=800,
                        help="images per epoch, the first of the cache (written when missing)")
    parser.add_argument("--presets", default="hflip,ssd")
    parser.add_argument("--cache", default=DEFAULT_CACHE,
                        help="where the synthesized COCO dataset is kept")
    parser.add_argument("--references", default=DEFAULT_REFERENCES,
                        help="where torchvision's references are fetched to "
                             "(default: build/peer-tests/references)")
    parser.add_argument("--pythonpath", default=os.path.join(ROOT, "build", "python"),
                        help="where this checkout's feedline is built (default: build/python)")
    parser.add_argument("--baseline-pythonpath", default=None,
                        help="another feedline build to compare with (e.g. main's build/python)")
    parser.add_argument("--no-torch", action="store_true", help="leave torch's DataLoader out")
    parser.add_argument("--swap", action="store_true",
                        help="add feedline.torch over the references' own dataset (lowered "
                             "where the swap can)")
    parser.add_argument("--native", action="store_true",
                        help="add feedline's native CocoDetection (hflip, ssd, ssdlite)")
    # Internal: one loader served to the driver.
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--loader", help=argparse.SUPPRESS)
    parser.add_argument("--preset", help=argparse.SUPPRESS)
    parser.add_argument("--references-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return
    presets = [p for p in args.presets.split(",") if p]
    unknown = [p for p in presets if p not in PRESETS]
    if unknown or not presets:
        parser.error(f"--presets: unknown preset {unknown[0] if unknown else ''!r} "
                     f"(the reference's: {', '.join(PRESETS)})")
    if args.rounds < 1 or args.images < BATCH:
        parser.error(f"--rounds must be >= 1 and --images >= {BATCH}")
    import importlib.util
    if importlib.util.find_spec("pycocotools") is None:
        raise SystemExit(f"{sys.executable} has no pycocotools, which torchvision's detection "
                         "references import: run scripts/make_detection_bench_venv.sh and this "
                         "script with .venv/detection-bench/bin/python (or make bench-detection)")
    loaders = {}
    if not args.no_torch:
        loaders["torch"] = ""
    if not os.path.isdir(os.path.join(args.pythonpath, "feedline")):
        parser.error(f"--pythonpath {args.pythonpath}: no feedline package there")
    loaders["feedline"] = os.path.abspath(args.pythonpath)
    if args.baseline_pythonpath:
        if not os.path.isdir(os.path.join(args.baseline_pythonpath, "feedline")):
            parser.error(f"--baseline-pythonpath {args.baseline_pythonpath}: no feedline "
                         "package there (give a build's python folder)")
        loaders["main"] = os.path.abspath(args.baseline_pythonpath)

    args.cache = os.path.abspath(os.path.expanduser(args.cache))
    args.references_dir = ensure_references(os.path.abspath(args.references))
    written = ensure_dataset(args.cache, args.images)
    import PIL
    import torch
    import torchvision
    from importlib.metadata import version
    print(f"detection bench, {datetime.date.today()}: {machine_line()}")
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}, pycocotools {version('pycocotools')}, "
          f"Pillow {PIL.__version__}; references from {args.references_dir}")
    print(f"data: {args.cache} ({written} images written now), JPEG quality 90, long side "
          f"{LONG_SIDE} px, 1-8 polygon objects per image")
    for preset in presets:
        with_native = dict(loaders)
        if args.swap:
            with_native["swap"] = loaders["feedline"]
        if args.native and preset in ("hflip", "ssd", "ssdlite"):
            with_native["native"] = loaders["feedline"]
        run_preset(preset, with_native, args)


if __name__ == "__main__":
    main()
