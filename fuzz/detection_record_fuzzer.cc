// libFuzzer target for the detection record decoder
// (feedline/vision/detection_record.h): the KEY.det bytes of a detection
// pack, which come from a shard on disk or over the network.
//
// An Error is the expected answer to bad bytes; anything else (a crash, a
// sanitizer report, another exception) is a bug. A record that decodes must
// be one a reader can trust: every polygon and mask an object names inside
// the record, polygons of x, y pairs, masks whose runs cover them, finite
// numbers; and it encodes back to the same bytes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "feedline/error.h"
#include "feedline/vision/detection_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedline::vision;
  DetectionRecord record;
  try {
    record = DecodeDetectionRecord(std::span<const uint8_t>(data, size), "fuzz.det");
  } catch (const feedline::Error&) {
    return 0;
  }
  for (const DetectionObject& o : record.objects) {
    for (float v : o.box) {
      if (!std::isfinite(v)) std::abort();
    }
    if (o.segmentation == CocoSegmentation::kPolygons) {
      if (o.first + uint64_t{o.count} > record.polygon_ends.size()) std::abort();
      for (uint32_t k = 0; k < o.count; ++k) {
        if (record.polygon(o.first + k).size() % 2 != 0) std::abort();
      }
    } else if (o.segmentation == CocoSegmentation::kRle) {
      if (o.first >= record.masks.size()) std::abort();
      const CocoRle& mask = record.masks[o.first];
      uint64_t total = 0;
      for (uint32_t run : mask.counts) total += run;
      if (total != uint64_t(mask.height) * uint64_t(mask.width)) std::abort();
    }
  }
  const std::string again = EncodeDetectionRecord(record);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  return 0;
}
