#include "feedline/vision/read_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

TEST(ReadFile, ReadsTheWholeFileAndKeepsCapacity) {
  testing::TempDir dir;
  std::vector<uint8_t> big(300000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  testing::WriteBytes(dir / "big", big);
  testing::WriteBytes(dir / "small", {1, 2, 3});
  testing::WriteBytes(dir / "empty", {});
  std::vector<uint8_t> bytes;
  ReadFile((dir / "big").c_str(), bytes);
  EXPECT_EQ(bytes, big);
  const uint8_t* storage = bytes.data();
  ReadFile((dir / "small").c_str(), bytes);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(bytes.data(), storage);  // no reallocation
  ReadFile((dir / "empty").c_str(), bytes);
  EXPECT_TRUE(bytes.empty());
}

TEST(ReadFile, FailuresAreIoSampleErrors) {
  testing::TempDir dir;
  std::vector<uint8_t> bytes;
  const std::string missing = dir / "missing.jpg";
  const std::string message =
      testing::ExpectSampleError([&] { ReadFile(missing.c_str(), bytes); }, "io", missing);
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
  testing::ExpectSampleError([&] { ReadFile(dir.path().c_str(), bytes); }, "io", dir.path());
}

}  // namespace
}  // namespace feedline::vision
