#!/usr/bin/env bash
# pyproject.toml's build requirements (scikit-build-core, pybind11), installed
# once into a folder outside every build tree, and that folder printed:
#
#   scripts/build_requirements.sh          -> /root/.cache/feedline/build-requirements
#
# Both `make build` (the pybind11 it builds the module with) and make
# test-wheel (the requirements of its pip builds without isolation) take
# them from here, so that the module's objects compile from the same headers
# at the same absolute path in both builds, and the wheel's build reuses
# `make build`'s objects through ccache instead of compiling the binding
# again (ccache keys a header by its path: pip's isolation, or a folder
# inside one of the trees, gives every build other paths).
# FEEDLINE_BUILD_REQUIREMENTS overrides the folder. Installed again only
# when pyproject.toml changes the requirements. The packages are pure
# Python, so any interpreter's pip installs the same files: PATH's python3
# (3.11 or later, for tomllib), which has pip where Debian's python3 may not
# (python3-pip is no package make test installs).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${BUILD_REQUIREMENTS_PYTHON:-python3}
folder=${FEEDLINE_BUILD_REQUIREMENTS:-${XDG_CACHE_HOME:-$HOME/.cache}/feedline/build-requirements}
requirements=$("$python" -c '
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))' pyproject.toml)
if [ "$(cat "$folder/.requirements" 2>/dev/null)" != "$requirements" ]; then
  rm -rf "$folder"
  mkdir -p "$(dirname "$folder")"
  mapfile -t specs <<<"$requirements"
  # Into a new folder renamed into place: a run killed midway leaves none
  # that a later run would take as complete.
  staging=$(mktemp -d "$folder.XXXXXX")
  # stderr without pip's warnings about the machine's package index listing
  # names it holds no files for, or about running as root.
  "$python" -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --target "$staging" "${specs[@]}" \
    2> >(grep -v "^WARNING: Location .* is ignored" >&2 || true) >&2
  printf '%s\n' "$requirements" >"$staging/.requirements"
  mv "$staging" "$folder"
fi
echo "$folder"
