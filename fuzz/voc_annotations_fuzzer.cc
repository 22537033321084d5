// libFuzzer target for the Pascal VOC annotation parser
// (feedline/vision/voc.h).
//
// Every input is parsed as one annotation file. An Error is the expected
// answer to bad bytes; anything else (a crash, a sanitizer report, another
// exception) is a bug. A file that parses must describe what a dataset can
// trust: a size that is not negative, boxes with their minimum at most their
// maximum and finite, labels that index the classes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "feedline/error.h"
#include "feedline/vision/voc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedline::vision;
  VocAnnotations voc;
  try {
    voc.Add("fuzz", std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.xml");
  } catch (const feedline::Error&) {
    return 0;
  }
  if (voc.num_images() != 1) std::abort();
  if (voc.image(0).height < 0 || voc.image(0).width < 0) std::abort();
  for (const VocObject& o : voc.objects(0)) {
    for (float v : o.box) {
      if (!std::isfinite(v)) std::abort();
    }
    if (o.box[0] > o.box[2] || o.box[1] > o.box[3]) std::abort();
    if (o.label < 0 || o.label >= static_cast<int64_t>(voc.classes().size())) std::abort();
  }
  return 0;
}
