#include "tools/source_limits.h"

#include <limits>

#include "tools/byte_size_option.h"
#include "tools/command_line.h"

namespace feedline::cli {

void AddLimitOptions(CLI::App* app, SourceLimits& limits) {
  AddByteSizeOption(app, "--max-file-bytes", limits.max_file_bytes,
                    "A larger file is a broken sample, refused before it is read", 1,
                    std::numeric_limits<int64_t>::max());
  app->add_option("--max-pixels", limits.max_pixels,
                  "An image with more pixels is a broken sample, refused from its header "
                  "(decompression bombs; Pillow's MAX_IMAGE_PIXELS)")
      ->check(IntAtLeast(1))
      ->type_name("N")
      ->capture_default_str();
}

}  // namespace feedline::cli
