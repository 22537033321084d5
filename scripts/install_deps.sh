#!/usr/bin/env bash
# Installs the Debian 12 packages feedline needs, only those missing.
# Idempotent: a second run does nothing. apt-get only; run as root.
set -euo pipefail

PACKAGES=(
  build-essential cmake g++ clang libclang-rt-14-dev ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  libjpeg62-turbo-dev libturbojpeg0-dev libpng-dev libspng-dev libwebp-dev
  libopencv-imgproc-dev
  libcli11-dev nlohmann-json3-dev
  # COCO annotation files (src/vision/coco.cc): hundreds of MB of JSON.
  libsimdjson-dev
  # Pascal VOC annotation files (src/vision/voc.cc): XML.
  libpugixml-dev
  python3-dev python3-numpy python3-pytest pybind11-dev
  # The binding's DLPack export (python/dlpack_export.h): the header.
  libdlpack-dev
  # make test-wheel: its venvs are Debian python3's, as the module make build makes.
  python3-venv
  python3-torch python3-torchvision
  # torch's DataLoader suite (make test-peers) runs its DataPipe tests
  # (TestDataLoader2 and others) only where dill is importable; without it
  # they are skipped and the swap goes untested on DataPipes.
  python3-dill
  openmpi-bin libopenmpi-dev
  libhdf5-dev python3-h5py
  # make test-wheel: the minimal Debian root that the repaired wheel is
  # installed into (scripts/check_repaired_wheel.sh).
  debootstrap
  # Remote packs: libcurl for the reader, nginx for the tests' HTTP server.
  libcurl4-openssl-dev nginx-light
  # Network-fault tests: ip netns / ip link / tc / ss; HTTPS tests: openssl.
  iproute2 openssl
  # Delay and loss without tc netem: iptables (NFQUEUE, statistic) and the
  # tests' packet-delay program (tests/storage/packet_delay.h).
  iptables libnetfilter-queue-dev
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "feedline: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "feedline: these packages are missing and installing them needs root: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
