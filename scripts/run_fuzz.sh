#!/usr/bin/env bash
# Builds the image decoder fuzzer with clang (libFuzzer, ASan, UBSan) and runs
# it on a copy of fuzz/corpus for FUZZ_SECONDS seconds (default 60); then the
# shard index parser's fuzzer on a copy of fuzz/corpus_shard_index, and the
# worker-process protocol's decoders on a copy of fuzz/corpus_worker_protocol,
# for FUZZ_INDEX_SECONDS seconds each (default 10: the parsers are small).
# Exits non-zero if the fuzzer finds a crash; the crashing input is left in
# the build directory as fuzz-crash-*.
#
# Usage: scripts/run_fuzz.sh [build_dir]     (default: build-fuzz)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
index_seconds="${FUZZ_INDEX_SECONDS:-10}"
jobs="${FUZZ_BUILD_JOBS:-2}"

cmake -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFEEDLINE_BUILD_FUZZ=ON \
  -DFEEDLINE_BUILD_TESTS=OFF \
  -DFEEDLINE_BUILD_PYTHON=OFF \
  -DFEEDLINE_BUILD_TOOLS=OFF \
  -DFEEDLINE_BUILD_BENCH=OFF \
  -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++
cmake --build "$build" -j"$jobs" --target decode_fuzzer shard_index_fuzzer worker_protocol_fuzzer

# The fuzzer adds what it finds to its corpus directory: give it a copy.
corpus="$build/fuzz-corpus"
rm -rf "$corpus"
mkdir -p "$corpus"
cp "$root"/fuzz/corpus/* "$corpus"/

# Under UBSan a report is fatal (-fno-sanitize-recover), so libFuzzer sees
# it as a crash.
"$build/fuzz/decode_fuzzer" \
  -max_total_time="$seconds" \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="$build/fuzz-" \
  "$corpus"

index_corpus="$build/fuzz-corpus-shard-index"
rm -rf "$index_corpus"
mkdir -p "$index_corpus"
cp "$root"/fuzz/corpus_shard_index/* "$index_corpus"/
"$build/fuzz/shard_index_fuzzer" \
  -max_total_time="$index_seconds" \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="$build/fuzz-shard-index-" \
  "$index_corpus"

protocol_corpus="$build/fuzz-corpus-worker-protocol"
rm -rf "$protocol_corpus"
mkdir -p "$protocol_corpus"
cp "$root"/fuzz/corpus_worker_protocol/* "$protocol_corpus"/
"$build/fuzz/worker_protocol_fuzzer" \
  -max_total_time="$index_seconds" \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -malloc_limit_mb=256 \
  -print_final_stats=1 \
  -artifact_prefix="$build/fuzz-worker-protocol-" \
  "$protocol_corpus"
