#include "tools/byte_size_option.h"

#include <limits>

#include "feedline/byte_size.h"

namespace feedline::cli {

namespace {

// "2KiB", or "1 byte", "1000 bytes" when no binary unit holds it whole.
std::string Bound(int64_t bytes) {
  const std::string text = FormatByteSize(bytes);
  if (text != std::to_string(bytes)) return text;
  return text + (bytes == 1 ? " byte" : " bytes");
}

}  // namespace

CLI::Validator ByteSizeValue(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const ByteSizeParse size = ParseByteSize(text);
        if (!size.error.empty()) return size.error;
        if (size.bytes < min || size.bytes > max) {
          // The parser's own bound (8 EiB) needs no repeating.
          const std::string range = max == std::numeric_limits<int64_t>::max()
                                        ? "at least " + Bound(min)
                                        : "from " + Bound(min) + " to " + Bound(max);
          return "must be " + range + ", got \"" + text + "\" (" + std::to_string(size.bytes) +
                 (size.bytes == 1 ? " byte)" : " bytes)");
        }
        text = std::to_string(size.bytes);
        return "";
      },
      // No description: the rule is in the option's help text, once.
      "");
}

CLI::Option* AddByteSizeOption(CLI::App* app, const std::string& name, int64_t& bytes,
                               const std::string& description, int64_t min, int64_t max) {
  return app->add_option(name, bytes, description + ". BYTES: " + kByteSizeRule)
      ->transform(ByteSizeValue(min, max))
      ->type_name("BYTES")
      ->default_str(FormatByteSize(bytes));
}

}  // namespace feedline::cli
