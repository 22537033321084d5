"""Runs torch's own DataLoader test suite (test/test_dataloader.py, fetched
at test time by scripts/fetch_torch_tests.sh) with its one import of
DataLoader swapped for feedline.torch's, then, with torch's own DataLoader,
every test that did not pass with feedline. Every test that passes with torch
must pass with feedline, except those listed in
tests/peers/torch_suite_exceptions.txt (tests that read torch's private
attributes; docs/python.md says why).

    run_torch_suite.py --python PY --suite test_dataloader.py --out DIR
                       [--pythonpath P] [-k EXPR] [--torch-side all|failed]

torch's side runs only the tests feedline did not pass (--torch-side failed,
the default: a test that passes with feedline meets the contract whatever it
does with torch, and the suite takes minutes on 2 cores); --torch-side all
runs the whole suite with torch too, for its counts. Prints each test that
passes with torch and fails with feedline, then the closing line
'torch-suite: N passed, N failed' (N passed: tests passing with feedline; N
failed: tests passing with torch only), and exits non-zero if any failed.
The torch run is kept in DIR keyed by the suite's, the interpreter's and the
tests' identity, so a rerun only runs the feedline side.
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


def node_id(test):
    """pytest's node id of a test named "Class::test" in outcomes()."""
    return "test_dataloader.py::" + test


def run_pytest(python, test_file, junit, env, extra, node_ids=None):
    # A test stuck for 5 minutes prints every thread's stack into the log;
    # the whole run is bounded, so make test cannot wait forever.
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
           "-o", "faulthandler_timeout=300", f"--junitxml={junit}"]
    cmd += node_ids if node_ids else [os.path.basename(test_file)] + extra
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
    # 0: all passed, 1: some failed, which the comparison below judges. Any
    # other exit is a suite that did not run (2: collection interrupted, e.g.
    # a module it imports is missing; 3: internal error; 4: usage; 5: no
    # test): never a pass.
    if rc not in (0, 1):
        raise SystemExit(f"run_torch_suite: pytest exit {rc}: the suite did not run; see {log}")
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
    parser.add_argument("--torch-side", choices=("all", "failed"), default="failed",
                        help="run every test with torch's DataLoader too, or only those "
                             "that did not pass with feedline")
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

    def write_side(side, text):
        folder = os.path.join(out, side)
        os.makedirs(folder, exist_ok=True)
        test_file = os.path.join(folder, "test_dataloader.py")
        with open(test_file, "w") as f:
            f.write(text)
        return folder, test_file

    folder, test_file = write_side("feedline", swap_import(source))
    junit = os.path.join(folder, f"results-{key}.xml")
    if os.path.exists(junit):
        os.remove(junit)
    with_feedline = run_pytest(args.python, test_file, junit, env, extra)

    # torch's side: the tests that did not pass with feedline, by node id.
    if args.torch_side == "all":
        selected = None
    else:
        selected = sorted(t for t, o in with_feedline.items() if o != "passed")
    with_torch = {}
    if selected is None or selected:
        folder, test_file = write_side("torch", source)
        torch_key = hashlib.sha256(
            (key + "\n".join(selected or ["all"])).encode()).hexdigest()[:16]
        junit = os.path.join(folder, f"results-{torch_key}.xml")
        if os.path.exists(junit):
            with_torch = outcomes(junit)
            print(f"  torch: kept from an earlier run ({junit})", flush=True)
        else:
            with_torch = run_pytest(args.python, test_file, junit, env, extra,
                                    [node_id(t) for t in selected or []])

    allowed = read_exceptions()
    failed, excused = [], []
    for test in sorted(t for t, o in with_torch.items() if o == "passed"):
        if with_feedline.get(test) == "passed":
            continue
        (excused if test in allowed else failed).append(test)
    for test in excused:
        print(f"  excepted (docs/python.md): {test}")
    for test in failed:
        print(f"  FAILED with feedline, passes with torch: {test} "
              f"({with_feedline.get(test, 'not run')})")
    counts = {o: sum(1 for v in with_feedline.values() if v == o)
              for o in ("passed", "failed", "skipped")}
    print(f"  with feedline: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    counts = {o: sum(1 for v in with_torch.values() if v == o)
              for o in ("passed", "failed", "skipped")}
    which = "every test" if selected is None else f"the {len(selected)} not passed with feedline"
    print(f"  with torch ({which}): {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped; excepted: {len(excused)}")
    passed = sum(1 for o in with_feedline.values() if o == "passed")
    print(f"torch-suite: {passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
