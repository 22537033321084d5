#!/usr/bin/env bash
# Creates (once) and updates the virtual environment .venv of the peer tests
# from scripts/venv-requirements.txt, with the first python3 on PATH (3.11).
# Reused: pip runs again only when the requirements file changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
python=${VENV_PYTHON:-python3}
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ]; then
  echo "feedline: creating the virtual environment $venv ($($python --version))"
  "$python" -m venv "$venv"
fi
if ! cmp -s scripts/venv-requirements.txt "$stamp"; then
  echo "feedline: installing the peer tests' Python packages into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    -r scripts/venv-requirements.txt 2>&1 | grep -v "^WARNING: Location" || true
  "$venv/bin/python" -c "import torch, paddle, numpy, pytest, pyarrow, psutil" \
    || { echo "feedline: the virtual environment $venv is incomplete" >&2; exit 1; }
  cp scripts/venv-requirements.txt "$stamp"
fi
# Debian's /usr/bin/python3 runs torch 1.13's suite; its test utilities import
# expecttest, which Debian 12 does not package: it goes beside the venv, for
# PYTHONPATH, at the version of torch 1.13's time.
extras="$venv/debian-python-extras"
if [ ! -d "$extras/expecttest" ]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --target "$extras" \
    "expecttest==0.1.6" 2>&1 | grep -v "^WARNING: Location" || true
  [ -d "$extras/expecttest" ] || { echo "feedline: expecttest did not install into $extras" >&2; exit 1; }
fi
