#!/usr/bin/env python3
"""Checks that no function of src/loader that runs under the scheduler's lock is longer than 60 lines.

Every worker and the consumer wait for the scheduler's mutex, so what runs
under it is kept to short steps that a reader can check at a glance
(src/loader/README.md, "The engine"). A function of src/loader/*.cc runs
under the lock when
  - its name ends in "Locked" (the house convention: it REQUIRES the lock),
  - its body takes the lock (a MutexLock on mu(), scheduler_->mu() or
    lock_->mu), or
  - it belongs to a part the lock guards: a class that a header of
    src/loader holds GUARDED_BY or PT_GUARDED_BY mu() or scheduler_->mu(),
    or that such a part holds as a plain member (SlotHoldBack, inside
    RowClaims).
A function is measured from the first line of its signature to its closing
brace. Functions are found as clang-format lays them out: a definition
starts at column 0 and ends with a "}" at column 0.

Fails (exit status 1), naming each function, its file, line and length.
Run from anywhere: `python3 scripts/check_lock_function_length.py [repository root]`.
"""

import glob
import os
import re
import sys

LIMIT = 60
# The scheduler's mutex, by the names the loader's code gives it.
SCHEDULER_MUTEX = r"(?:scheduler_->mu\(\)|mu\(\)|lock_->mu)"
TAKES_THE_LOCK = re.compile(r"MutexLock\s+\w+\(&" + SCHEDULER_MUTEX + r"\)")
NOT_A_SIGNATURE = re.compile(
    r"(//|#|namespace\b|}|using\b|template\b|class\b|struct\b|extern\b|constexpr\b|static constexpr\b|enum\b)")


def functions(path):
    """(name, first line, length, body) of each function defined at namespace scope in `path`."""
    lines = open(path, encoding="utf-8").read().split("\n")
    start = None
    for i, line in enumerate(lines):
        if start is None:
            if line and not line[0].isspace() and "(" in line and not NOT_A_SIGNATURE.match(line):
                start = i
            continue
        if line.startswith("}"):
            if line.strip() in ("}", "};"):
                signature = " ".join(lines[start:start + 3])
                name = re.search(r"([\w:~]+)\s*\(", signature)
                yield (name.group(1) if name else lines[start].strip(), start + 1, i - start + 1,
                       "\n".join(lines[start:i + 1]))
            start = None
        elif line.endswith(";") and not line[0].isspace():
            start = None  # a declaration, not a definition


def guarded_classes(loader_dir):
    """Classes whose state the scheduler's lock guards, found from the annotations."""
    headers = glob.glob(os.path.join(loader_dir, "*.h"))
    texts = {h: open(h, encoding="utf-8").read() for h in headers}
    defined = set()
    for text in texts.values():
        defined.update(re.findall(r"^(?:class|struct)\s+(\w+)", text, flags=re.M))
    guarded = set()
    for text in texts.values():
        for member_type in re.findall(r"^\s+(?:const\s+)?(\w+)\s*\*?\s*(?:const\s+)?\w+_\s+"
                                      r"(?:PT_)?GUARDED_BY\(" + SCHEDULER_MUTEX + r"\)", text,
                                      flags=re.M):
            if member_type in defined:
                guarded.add(member_type)
    # One level down: the plain members of a guarded part are guarded with it.
    for text in texts.values():
        for cls in list(guarded):
            body = re.search(r"^class\s+%s\b[^{;]*\{(.*?)^};" % cls, text, flags=re.M | re.S)
            if not body:
                continue
            for member_type in re.findall(r"^\s+(\w+)\s+\w+_;", body.group(1), flags=re.M):
                if member_type in defined:
                    guarded.add(member_type)
    return guarded


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    loader_dir = os.path.join(root, "src", "loader")
    guarded = guarded_classes(loader_dir)
    failures, checked = [], 0
    for path in sorted(glob.glob(os.path.join(loader_dir, "*.cc"))):
        for name, line, length, body in functions(path):
            owner = name.split("::")[0] if "::" in name else ""
            under_lock = (name.endswith("Locked") or TAKES_THE_LOCK.search(body) or
                          owner in guarded)
            if not under_lock:
                continue
            checked += 1
            if length > LIMIT:
                failures.append("%s:%d: %s is %d lines long and runs under the scheduler's lock "
                                "(at most %d)" % (os.path.relpath(path, root), line, name, length,
                                                  LIMIT))
    for failure in failures:
        print(failure)
    if failures:
        return 1
    print("lock function length check: %d functions of src/loader run under the scheduler's "
          "lock, none longer than %d lines (guarded parts: %s)"
          % (checked, LIMIT, ", ".join(sorted(guarded))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
