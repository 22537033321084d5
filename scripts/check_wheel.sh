#!/usr/bin/env bash
# make test-wheel: the Python package as its users install it.
#
#   scripts/check_wheel.sh [WORK_DIR]     (default build/wheel-check)
#
# From a clean copy of the tree (the files git tracks or would track, so no
# build directory or virtual environment leaks in):
#  1. `pip install COPY` into a fresh venv, as `pip install .` in a clean
#     clone: `import feedline`, `feedline --help` and `python -m feedline
#     --help`; mypy on examples/ and stubtest of the native module's stubs
#     against the installed module;
#  2. `pip wheel COPY`: the package, its compiled module and the
#     libfeedline.so beside it, no executable and no other shared object; then, with the copy and the CMake build
#     directory moved out of reach, the wheel installed into another fresh
#     venv with numpy 2 and an example run end to end: the `feedline` entry
#     point (the C++ command inside the module) says what it does with
#     --help, refuses a bad SOURCE with exit code 2, `feedline synth` writes
#     an image folder and `feedline bench` loads it, feedline.DataLoader loads
#     it and a Python dataset, and the batches' shapes and values are
#     checked; every RPATH is relative;
#  3. scripts/check_repaired_wheel.sh: `auditwheel repair` makes the wheel a
#     manylinux one that carries its libraries, installed and run in a
#     minimal Debian 12 root (debootstrap, started here beside the builds).
#
# The CMake build directory is the copy's build/, laid out as `make build`'s
# is in the tree, and the compiles go through ccache with its keys relative
# to the tree (CCACHE_BASEDIR), with the compiler `make build` uses (c++):
# every object, the binding's included, comes from `make build`'s, and a
# rerun compiles only what changed. That needs the same headers at the same
# paths as `make build` (pip's build isolation installs scikit-build-core and
# pybind11 into a new temporary folder for each build, whose headers would
# make every binding file compile again, and Python's own headers differ
# between interpreters). So the builds run without isolation, with
# pyproject.toml's build requirements (what isolation would install) from
# the folder `make build` takes pybind11 from (scripts/build_requirements.sh)
# on PYTHONPATH, for Debian's python3, which `make build` builds the module
# for, and with make build's generator (Unix Makefiles; scikit-build-core
# would take Ninja, which compiles from another directory, and ccache keys
# the paths relative to it).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-build/wheel-check}
mkdir -p "$work"
work=$(cd "$work" && pwd)
# Debian's python3, for which `make build` builds the module: the same
# Python headers, so that the binding's objects come from its build.
python=${WHEEL_PYTHON:-/usr/bin/python3}
# Pinned, so that the check does not change under the project's feet.
mypy_version=2.4.0
start=$SECONDS
passed=0
pass() {
  passed=$((passed + 1))
  echo "wheel check: ok: $*"
}
fail() {
  echo "wheel check: FAILED: $*" >&2
  exit 1
}
pip_quiet=(-q --disable-pip-version-check)
# pip install as root outside a venv (the build requirements' folder) warns.
pip_install=(install "${pip_quiet[@]}" --root-user-action=ignore)
# stderr without pip's warnings about the machine's package index listing
# names it holds no files for.
unlisted_index() { grep -v "^WARNING: Location .* is ignored" || true; }

# The Debian root of step 3, made beside the builds (once: it is kept in
# WORK_DIR/debian-root).
bash scripts/check_repaired_wheel.sh --root-only "$work" &
root_pid=$!

# The clean copy (a tracked file deleted from the working tree stays out), at
# a fixed path (the build directory remembers its source) and with the files'
# times kept (the build recompiles what changed only).
src=$work/src
rm -rf "$src"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' file; do if [ -e "$file" ]; then printf '%s\0' "$file"; fi; done |
  tar --null -T - -cf - | tar -xf - -C "$src"
[ -f "$src/pyproject.toml" ] || fail "the copy of the tree has no pyproject.toml"

# The build requirements, where `make build` takes its pybind11 from
# (scripts/build_requirements.sh).
build_requirements=$(bash scripts/build_requirements.sh)
# pip install or pip wheel of the copy as users run them, but with those
# build requirements instead of a new isolated environment.
launcher=$(command -v ccache || true)
# CI set (unless already): scikit-build-core gives `cmake -E capabilities`
# 5 s to answer, 20 s where CI is set, and at nice 19 beside the peers'
# suites (make test) the query has taken longer than 5 s (a CI run of
# 2026-12-03: "Could not find CMake with version >=3.25"), and longer than
# 20 s beside them and the Debian root's debootstrap (2026-12-07). So the
# pip builds run at the default priority (root may lower its niceness; the
# compiles themselves are mostly ccache's hits), and the rest of the check
# stays at make test's nice 19.
default_priority=()
if [ "$(id -u)" = 0 ] && [ "$(nice)" -gt 0 ]; then
  default_priority=(nice -n "-$(nice)")
