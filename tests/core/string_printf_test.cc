// StringPrintf (feedline/string_printf.h): printf formatting into a string
// of any length, shared by the library's reports and the feedline command.
#include "feedline/string_printf.h"

#include <gtest/gtest.h>

#include <string>

namespace feedline {
namespace {

TEST(StringPrintfTest, FormatsLikePrintf) {
  EXPECT_EQ(StringPrintf("%8d|%-4s|%.1f%%", 42, "ab", 12.34), "      42|ab  |12.3%");
  EXPECT_EQ(StringPrintf("plain"), "plain");
  EXPECT_EQ(StringPrintf("%s", ""), "");
}

TEST(StringPrintfTest, OutputLongerThanItsBufferIsKeptWhole) {
  // Around the 256-byte buffer it tries first, and well past it.
  for (int length : {254, 255, 256, 257, 5000}) {
    const std::string text(static_cast<size_t>(length), 'x');
    const std::string out = StringPrintf("<%s>", text.c_str());
    ASSERT_EQ(out.size(), static_cast<size_t>(length) + 2) << length;
    EXPECT_EQ(out, "<" + text + ">");
  }
}

}  // namespace
}  // namespace feedline
