// libFuzzer target for the shard index parser (feedline/storage/shard_index.h).
//
// Every input is parsed as an index file. An Error is the expected answer to
// bad bytes; anything else (a crash, a sanitizer report, another exception)
// is a bug. An input that parses (version 1, version 2 with JPEG restart
// offsets, versions 3 and 4 with annotations, 4 with image sizes) must
// serialize back to the same bytes in its own version and describe records
// that lie inside the tar, with restart offsets only for JPEGs, increasing
// and inside the record's bytes, and image sizes only in version 4, so a
// reader can trust it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/shard_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedline::storage;
  ShardIndex index;
  try {
    index = ParseShardIndex(std::span<const uint8_t>(data, size), "fuzz.idx");
  } catch (const feedline::Error&) {
    return 0;
  }
  for (const ShardRecord& r : index.records) {
    if (r.offset + r.size > index.tar_size || r.offset < kTarBlock) std::abort();
    if (!r.jpeg_restarts.empty() &&
        (index.version < 2 || r.format != feedline::vision::ImageFormat::kJpeg ||
         r.jpeg_restarts.size() > kMaxJpegRestarts)) {
      std::abort();
    }
    if ((r.image_height != 0 || r.image_width != 0) && index.version < 4) std::abort();
    for (size_t k = 0; k < r.jpeg_restarts.size(); ++k) {
      if (r.jpeg_restarts[k] >= r.size) std::abort();
      if (k > 0 && r.jpeg_restarts[k] <= r.jpeg_restarts[k - 1]) std::abort();
    }
  }
  const std::vector<uint8_t> again = SerializeShardIndex(index);
  if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  return 0;
}