fi
pip_build() {
  CI=${CI:-1} CXX=c++ CMAKE_GENERATOR="Unix Makefiles" CCACHE_BASEDIR=$src CCACHE_NOHASHDIR=true \
    PYTHONPATH=$build_requirements "${default_priority[@]}" \
    "$venv/bin/python" -m pip "$@" --no-build-isolation --config-settings=build-dir="$src/build" \
    ${launcher:+--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER="$launcher"} "$src" \
    2> >(unlisted_index >&2)
}

# 1. pip install into a fresh venv.
venv=$work/venv-install
rm -rf "$venv"
"$python" -m venv "$venv"
build_start=$SECONDS
pip_build "${pip_install[@]}"
echo "wheel check: pip install took $((SECONDS - build_start)) s"
# Outputs are captured before they are searched: under pipefail, grep -q
# ending a pipe early would fail the command that writes into it.
imported=$(cd /tmp && "$venv/bin/python" -c "import feedline; print(feedline.__version__, feedline.__file__)")
[[ $imported == *" $venv/"* ]] || fail "import feedline did not import the installed package: $imported"
pass "pip install: import feedline"
# The command: the package's entry point, and the module run as a script.
check_help() {
  local help
  help=$("$@" --help) || fail "$* --help"
  for command in bench tune verify synth pack; do
    grep -q "^  $command " <<<"$help" || fail "$* --help lists no $command: $help"
  done
}
check_help "$venv/bin/feedline"
pass "pip install: feedline --help"
check_help "$venv/bin/python" -m feedline
pass "pip install: python -m feedline --help"

# The type information: mypy on the examples (pyproject.toml's [tool.mypy])
# against the installed package, and the stubs of feedline._feedline
# against the module itself.
"$venv/bin/python" -m pip "${pip_install[@]}" "mypy==$mypy_version" 2> >(unlisted_index >&2)
(cd "$src" && "$venv/bin/python" -m mypy --no-incremental --config-file pyproject.toml) ||
  fail "mypy on examples/"
pass "mypy examples/"
# stubtest compares the stub's names with the module's (pybind11 functions
# show no signature to compare). pybind11's classes have its metaclass, and
# its base classes without a constructor take (*args, **kwargs) to refuse
# one: neither is API, so both are allowed (SchemaNode and SampleSchema are
# public but made by the loader only, so they have no constructor either).
cat >"$work/stubtest-allowlist.txt" <<'ALLOW'
feedline\._feedline\._[A-Za-z]+
feedline\._feedline\._(Dataset|Sampler|BatchSampler)\.__init__
feedline\._feedline\.(SchemaNode|SampleSchema|BatchArray)
feedline\._feedline\.(SchemaNode|SampleSchema|BatchArray)\.__init__
ALLOW
(cd /tmp && "$venv/bin/python" -m mypy.stubtest --allowlist "$work/stubtest-allowlist.txt" \
  feedline._feedline) || fail "stubtest feedline._feedline"
# stubtest skips the submodules, which the stub types as check-only classes:
# their names, and their classes' names, are compared here.
(cd /tmp && "$venv/bin/python" - "$src/python/feedline/_feedline.pyi") <<'PY' || fail "the stubs of vision, storage and text"
import ast
import inspect
import sys

import feedline._feedline as native

with open(sys.argv[1]) as f:
    stub = ast.parse(f.read())
classes = {node.name: node for node in stub.body if isinstance(node, ast.ClassDef)}


