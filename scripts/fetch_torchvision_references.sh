#!/usr/bin/env bash
# Fetches torchvision's reference training scripts for image classification
# (references/classification: train.py, presets.py, transforms.py, utils.py,
# sampler.py) from Debian's source package of torchvision 0.14.1 (bookworm,
# the installed python3-torchvision), at test time: torchvision's code is
# never committed here. Usage: fetch_torchvision_references.sh DEST
# (writes DEST/classification/*.py; idempotent).
set -euo pipefail
dest=${1:?usage: fetch_torchvision_references.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
[ -s "$dest/classification/train.py" ] && exit 0

. "$(dirname "$0")/deb_source.sh"
orig=$(fetch_orig pytorch-vision 0.14.1-2 "$dest/.download")
rm -rf "$dest/classification.part"
mkdir -p "$dest/classification.part"
tar -xzf "$orig" -C "$dest/classification.part" --strip-components=3 --wildcards \
  '*/references/classification/*.py'
mv "$dest/classification.part" "$dest/classification"
echo "fetch_torchvision_references: references/classification from torchvision 0.14.1"
