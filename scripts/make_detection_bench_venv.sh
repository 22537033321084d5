#!/usr/bin/env bash
# Creates (once) the virtual environment of bench/detection_python_vs_torch.py,
# .venv/detection-bench: Debian's /usr/bin/python3 with its own packages
# (torch 1.13, torchvision 0.14.1, numpy 1.24, Pillow; the feedline module in
# build/python is built for this interpreter) and pycocotools added, which
# torchvision's detection references import and Debian does not package.
# pycocotools 2.0.11 has a cp311 wheel that runs on numpy 1.24, so pip keeps
# Debian's numpy (the one torch 1.13 was built with). Also fetches the
# references (references/detection of torchvision 0.14.1, from Debian's
# source package) into build/peer-tests/references.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv/detection-bench
if [ ! -x "$venv/bin/python" ]; then
  echo "feedline: creating $venv over /usr/bin/python3's packages"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
# A run cut short (torch not yet installed) may have left pip's numpy 2 in
# the venv: the check below covers Debian's numpy too.
if ! "$venv/bin/python" -c "import numpy, pycocotools.mask, pycocotools.coco
assert numpy.__file__.startswith('/usr/lib/python3/')" 2>/dev/null; then
  "$venv/bin/python" -m pip uninstall -q -y numpy 2>/dev/null || true
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "pycocotools==2.0.11" \
    2>&1 | grep -v "^WARNING: Location" || true
  "$venv/bin/python" -c "import numpy, torch, torchvision, pycocotools.mask, pycocotools.coco
assert numpy.__file__.startswith('/usr/lib/python3/'), numpy.__file__" \
    || { echo "feedline: pycocotools did not install into $venv over Debian's numpy" >&2; exit 1; }
fi
bash scripts/fetch_torchvision_references.sh build/peer-tests/references detection