def stub_names(body):
    names = {node.name for node in body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    names |= {node.target.id for node in body
              if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    return {name for name in names if not name.startswith("_")}


def runtime_names(obj):
    own = vars(obj) if inspect.isclass(obj) else dict(inspect.getmembers(obj))
    return {name for name in own if not name.startswith("_")}


problems = []


def compare(path, body, runtime):
    declared, present = stub_names(body), runtime_names(runtime)
    problems.extend(f"{path}.{n}: in the module, not in the stub" for n in sorted(present - declared))
    problems.extend(f"{path}.{n}: in the stub, not in the module" for n in sorted(declared - present))
    for node in body:
        if isinstance(node, ast.ClassDef) and node.name in present:
            compare(f"{path}.{node.name}", node.body, getattr(runtime, node.name))


for module, stub_class in (("vision", "_VisionModule"), ("storage", "_StorageModule"),
                           ("text", "_TextModule")):
    compare(f"feedline._feedline.{module}", classes[stub_class].body, getattr(native, module))
if problems:
    sys.exit("\n".join(problems))
PY
pass "the stubs of feedline._feedline name what the module has"

# 2. The wheel, installed where neither the tree nor the build is.
rm -rf "$work/dist"
build_start=$SECONDS
pip_build wheel "${pip_quiet[@]}" --no-deps -w "$work/dist"
echo "wheel check: pip wheel took $((SECONDS - build_start)) s"
wheel=$(ls "$work/dist"/feedline-*.whl)
echo "wheel check: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"
contents=$("$python" -m zipfile -l "$wheel")
for member in feedline/__init__.py feedline/__main__.py feedline/py.typed feedline/_feedline.pyi \
  "feedline/_feedline.cpython-" "feedline-[0-9.]*.dist-info/entry_points.txt"; do
  grep -q "^$member" <<<"$contents" || fail "the wheel lacks $member"
done
# Nothing but the package and its metadata (no scripts, headers, CMake
# files), and of the package's files only Python, the type information, the
# one compiled module and the library it links (one file: a wheel holds no
# symbolic links).
members=$(tail -n +2 <<<"$contents" | sed -n 's/^\([^ ]*\) .*/\1/p' | grep -v '/$' || true)
grep -q -x 'feedline/libfeedline\.so' <<<"$members" || fail "the wheel lacks feedline/libfeedline.so"
others=$(grep -v -E '^feedline/.*\.(py|pyi)$|^feedline/py\.typed$|^feedline/_feedline\.cpython-[^/]*\.so$|^feedline/libfeedline\.so$|^feedline-[0-9.]*\.dist-info/' <<<"$members" || true)
[ -z "$others" ] || fail "the wheel holds more than the package: $(head -5 <<<"$others")"
entry_points=$("$python" -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    print(wheel.read(name).decode())' "$wheel")
grep -q -x "feedline = feedline.__main__:main" <<<"$entry_points" ||
  fail "the wheel declares no feedline entry point: $entry_points"
pass "wheel contents: the package, one compiled module and its libfeedline, the feedline entry point"

# README's first example, run below as a newcomer would run it.
cp "$src/README.md" "$work/README.md"

aside=$work/out-of-reach
rm -rf "$aside"
mkdir -p "$aside"
mv "$src" "$aside/src"  # and the build directory in it
trap 'rm -rf "$aside"' EXIT

venv=$work/venv-wheel
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip "${pip_install[@]}" "$wheel" "numpy>=2" 2> >(unlisted_index >&2)
site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_path('platlib'))")
for elf in "$site"/feedline/_feedline.*.so "$site"/feedline/libfeedline.so; do
  [ -f "$elf" ] || fail "not installed: $elf"
  runpath=$(readelf -d "$elf" | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]/\2/p')
  absolute=$(tr ':' '\n' <<<"$runpath" | grep -v -e '^$' -e '^\$ORIGIN' || true)
  [ -z "$absolute" ] || fail "$elf has an RPATH outside the installation: $runpath"
  missing=$(ldd "$elf" | grep "not found" || true)
  [ -z "$missing" ] || fail "$elf needs libraries that are not installed: $missing"
done
head -1 "$venv/bin/feedline" | grep -q "^#!$venv/bin/python" ||
  fail "$venv/bin/feedline is not the package's entry point: $(head -c 200 "$venv/bin/feedline")"
pass "no RPATH outside the installation; the module finds every library; feedline is a script"

check_help "$venv/bin/feedline"
check_help "$venv/bin/python" -m feedline
version=$("$venv/bin/feedline" --version) || fail "feedline --version"
[ "$version" = "feedline $("$venv/bin/python" -c 'import feedline; print(feedline.__version__)')" ] ||
  fail "feedline --version says $version"
set +e
refused=$("$venv/bin/feedline" bench "$work/no-such-folder" 2>&1)
code=$?
set -e
[ "$code" = 2 ] && grep -q "no-such-folder' does not exist" <<<"$refused" ||
  fail "feedline bench of a missing folder: exit $code, $refused"
pass "wheel: feedline --help, python -m feedline --help, --version, a bad SOURCE (exit 2)"

data=$work/example-data
rm -rf "$data"
"$venv/bin/feedline" synth "$data" --images 24 --classes 3 --seed 1 >/dev/null || fail "feedline synth"
report=$("$venv/bin/feedline" bench "$data" --batch 8 --workers 2 --size 32 --quiet) || fail "feedline bench"
grep -q "^  throughput .* images/s" <<<"$report" || fail "feedline bench reports no images/s: $report"
pass "wheel: feedline synth and bench"

(cd /tmp && "$venv/bin/python" - "$data") <<'EOF' || fail "the example on the wheel"
"""Loads an image folder and a Python dataset through the installed wheel."""
import sys

import numpy as np

import feedline
from feedline import io
from feedline.vision import datasets, decode_image
from feedline.vision import transforms as T

assert int(np.__version__.split(".")[0]) >= 2, np.__version__
data = sys.argv[1]

# Native: 24 JPEGs in 3 classes, center crops of 32 pixels as uint8 CHW,
# the same pixels as the crop of the image decoded whole.
folder = datasets.ImageFolder(data, transform=T.Compose([T.CenterCrop(32), T.PILToTensor()]))
samples = folder.samples  # (path, label) of every image, in order
assert len(samples) == 24, len(samples)
rows = 0
for images, labels in feedline.DataLoader(folder, batch_size=8, num_workers=2):
    assert images.shape == (8, 3, 32, 32) and images.dtype == np.uint8, (images.shape, images.dtype)
    assert labels.dtype == np.int64 and set(labels.tolist()) <= {0, 1, 2}, labels
    for image, label in zip(images, labels):
        path, expected_label = samples[rows]
        assert label == expected_label, (path, label, expected_label)
        with open(path, "rb") as f:
            whole = decode_image(f.read())
        # torchvision's center: round() of the margin's half.
        top, left = round((whole.shape[0] - 32) / 2), round((whole.shape[1] - 32) / 2)
        crop = whole[top:top + 32, left:left + 32].transpose(2, 0, 1)
        assert np.array_equal(image, crop), (path, np.abs(image.astype(int) - crop).max())
        rows += 1
assert rows == 24, rows


# Python: arrays made in worker processes and read back exactly.
class Rows(io.Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        return np.arange(6, dtype=np.float32).reshape(2, 3) + i, np.int64(i)


for workers in (0, 2):
    seen = []
    for x, y in feedline.DataLoader(Rows(), batch_size=8, num_workers=workers):
        assert x.shape == (8, 2, 3) and x.dtype == np.float32, (x.shape, x.dtype)
        assert np.array_equal(x, np.arange(6, dtype=np.float32).reshape(1, 2, 3) + y.reshape(-1, 1, 1))
        seen += y.tolist()
    assert sorted(seen) == list(range(40)), seen
print("example: 24 images and 40 rows loaded with the expected values")
EOF
pass "wheel: example with numpy $("$venv/bin/python" -c 'import numpy; print(numpy.__version__)')"

# README's `feedline synth` line and its first Python example (native), whose
# output must be what README says it prints.
readme_dir=$work/readme-example
rm -rf "$readme_dir"
mkdir -p "$readme_dir"
(cd "$readme_dir" && "$venv/bin/python" - "$work/README.md" "$venv/bin/feedline") <<'EOF' || fail "README's example on the wheel"
import re
import shlex
import subprocess
import sys

readme = open(sys.argv[1]).read()
synth = re.search(r"^feedline synth [^#\n]*", readme, re.M).group(0).strip()
subprocess.run([sys.argv[2], *shlex.split(synth)[1:]], check=True, stdout=subprocess.DEVNULL)
code, expected = re.search(r"^```python\n(.*?)^```\n+It prints `([^`]*)`", readme, re.M | re.S).groups()
printed = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.strip()
assert printed == expected, f"README says it prints `{expected}`; it printed `{printed}`"
print(f"README's example printed {printed}")
EOF
pass "wheel: README's first example"

# 3. The wheel repaired, in a Debian root without the build's libraries.
wait "$root_pid" || fail "the Debian root for the repaired wheel (see $work/debootstrap.log)"
bash scripts/check_repaired_wheel.sh "$wheel" "$work" || fail "the repaired wheel"
pass "the repaired wheel in a minimal Debian 12"

echo "wheel check: $passed passed, 0 failed, in $((SECONDS - start)) s"
