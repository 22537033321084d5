#!/usr/bin/env bash
# Builds the image decoder fuzzer with clang (libFuzzer, ASan, UBSan) and runs
# it on a copy of fuzz/corpus for FUZZ_SECONDS seconds (default 60); then the
# shard index parser's fuzzer on a copy of fuzz/corpus_shard_index, and the
# worker-process protocol's decoders on a copy of fuzz/corpus_worker_protocol,
# and the COCO and VOC annotation parsers on copies of fuzz/corpus_coco and
# fuzz/corpus_voc, and the detection record decoder on a copy of
# fuzz/corpus_detection_record,
# for FUZZ_INDEX_SECONDS seconds each (default 10: the parsers are small).
# Exits non-zero if the fuzzer finds a crash; the crashing input is left in
# the build directory as fuzz-<fuzzer>-crash-*.
#
# Usage: scripts/run_fuzz.sh [build_dir]     (default: build-fuzz)
#        FUZZ_BUILD_ONLY=1 scripts/run_fuzz.sh [build_dir]
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
cmake --build "$build" -j"$jobs" --target decode_fuzzer shard_index_fuzzer worker_protocol_fuzzer \
  coco_annotations_fuzzer voc_annotations_fuzzer detection_record_fuzzer
# FUZZ_BUILD_ONLY=1: the fuzzers built, none run (make test builds them
# beside other suites).
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

# fuzz NAME CORPUS SECONDS [libFuzzer flags...]: runs fuzz/NAME on a copy of
# fuzz/CORPUS (the fuzzer adds what it finds to its corpus directory); a
# crashing input is left as $build/fuzz-NAME-crash-*. Under UBSan a report
# is fatal (-fno-sanitize-recover), so libFuzzer sees it as a crash.
fuzz() {
  local name="$1" seeds="$root/fuzz/$2" corpus="$build/fuzz-corpus-$2" seconds_for="$3"
  shift 3
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp "$seeds"/* "$corpus"/
  "$build/fuzz/$name" -max_total_time="$seconds_for" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-$name-" "$@" "$corpus"
}

# Each fuzzer runs on one core: the image decoders' on one, the two small
# parsers' one after the other on the other, each into its own log, printed
# when both are done.
fuzz decode_fuzzer corpus "$seconds" >"$build/fuzz-decode.log" 2>&1 &
decode=$!
{
  fuzz shard_index_fuzzer corpus_shard_index "$index_seconds"
  # Its decoders size vectors from counts in the bytes: a count that the
  # bytes cannot hold must be refused before anything is allocated for it.
  fuzz worker_protocol_fuzzer corpus_worker_protocol "$index_seconds" -malloc_limit_mb=256
  fuzz coco_annotations_fuzzer corpus_coco "$index_seconds"
  fuzz voc_annotations_fuzzer corpus_voc "$index_seconds"
  # Its counts size vectors too (after the record's size is checked).
  fuzz detection_record_fuzzer corpus_detection_record "$index_seconds" -malloc_limit_mb=256
} >"$build/fuzz-parsers.log" 2>&1 &
parsers=$!
status=0
wait "$decode" || status=1
wait "$parsers" || status=1
cat "$build/fuzz-decode.log" "$build/fuzz-parsers.log"
if [ "$status" != 0 ]; then
  echo "run_fuzz: a fuzzer failed (its crashing input: $build/fuzz-*-crash-*)" >&2
  exit 1
fi
