#!/usr/bin/env bash
# Fetches torch's own DataLoader test suite (test/test_dataloader.py) from
# Debian's source packages of pytorch, at test time: torch's code is never
# committed here. Usage: fetch_torch_tests.sh DEST
#   DEST/torch-1.13/test_dataloader.py   from pytorch 1.13.1+dfsg (bookworm,
#                                        the installed python3-torch)
#   DEST/torch-2.6/test_dataloader.py    from pytorch 2.6.0+dfsg (trixie), run
#                                        against the venv's torch 2.x
# Only the .orig tarball is needed (scripts/deb_source.sh). Idempotent:
# present files are kept.
set -euo pipefail
dest=${1:?usage: fetch_torch_tests.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

declare -A versions=([torch-1.13]="1.13.1+dfsg-4" [torch-2.6]="2.6.0+dfsg-7")

missing=0
for name in "${!versions[@]}"; do
  [ -s "$dest/$name/test_dataloader.py" ] || missing=1
done
[ $missing -eq 0 ] && exit 0

. "$(dirname "$0")/deb_source.sh"
cache="$dest/.download"
for name in "${!versions[@]}"; do
  version=${versions[$name]}
  [ -s "$dest/$name/test_dataloader.py" ] && continue
  orig=$(fetch_orig pytorch "$version" "$cache")
  mkdir -p "$dest/$name"
  listing=$(tar -tf "$orig")
  member=$(grep '/test/test_dataloader\.py$' <<< "$listing" | head -n 1)
  tar -xOf "$orig" "$member" > "$dest/$name/test_dataloader.py.part"
  mv "$dest/$name/test_dataloader.py.part" "$dest/$name/test_dataloader.py"
  echo "fetch_torch_tests: $name/test_dataloader.py from pytorch ${version%-*}"
done
