#!/usr/bin/env python3
"""Checks that every unit of the library has a test file where one looks for it.

Each src/<area>/<name>.cc that holds logic has tests/<area>/<name>_test.cc,
which drives the unit through its interface (scenarios that several test
files share live in tests/<area>/scenarios/). EXCEPTIONS names the few that
have none, each with its reason; a reason that says "tested through" names
the test files that do test the unit, and each must exist.

Fails (exit status 1), naming each file, on a unit without a test file and
not excepted, on an exception whose unit is gone or now has its test file
(so the list only shrinks), and on a "tested through" file that is missing.
Run from anywhere: `python3 scripts/check_test_files.py [repository root]`.
"""

import os
import re
import sys

# Why a unit has no test file of its own.
EXCEPTIONS = {
    # A C++ stream's items from worker processes: driven through DataLoader.
    "src/process/process_iterable_dataset.cc": "tested through tests/process/native_stream_test.cc",
    # Tested through the public class whose behaviour they are.
    # The Scheduler's layers over one state (one object, so that clang names
    # one lock through all of them): driven through its verbs.
    "src/loader/scheduler_state.cc": "tested through tests/loader/scheduler_test.cc",
    # Starting and stopping the attached pool, worker_init's completion and
    # failure: driven by the tests that play the workers.
    "src/loader/worker_control.cc": "tested through tests/loader/worker_init_test.cc "
                                    "and tests/loader/map_worker_loop_test.cc",
    "src/loader/claim_control.cc": "tested through tests/loader/scheduler_test.cc "
                                   "and tests/loader/row_claims_test.cc",
    # The map-style SchedulingMode, which the Engine picks for a Dataset.
    "src/loader/map_scheduling.cc": "tested through tests/loader/engine_test.cc "
                                    "and tests/loader/engine_controls_test.cc",
    "src/loader_factory/data_loader.cc": "tested through tests/loader/data_loader_test.cc",
    "src/loader/slot_allocator.cc": "tested through tests/loader/slot_test.cc",
    "src/loader/slot_layout.cc": "tested through tests/loader/learned_layout_test.cc "
                                 "and tests/loader/slot_test.cc",
    "src/loader/slot_hold_back.cc": "tested through tests/process/slot_hold_back_patterns_test.cc",
    "src/process/shared_slot_allocator.cc": "tested through tests/process/shared_slots_test.cc",
    "src/storage/pack.cc": "tested through tests/storage/shard_dataset_test.cc",
    "src/storage/shard_writer.cc": "tested through tests/storage/shard_dataset_test.cc",
    "src/storage/local_pack_store.cc": "tested through tests/storage/pack_store_test.cc "
                                       "and tests/storage/shard_dataset_test.cc",
    "src/storage/cached_pack_store.cc": "tested through tests/storage/shard_cache_test.cc",
    "src/storage/cached_shard_source.cc": "tested through tests/storage/pack_source_faults_test.cc "
                                          "and tests/storage/shard_cache_test.cc",
    "src/vision/auto_augment.cc": "tested through tests/vision/augment_test.cc",
    "src/vision/color_jitter.cc": "tested through tests/vision/augment_test.cc",
    "src/vision/random_erasing.cc": "tested through tests/vision/augment_test.cc",
    # The row-group interface's checks of a decoded group, run on every
    # group a ColumnarDataset reads.
    "src/text/row_group_source.cc": "tested through tests/text/columnar_dataset_test.cc",
}

TEST_FILE = re.compile(r"tests/[\w/]+_test\.cc")


def units(root):
    """Every src/<area>/<name>.cc, relative to `root`."""
    src = os.path.join(root, "src")
    for area in sorted(os.listdir(src)):
        folder = os.path.join(src, area)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".cc"):
                yield f"src/{area}/{name}"


def test_file_of(unit):
    _, area, name = unit.split("/")
    return f"tests/{area}/{name[: -len('.cc')]}_test.cc"


def problems_of(root):
    problems = []
    present = set(units(root))
    for unit in sorted(present):
        test = test_file_of(unit)
        has_test = os.path.isfile(os.path.join(root, test))
        if unit in EXCEPTIONS:
            if has_test:
                problems.append(f"{unit}: has {test} now: remove its entry from EXCEPTIONS")
            for named in TEST_FILE.findall(EXCEPTIONS[unit]):
                if not os.path.isfile(os.path.join(root, named)):
                    problems.append(f"{unit}: EXCEPTIONS says it is tested through {named}, "
                                    "which does not exist")
        elif not has_test:
            problems.append(f"{unit}: no {test} (add one that tests the unit through its "
                            "interface, or an entry with its reason to EXCEPTIONS)")
    for unit in sorted(set(EXCEPTIONS) - present):
        problems.append(f"{unit}: listed in EXCEPTIONS but no longer exists: remove its entry")
    return problems, len(present)


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems, count = problems_of(root)
    if problems:
        print("test file check (scripts/check_test_files.py):", file=sys.stderr)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1
    print(f"test file check: {count - len(EXCEPTIONS)} of {count} units in src/ have "
          f"tests/<area>/<name>_test.cc; {len(EXCEPTIONS)} excepted with a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
