#!/usr/bin/env bash
# Fetches torch's own DataLoader test suite (test/test_dataloader.py) from
# Debian's source packages of pytorch, at test time: torch's code is never
# committed here. Usage: fetch_torch_tests.sh DEST
#   DEST/torch-1.13/test_dataloader.py   from pytorch 1.13.1+dfsg (bookworm,
#                                        the installed python3-torch)
#   DEST/torch-2.6/test_dataloader.py    from pytorch 2.6.0+dfsg (trixie), run
#                                        against the venv's torch 2.x
# Only the .orig tarball is needed; apt-get source verifies its checksum
# against the signed Sources index. Idempotent: present files are kept.
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

sources=/etc/apt/sources.list.d/feedline-src.sources
if [ ! -f "$sources" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "fetch_torch_tests: $sources is missing and writing it needs root" >&2
    exit 1
  fi
  cat > "$sources" <<'SRC'
# Written by feedline's scripts/fetch_torch_tests.sh: source packages only,
# to read torch's DataLoader tests at test time.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -qq
fi

cache="$dest/.download"
mkdir -p "$cache"
for name in "${!versions[@]}"; do
  version=${versions[$name]}
  [ -s "$dest/$name/test_dataloader.py" ] && continue
  upstream=${version%-*}
  orig="pytorch_${upstream}.orig.tar.xz"
  if [ ! -s "$cache/$orig" ]; then
    # The Debian tarball of an old revision may be gone from the mirror
    # (apt-get then fails); the orig tarball, which it verified, is enough.
    (cd "$cache" && apt-get source --download-only -qq "pytorch=$version" >/dev/null 2>&1) || true
    if [ ! -s "$cache/$orig" ]; then
      echo "fetch_torch_tests: could not download $orig (apt-get source pytorch=$version)" >&2
      exit 1
    fi
  fi
  mkdir -p "$dest/$name"
  listing=$(tar -tJf "$cache/$orig")
  member=$(grep '/test/test_dataloader\.py$' <<< "$listing" | head -n 1)
  tar -xJOf "$cache/$orig" "$member" > "$dest/$name/test_dataloader.py.part"
  mv "$dest/$name/test_dataloader.py.part" "$dest/$name/test_dataloader.py"
  echo "fetch_torch_tests: $name/test_dataloader.py from pytorch $upstream"
done
