#!/usr/bin/python3
"""The online tuner (--workers auto --prefetch auto) side by side with fixed
settings, in one run, on a JPEG folder written by `feedline synth` and the
train pipeline (RandomResizedCrop(224) + flip + normalize), batch 64.

Cases (each run is its own `feedline bench --json` process, so peak RSS is
per run; the settings alternate within each round; medians of --rounds):

  loader-bound  no step. The best fixed setting is what `feedline tune`
                recommends (and the best it measured); "auto" is compared on
                the whole epoch and after its first fifth.
  step-bound    a simulated 80 ms step (--step-ms): wait share and peak RSS
                of "auto" against one worker per core (prefetch 2).
  step change   80 ms, then 20 ms (--change-to-ms) after half of the
                batches: the wait after the change, and after its first 3 s.
  overhead      trivial samples (--synthetic, batch 256), where the hand-off
                of each batch dominates: fixed 2 workers, prefetch 2 against
                prefetch "auto" and against both "auto", with no step (the
                engine alone) and with a 0.1 ms step (the loop the
                bottleneck); and, when BUILD/bench/tuner_tick_benchmark
                exists, the tuner's cost per batch and per check.

The load average (os.getloadavg) is printed before each case: other jobs on
a shared machine move every number here.

Usage: bench/tuner_bench.py [--build build] [--data DIR] [--images 4000]
           [--rounds 3] [--cases loader,step,change,overhead]
           [--step-ms 80] [--change-to-ms 20]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

from machine import cpu_model  # bench/machine.py


def run_json(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


RAW = []  # every run's JSON, for --raw


def bench(feedline, source, *extra):
    result = run_json([feedline, "bench", source, "--quiet", "--json", *extra])
    RAW.append({"args": list(extra), "result": result})
    return result


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def load():
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def tuner_summary(result):
    tuner = result.get("tuner")
    if not tuner:
        return ""
    return f"{tuner['workers']} workers, {tuner['slots']} slots, {tuner['decisions']} changes"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--data", default=None, help="JPEG folder (default: BUILD/tuner-data)")
    parser.add_argument("--images", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default="loader,step,change,overhead")
    parser.add_argument("--raw", default=None, help="write every run's JSON to this file")
    parser.add_argument("--step-ms", type=float, default=80,
                        help="the step-bound case's step, and the first step of the change case")
    parser.add_argument("--change-to-ms", type=float, default=20,
                        help="the step after the change")
    args = parser.parse_args()
    feedline = os.path.join(args.build, "tools", "feedline")
    if not os.path.exists(feedline):
        feedline = os.path.join(args.build, "feedline")
    data = args.data or os.path.join(args.build, "tuner-data")
    if not os.path.isdir(data):
        subprocess.run([feedline, "synth", data, "--images", str(args.images), "--classes", "10"],
                       check=True, capture_output=True)
    cases = set(args.cases.split(","))
    cores = len(os.sched_getaffinity(0))
    print(f"# feedline tuner benchmark, {datetime.date.today()}, {cpu_model()}, {cores} cores")
    print(f"# data: {data} ({args.images} JPEGs), train pipeline, batch 64, "
          f"median of {args.rounds} rounds; {datetime.datetime.now(datetime.timezone.utc):%H:%M} UTC, {load()}")
    bench(feedline, data, "--workers", str(cores), "--max-batches", "1000")  # page cache

    if "loader" in cases:
        tune = run_json([feedline, "tune", data, "--quiet", "--json", "--no-online"])
        rec = tune["recommended"]
        best = max(tune["results"], key=lambda r: r["images_per_s"])
        fixed = [(rec["workers"], rec["prefetch"])]
        if (best["workers"], best["prefetch"]) != fixed[0]:
            fixed.append((best["workers"], best["prefetch"]))
        rows = {f"fixed {w} workers, prefetch {p}": ["--workers", str(w), "--prefetch", str(p)]
                for w, p in fixed}
        rows["auto"] = ["--workers", "auto", "--prefetch", "auto"]
        results = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name, flags in rows.items():
                results[name].append(bench(feedline, data, *flags))
        print("\n## loader-bound (no step), one epoch")
        print(f"({load()} at the end of the case)")
        print("| setting | images/s | after first fifth | peak RSS MiB | tuner ended at |")
        print("|---|---:|---:|---:|---|")
        for name, rs in results.items():
            print(f"| {name} | {median(r['images_per_s'] for r in rs):.0f} "
                  f"| {median(r.get('images_per_s_after_first_fifth') for r in rs):.0f} "
                  f"| {median(r['peak_rss_mib'] for r in rs):.0f} | {tuner_summary(rs[-1])} |")
        best_fixed = max(median(r["images_per_s_after_first_fifth"] for r in rs)
                         for name, rs in results.items() if name != "auto")
        auto = median(r["images_per_s_after_first_fifth"] for r in results["auto"])
        print(f"auto / best fixed after the first fifth: {auto / best_fixed:.3f}")
        print(f"(tune recommended {rec['workers']} workers, prefetch {rec['prefetch']}; "
              f"best measured {best['workers']}, {best['prefetch']})")

    if "step" in cases:
        rows = {
            f"fixed {cores} workers (one per core), prefetch 2":
                ["--workers", str(cores), "--prefetch", "2"],
            "auto": ["--workers", "auto", "--prefetch", "auto"],
        }
        results = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name, flags in rows.items():
                results[name].append(bench(feedline, data, "--step-ms", str(args.step_ms), *flags))
        print(f"\n## step-bound ({args.step_ms:g} ms step), one epoch")
        print(f"({load()} at the end of the case)")
        print("| setting | wait | images/s | peak RSS MiB | busy workers (mean) | tuner ended at |")
        print("|---|---:|---:|---:|---:|---|")
        rss, rate = {}, {}
        for name, rs in results.items():
            rss[name] = median(r["peak_rss_mib"] for r in rs)
            rate[name] = median(r["images_per_s"] for r in rs)
            busy = median(r["worker_s"] / r["elapsed_s"] for r in rs)
            print(f"| {name} | {100 * median(r['wait_fraction'] for r in rs):.2f}% "
                  f"| {rate[name]:.0f} | {rss[name]:.0f} | {busy:.2f} | {tuner_summary(rs[-1])} |")
        fixed_name = next(n for n in rss if n != "auto")
        print(f"peak RSS auto / one worker per core: {rss['auto'] / rss[fixed_name]:.2f}; "
              f"images/s auto / fixed: {rate['auto'] / rate[fixed_name]:.3f}")

    if "change" in cases:
        rows = {
            f"fixed {cores} workers, prefetch 2": ["--workers", str(cores), "--prefetch", "2"],
            "auto": ["--workers", "auto", "--prefetch", "auto"],
        }
        results = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name, flags in rows.items():
                results[name].append(bench(feedline, data, "--step-ms", str(args.step_ms),
                                           "--step-change-ms", str(args.change_to_ms),
                                           "--epochs", "8", *flags))
        print(f"\n## step change: {args.step_ms:g} ms, then {args.change_to_ms:g} ms after half "
              "of 8 epochs")
        print(f"({load()} at the end of the case)")
        print("| setting | wait before | wait after | after its first 3 s | images/s | tuner |")
        print("|---|---:|---:|---:|---:|---|")
        for name, rs in results.items():
            sc = [r["step_change"] for r in rs]
            print(f"| {name} | {100 * median(c['wait_fraction_before'] for c in sc):.2f}% "
                  f"| {100 * median(c['wait_fraction_after'] for c in sc):.2f}% "
                  f"| {100 * median(c['wait_fraction_after_3s'] for c in sc):.2f}% "
                  f"| {median(r['images_per_s'] for r in rs):.0f} | {tuner_summary(rs[-1])} |")
        last = results["auto"][-1]
        at = last["step_change"]["at_s"]
        moves = [d for d in last.get("tuner", {}).get("log", []) if d["at_s"] >= at - 1]
        for d in moves[:6]:
            print(f"  auto, last round: {d['at_s']:.2f} s (change at {at:.2f} s): {d['reason']}")

    if "overhead" in cases:
        rows = {
            "fixed 2 workers, prefetch 2": ["--workers", "2", "--prefetch", "2"],
            "2 workers, prefetch auto": ["--workers", "2", "--prefetch", "auto"],
            "workers auto, prefetch auto": ["--workers", "auto", "--prefetch", "auto"],
        }
        rounds = max(args.rounds, 7)
        for step_ms, title in [(0, "the engine alone"), (0.1, "a 0.1 ms step: the loop the bottleneck")]:
            results = {name: [] for name in rows}
            for _ in range(rounds):
                for name, flags in rows.items():
                    step = ["--step-ms", str(step_ms)] if step_ms else []
                    results[name].append(bench(
                        feedline, "--synthetic=2000000", "--batch", "256", "--epochs",
                        "2" if step_ms else "4", *step, *flags))
            print(f"\n## trivial samples (--synthetic 2000000, batch 256), {title}; {load()}")
            print(f"| setting | samples/s (median of {rounds}) | runs (M/s) | wait | tuner |")
            print("|---|---:|---|---:|---|")
            names = list(results)
            for name, rs in results.items():
                rates = [r["images_per_s"] for r in rs]
                print(f"| {name} | {median(rates) / 1e6:.2f} M | "
                      f"{', '.join(f'{x / 1e6:.1f}' for x in rates)} "
                      f"| {100 * median(r['wait_fraction'] for r in rs):.1f}% "
                      f"| {tuner_summary(rs[-1])} |")
            base = median(r["images_per_s"] for r in results[names[0]])
            print(", ".join(f"{name} / fixed: {median(r['images_per_s'] for r in results[name]) / base:.3f}"
                            for name in names[1:]))
        tick = os.path.join(args.build, "bench", "tuner_tick_benchmark")
        if os.path.exists(tick):
            out = subprocess.run([tick, "--benchmark_repetitions=5",
                                  "--benchmark_report_aggregates_only=true",
                                  "--benchmark_format=json"],
                                 check=True, capture_output=True, text=True).stdout
            print(f"\n## the tuner's own cost (bench/tuner_tick_benchmark, median of 5); {load()}")
            for b in json.loads(out)["benchmarks"]:
                if b.get("aggregate_name") == "median":
                    print(f"{b['run_name']}: {b['cpu_time']:.1f} ns CPU, {b['real_time']:.1f} ns wall")
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(RAW, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
