#!/usr/bin/env python3
"""make test-thread-safety: clang's thread-safety analysis over the library.

The locking the engine declares (GUARDED_BY, REQUIRES in src/loader/ and
the other guarded parts) is checked by clang's -Werror=thread-safety, which
runs in the compiler's semantic analysis. So each of the library's
translation units (src/**/*.cc, from the compile_commands.json of a build
folder configured with clang) is compiled with -fsyntax-only: the analysis
whole, without generating code that no test runs.

Usage: scripts/check_thread_safety.py BUILD_DIR [--jobs N]
Exits 1, printing clang's diagnostics, if any unit fails.
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys


def syntax_only(entry):
    """The entry's compile command, analysing only: no -o, no -c."""
    words = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word == "-o":
            skip = True
            continue
        if word == "-c":
            continue
        out.append(word)
    # A launcher (ccache) before the compiler would cache nothing here.
    if os.path.basename(out[0]) == "ccache":
        out = out[1:]
    return out + ["-fsyntax-only"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(args.build, "compile_commands.json")) as f:
        entries = json.load(f)
    src = os.path.join(root, "src") + os.sep
    units = {}
    for entry in entries:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if path.startswith(src):
            units[path] = entry  # a unit compiled for two targets is checked once
    if not units:
        sys.exit(f"thread-safety check: no unit of src/ in {args.build}/compile_commands.json")
    command = syntax_only(next(iter(units.values())))
    if "clang" not in os.path.basename(command[0]):
        sys.exit(f"thread-safety check: {args.build} compiles with {command[0]}, not clang")

    def check(item):
        path, entry = item
        done = subprocess.run(syntax_only(entry), cwd=entry["directory"], capture_output=True,
                              text=True)
        return path, done.returncode, done.stdout + done.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for path, code, output in pool.map(check, sorted(units.items())):
            if code != 0:
                failed += 1
                print(output, end="")
                print(f"thread-safety check: {os.path.relpath(path, root)} failed")
    if failed:
        sys.exit(f"thread-safety check: {failed} of {len(units)} units of src/ failed")
    print(f"thread-safety check: {len(units)} units of src/ pass clang -Werror=thread-safety "
          "(-fsyntax-only)")


if __name__ == "__main__":
    main()
