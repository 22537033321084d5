// libFuzzer target for the COCO annotation parser (feedline/vision/coco.h).
//
// Every input is parsed as an instances file, and read as an annotation
// index (CocoAnnotations::FromIndex). An Error is the expected answer to bad
// bytes; anything else (a crash, a sanitizer report, another exception) is a
// bug. What parses or loads must describe what a dataset can trust: each
// image's objects inside the object list, polygons of x, y pairs, masks
// whose runs cover exactly their height x width and keypoints inside their
// values; and a parsed file's index must load back to the same arrays.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "feedline/error.h"
#include "feedline/vision/coco.h"

namespace {

using feedline::vision::CocoAnnotations;

void CheckTrustworthy(const CocoAnnotations& coco) {
  using namespace feedline::vision;
  for (int64_t i = 0; i < coco.num_images(); ++i) {
    if (coco.image(i).height < 0 || coco.image(i).width < 0) std::abort();
    (void)coco.file_name(i);
    for (const CocoObject& o : coco.objects(i)) {
      if (o.segmentation == CocoSegmentation::kPolygons) {
        for (uint32_t k = 0; k < o.count; ++k) {
          if (coco.polygon(o.first + k).size() % 2 != 0) std::abort();
        }
      } else if (o.segmentation == CocoSegmentation::kRle) {
        const CocoRle& rle = coco.rle(o.first);
        int64_t total = 0;
        for (uint32_t run : rle.counts) total += run;
        if (total != int64_t{rle.height} * rle.width) std::abort();
      }
      // Keypoints inside the values: the last one is read, so that ASan
      // reports one past the array.
      const std::span<const float> points = coco.keypoints(o);
      if (points.size() != 3 * size_t{o.keypoint_count}) std::abort();
      if (!points.empty()) {
        [[maybe_unused]] volatile float last = points.back();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    CheckTrustworthy(CocoAnnotations::FromIndex(bytes, "fuzz.index"));
  } catch (const feedline::Error&) {
  }
  CocoAnnotations coco;
  try {
    coco = CocoAnnotations::Parse(bytes, "fuzz.json");
  } catch (const feedline::Error&) {
    return 0;
  }
  CheckTrustworthy(coco);
  const std::string index = coco.ToIndex();
  if (CocoAnnotations::FromIndex(index, "fuzz.index").ToIndex() != index) std::abort();
  return 0;
}
