#!/usr/bin/env bash
# Creates (once) the virtual environment of the peers that need torchvision's
# transforms.v2: .venv/peer-torchvision, torch 2.14.1 + torchvision 0.29.1
# (on this machine's disk for Python 3.11; a CUDA build, run on the CPU),
# numpy 1.x (the feedline module in build/python reads numpy 1.x arrays
# only), Pillow and pycocotools (torchvision's CocoDetection and its
# transforms.v2 wrapper import it). Used by make test-peers
# (tests/peers/check_detection_v2_swap.py), bench-peers and
# bench-detection-peers. Reused: pip runs again only when the pins change.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv/peer-torchvision
pins="torch==2.14.1 torchvision==0.29.1 numpy==1.26.4 pillow==13.0.0 pycocotools==2.0.11"
stamp="$venv/.pins"
if [ ! -x "$venv/bin/python" ]; then
  echo "feedline: creating $venv ($(python3 --version))"
  python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$pins" ]; then
  echo "feedline: installing $pins into $venv"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $pins \
    2>&1 | grep -v "^WARNING: Location" || true
  "$venv/bin/python" -c "import torchvision, pycocotools.coco" \
    || { echo "feedline: torchvision did not install into $venv" >&2; exit 1; }
  echo "$pins" > "$stamp"
fi
