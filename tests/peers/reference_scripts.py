"""What run_reference_train.py and run_reference_detection_train.py share:
torchvision's reference scripts (fetched at test time, never committed)
copied twice, once as they are and once with the one-line swap, and one
of their train.py runs."""

import argparse
import os
import shutil
import sys
import subprocess
import time

SWAP = ("import feedline.torch; "
        "torch.utils.data.DataLoader = feedline.torch.DataLoader  # the swap\n")

# train.py runs as its own __main__, with logging at INFO (where
# feedline.torch says what it loads natively), as a user's
# logging.basicConfig(level=logging.INFO) would show it.
LAUNCHER = ("import logging, runpy, sys; logging.basicConfig(level=logging.INFO); "
            "sys.argv[0] = 'train.py'; runpy.run_path('train.py', run_name='__main__')")


def parse_arguments(doc, epochs, add_data_arguments):
    """The scripts' shared arguments (--references, --out, --python,
    --pythonpath, --epochs, --timeout) and those `add_data_arguments(parser)`
    adds; --out made and both paths absolute (train.py runs in its own
    folder)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--references", required=True,
                        help="the folder fetch_torchvision_references.sh wrote")
    parser.add_argument("--out", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pythonpath", help="where feedline is (build/python)")
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--timeout", type=int, default=900)
    add_data_arguments(parser)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    args.out = os.path.abspath(args.out)
    if args.pythonpath:
        args.pythonpath = os.path.abspath(args.pythonpath)
    return args


def copy_scripts(source, out):
    """{"torch": folder, "feedline": folder}: `source` copied into `out`
    twice, the feedline copy's train.py with SWAP after its
    `import torch.utils.data`."""
    scripts = {}
    for label in ("torch", "feedline"):
        target = os.path.join(out, label)
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
    return scripts


def run_train(label, script_dir, out, arguments, python, pythonpath, timeout):
    """Runs script_dir/train.py with `arguments` (and --output-dir
    out/LABEL-output); its log is kept in out/LABEL.log. Returns (exit
    status, log, seconds)."""
    out_dir = os.path.join(out, label + "-output")
    os.makedirs(out_dir, exist_ok=True)
    command = [python, "-c", LAUNCHER] + list(arguments) + ["--output-dir", out_dir]
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            [pythonpath] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    start = time.monotonic()
    result = subprocess.run(command, cwd=script_dir, env=env, capture_output=True, text=True,
                            timeout=timeout)
    seconds = time.monotonic() - start
    log = result.stdout + result.stderr
    with open(os.path.join(out, label + ".log"), "w") as f:
        f.write(log)
    return result.returncode, log, seconds
