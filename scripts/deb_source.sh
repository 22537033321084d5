# Sourced by the scripts that read a peer's files from Debian's source
# packages at test time (a peer's code is never committed here).
#
#   fetch_orig PACKAGE VERSION CACHE   downloads PACKAGE's .orig tarball of
#                                      Debian VERSION into CACHE (once) and
#                                      prints its path
#
# Only the .orig tarball is needed; apt-get source verifies its checksum
# against the signed Sources index. The source index (deb-src of bookworm
# and trixie) is added once, which needs root.

deb_source_list=/etc/apt/sources.list.d/feedline-src.sources

ensure_deb_src() {
  [ -f "$deb_source_list" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "feedline: $deb_source_list is missing and writing it needs root" >&2
    return 1
  fi
  cat > "$deb_source_list" <<'SRC'
# Written by feedline's scripts/deb_source.sh: source packages only, to read
# peers' tests and scripts at test time.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -qq
}

fetch_orig() {
  local package=$1 version=$2 cache=$3
  local upstream=${version%-*}
  mkdir -p "$cache"
  local orig
  orig=$(ls "$cache/${package}_${upstream}.orig.tar."* 2>/dev/null | head -n 1 || true)
  if [ -z "$orig" ]; then
    ensure_deb_src || return 1
    # The Debian tarball of an old revision may be gone from the mirror
    # (apt-get then fails); the orig tarball, which it verified, is enough.
    (cd "$cache" && apt-get source --download-only -qq "$package=$version" >/dev/null 2>&1) || true
    orig=$(ls "$cache/${package}_${upstream}.orig.tar."* 2>/dev/null | head -n 1 || true)
    if [ -z "$orig" ]; then
      echo "feedline: could not download the orig tarball of $package $version" >&2
      return 1
    fi
  fi
  printf '%s\n' "$orig"
}
