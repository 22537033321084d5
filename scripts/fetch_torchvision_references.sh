#!/usr/bin/env bash
# Fetches torchvision's reference training scripts from Debian's source
# package of torchvision 0.14.1 (bookworm, the installed python3-torchvision),
# at test time: torchvision's code is never committed here.
# Usage: fetch_torchvision_references.sh DEST [FOLDER...]
# writes DEST/FOLDER/*.py for each FOLDER of references/ (default:
# classification: train.py, presets.py, transforms.py, utils.py, sampler.py;
# bench/detection_python_vs_torch.py asks for detection). Idempotent: a
# folder already there is kept.
set -euo pipefail
dest=${1:?usage: fetch_torchvision_references.sh DEST [FOLDER...]}
shift
folders=("$@")
[ ${#folders[@]} -gt 0 ] || folders=(classification)
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

missing=()
for folder in "${folders[@]}"; do
  [ -s "$dest/$folder/train.py" ] || missing+=("$folder")
done
[ ${#missing[@]} -eq 0 ] && exit 0

. "$(dirname "$0")/deb_source.sh"
orig=$(fetch_orig pytorch-vision 0.14.1-2 "$dest/.download")
for folder in "${missing[@]}"; do
  rm -rf "$dest/$folder.part"
  mkdir -p "$dest/$folder.part"
  tar -xzf "$orig" -C "$dest/$folder.part" --strip-components=3 --wildcards \
    "*/references/$folder/*.py"
  mv "$dest/$folder.part" "$dest/$folder"
  echo "fetch_torchvision_references: references/$folder from torchvision 0.14.1"
done
