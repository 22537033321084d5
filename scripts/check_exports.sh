#!/usr/bin/env bash
# Checks what a built libfeedline exports: the public API (declarations
# marked FEEDLINE_EXPORT in include/feedline/) and nothing else. Fails if a
# dynamic symbol names namespace internal or a part of the source tree that is
# not installed (feedline_synth: the encoders and synthetic images), or if a piece
# of the API that programs need across the library boundary is missing.
# Usage: scripts/check_exports.sh path/to/libfeedline.so
set -euo pipefail
lib=${1:?usage: check_exports.sh LIBRARY}
if [[ ! -f $lib ]]; then
  echo "check_exports: $lib: no such file" >&2
  exit 1
fi
symbols=$(nm -D --defined-only -C "$lib")
status=0

leaked=$(grep -E 'internal|feedline::vision::(Encode(Jpeg|Png|Webp)|Synthesize|WriteSynthetic)' \
  <<<"$symbols" || true)
if [[ -n $leaked ]]; then
  echo "check_exports: $lib exports $(wc -l <<<"$leaked") internal symbols, e.g.:" >&2
  head -n 10 <<<"$leaked" >&2
  status=1
fi

# Classes users derive from or catch need their vtables and type information
# exported; the loader's entry points must be there. So must the extension
# surface (include/feedline/extension/, installed): the program a worker
# process runs is derived from WorkerProgram or NativeWorkerProgram, its
# task from WorkerTask, and a front end builds its loader with
# BuildDataLoader.
for required in 'vtable for feedline::Dataset' 'typeinfo for feedline::SampleError' \
                 'typeinfo for feedline::Error' 'feedline::DataLoader::Next()' \
                 'feedline::Sample::Allocate(' 'feedline::vision::DecodeImage(' \
                 'feedline::storage::ShardDataset::ShardDataset(' \
                 'typeinfo for feedline::extension::WorkerProgram' \
                 'vtable for feedline::extension::NativeWorkerProgram' \
                 'feedline::extension::WorkerProgram::RaiseError(' \
                 'typeinfo for feedline::extension::WorkerTask' \
                 'feedline::extension::WorkerTask::Failure(' \
                 'feedline::extension::BuildDataLoader(' \
                 'feedline::extension::ExitCodeOf('; do
  if ! grep -qF -- "$required" <<<"$symbols"; then
    echo "check_exports: $lib does not export $required" >&2
    status=1
  fi
done

exported=$(grep -c 'feedline::' <<<"$symbols" || true)
if [[ $status -eq 0 ]]; then
  echo "export check: $lib exports $exported feedline symbols, none internal"
fi
exit $status
