// libFuzzer target for the COCO annotation parser (feedline/vision/coco.h).
//
// Every input is parsed as an instances file. An Error is the expected
// answer to bad bytes; anything else (a crash, a sanitizer report, another
// exception) is a bug. A file that parses must describe what a dataset can
// trust: each image's objects inside the object list, polygons of x, y pairs,
// and masks whose runs cover exactly their height x width.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "feedline/error.h"
#include "feedline/vision/coco.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedline::vision;
  CocoAnnotations coco;
  try {
    coco = CocoAnnotations::Parse(std::string_view(reinterpret_cast<const char*>(data), size),
                                  "fuzz.json");
  } catch (const feedline::Error&) {
    return 0;
  }
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
    }
  }
  return 0;
}
