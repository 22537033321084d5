#!/usr/bin/env python3
"""make test-thread-safety: clang's thread-safety analysis over the library.

The locking the engine declares (GUARDED_BY, REQUIRES in src/loader/ and
the other guarded parts) is checked by clang's -Werror=thread-safety, which
runs in the compiler's semantic analysis. So each of the library's
translation units (src/**/*.cc, from the compile_commands.json of a build
folder configured with clang) that can hold an annotation is compiled with
-fsyntax-only: the analysis whole, without generating code that no test
runs. A unit can hold one only if it includes src/core/thread_annotations.h,
where the annotations' macros are defined (libstdc++'s mutexes carry none),
so the others are only preprocessed to list their includes (-MM, a tenth of
the parse): two thirds of the units, the image code among them, need no
parse at all.

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


def compile_command(entry):
    """The entry's compile command without its output: no -o, no -c."""
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
    return out


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
    command = compile_command(next(iter(units.values())))
    annotations = os.path.join(root, "src", "core", "thread_annotations.h")
    if "clang" not in os.path.basename(command[0]):
        sys.exit(f"thread-safety check: {args.build} compiles with {command[0]}, not clang")

    def includes_annotations(entry):
        """Whether the unit includes thread_annotations.h, from its -MM list."""
        done = subprocess.run(compile_command(entry) + ["-MM"], cwd=entry["directory"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            return True  # the parse below reports what is wrong
        listed = done.stdout.replace("\\\n", " ").split()[1:]
        return any(os.path.normpath(os.path.join(entry["directory"], name)) == annotations
                   for name in listed)

    def check(item):
        path, entry = item
        if not includes_annotations(entry):
            return path, None, ""
        done = subprocess.run(compile_command(entry) + ["-fsyntax-only"], cwd=entry["directory"],
                              capture_output=True, text=True)
        return path, done.returncode, done.stdout + done.stderr

    failed = analysed = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for path, code, output in pool.map(check, sorted(units.items())):
            if code is None:
                continue
            analysed += 1
            if code != 0:
                failed += 1
                print(output, end="")
                print(f"thread-safety check: {os.path.relpath(path, root)} failed")
    if failed:
        sys.exit(f"thread-safety check: {failed} of {analysed} units of src/ failed")
    if analysed == 0:
        sys.exit(f"thread-safety check: no unit of {args.build} includes {annotations}")
    print(f"thread-safety check: {analysed} units of src/ that include thread_annotations.h "
          f"pass clang -Werror=thread-safety (-fsyntax-only); the other {len(units) - analysed} "
          "hold no annotation")


if __name__ == "__main__":
    main()
