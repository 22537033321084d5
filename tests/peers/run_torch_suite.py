"""Runs torch's own DataLoader test suite (test/test_dataloader.py, fetched
at test time by scripts/fetch_torch_tests.sh) twice with one interpreter:
as torch ships it, and with its one import of DataLoader swapped for
feedline.torch's. Every test that passes with torch must pass with
feedline, except those listed in tests/peers/torch_suite_exceptions.txt
(tests that read torch's private attributes; docs/python.md says why).

    run_torch_suite.py --python PY --suite test_dataloader.py --out DIR
                       [--pythonpath P] [-k EXPR]

Prints each test that passes with torch and fails with feedline, then the
closing line 'torch-suite: N passed, N failed' (N passed: tests passing with
both; N failed: passing with torch only), and exits non-zero if any failed.
The torch run is kept in DIR keyed by the suite's and interpreter's
identity, so a rerun only runs the feedline side.
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
EXCEPTIONS = os.path.join(HERE, "torch_suite_exceptions.txt")
SUITE_SECONDS = 1200  # one side's run; each takes 1-5 minutes on 2 cores

# The swap a user makes: DataLoader comes from feedline.torch; every other
# name of the import (the datasets, samplers, IterableDataset) stays torch's.
IMPORT_BLOCK = re.compile(r"^from torch\.utils\.data import \(\n(?P<names>(?:    .*\n)+?)\)\n", re.M)


def swap_import(source):
    match = IMPORT_BLOCK.search(source)
    if match is None or "    DataLoader,\n" not in match.group("names"):
        raise SystemExit("run_torch_suite: the suite's `from torch.utils.data import (...)` "
                         "with DataLoader was not found; the swap cannot be made")
    names = match.group("names").replace("    DataLoader,\n", "")
    block = ("from torch.utils.data import (\n" + names + ")\n"
             "from feedline.torch import DataLoader  # the one-line swap\n")
    return source[: match.start()] + block + source[match.end():]


def read_exceptions():
    names = set()
    with open(EXCEPTIONS) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(line)
    return names


def outcomes(junit_path):
    """{test id: "passed" | "failed" | "skipped"} from a pytest junit file."""
    result = {}
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        name = case.get("classname", "").split(".")[-1] + "::" + case.get("name", "")
        if case.find("skipped") is not None:
            result[name] = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            result[name] = "failed"
        else:
            result[name] = "passed"
    return result


def run_pytest(python, test_file, junit, env, extra):
    # A test stuck for 5 minutes prints every thread's stack into the log;
    # the whole run is bounded, so make test cannot wait forever.
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
           "-o", "faulthandler_timeout=300", f"--junitxml={junit}",
           os.path.basename(test_file)] + extra
    start = time.monotonic()
    log = junit[: -len(".xml")] + ".log"
    with open(log, "w") as out:
        try:
            rc = subprocess.call(cmd, cwd=os.path.dirname(test_file), env=env, stdout=out,
                                 stderr=subprocess.STDOUT, timeout=SUITE_SECONDS)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"run_torch_suite: the suite ran past {SUITE_SECONDS} s; see {log}")
    if not os.path.exists(junit):
        raise SystemExit(f"run_torch_suite: pytest wrote no results (exit {rc}); see {log}")
    print(f"  {os.path.basename(os.path.dirname(test_file))}: pytest exit {rc} "
          f"in {time.monotonic() - start:.0f} s (log: {log})", flush=True)
    return outcomes(junit)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True)
    parser.add_argument("--suite", required=True, help="torch's test_dataloader.py")
    parser.add_argument("--out", required=True, help="working directory for the two runs")
    parser.add_argument("--pythonpath", default="", help="prepended to PYTHONPATH")
    parser.add_argument("-k", default=None, help="pytest -k expression (a partial run)")
    args = parser.parse_args()

    with open(args.suite) as f:
        source = f.read()
    version = subprocess.check_output(
        [args.python, "-c", "import sys, torch; print(torch.__version__, sys.version_info[:2])"],
        text=True).strip()
    key = hashlib.sha256((source + version + (args.k or "")).encode()).hexdigest()[:16]
    out = os.path.abspath(args.out)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    extra = ["-k", args.k] if args.k else []
    print(f"torch's DataLoader suite ({os.path.abspath(args.suite)}), torch {version}", flush=True)

    runs = {}
    for side, text in (("torch", source), ("feedline", swap_import(source))):
        folder = os.path.join(out, side)
        os.makedirs(folder, exist_ok=True)
        test_file = os.path.join(folder, "test_dataloader.py")
        with open(test_file, "w") as f:
            f.write(text)
        junit = os.path.join(folder, f"results-{key}.xml")
        if side == "torch" and os.path.exists(junit):
            runs[side] = outcomes(junit)
            print(f"  torch: kept from an earlier run ({junit})", flush=True)
            continue
        if os.path.exists(junit):
            os.remove(junit)
        runs[side] = run_pytest(args.python, test_file, junit, env, extra)

    allowed = read_exceptions()
    torch_passed = sorted(t for t, o in runs["torch"].items() if o == "passed")
    failed, excused = [], []
    for test in torch_passed:
        if runs["feedline"].get(test) == "passed":
            continue
        (excused if test in allowed else failed).append(test)
    for test in excused:
        print(f"  excepted (docs/python.md): {test}")
    for test in failed:
        print(f"  FAILED with feedline, passes with torch: {test} "
              f"({runs['feedline'].get(test, 'not run')})")
    counts = {o: sum(1 for v in runs["torch"].values() if v == o)
              for o in ("passed", "failed", "skipped")}
    print(f"  with torch: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped; excepted: {len(excused)}")
    print(f"torch-suite: {len(torch_passed) - len(failed) - len(excused)} passed, "
          f"{len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
