#include "feedline/synth/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/image_folder.h"
#include "feedline/vision/read_file.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

TEST(SynthesizeImage, IsDeterministicAndTextured) {
  const std::vector<uint8_t> a = SynthesizeImage(200, 150, 1);
  EXPECT_EQ(a, SynthesizeImage(200, 150, 1));
  EXPECT_NE(a, SynthesizeImage(200, 150, 2));
  // Textured: neighbouring pixels differ, and the whole range is used.
  double gradient = 0;
  for (size_t i = 3; i < a.size(); ++i) gradient += std::abs(int{a[i]} - int{a[i - 3]});
  gradient /= static_cast<double>(a.size() - 3);
  EXPECT_GT(gradient, 2.0);
  const auto [lo, hi] = std::minmax_element(a.begin(), a.end());
  EXPECT_GT(*hi - *lo, 150);
  EXPECT_THROW(SynthesizeImage(0, 10, 1), Error);
}

TEST(SynthesizeJpeg, CompressesLikeAPhotograph) {
  // ~460 x 380 at quality 90: natural photographs take 30-60 KiB.
  double total = 0;
  for (uint64_t seed = 0; seed < 6; ++seed) total += SynthesizeJpeg(460, 380, seed).size();
  const double kib = total / 6 / 1024;
  EXPECT_GT(kib, 20);
  EXPECT_LT(kib, 80);
}

TEST(WriteSyntheticImageFolder, BrokenFilesAreExactlyTheUndecodableOnes) {
  testing::TempDir dir;
  const std::vector<std::string> broken = WriteSyntheticImageFolder(dir.path(), 40, 4, 9, 14);
  ASSERT_EQ(broken.size(), 14u);
  const ImageFolder::Listing listing = ImageFolder::List(dir.path());
  EXPECT_EQ(listing.classes,
            (std::vector<std::string>{"class_000", "class_001", "class_002", "class_003"}));
  ASSERT_EQ(listing.files.size(), 54);
  std::set<std::string> failed;
  std::set<std::string> reasons;
  std::vector<uint8_t> bytes, pixels;
  double total_bytes = 0;
  for (int64_t i = 0; i < listing.files.size(); ++i) {
    const std::string path = dir.path() + "/" + std::string(listing.files.path(i));
    ReadFile(path.c_str(), bytes);
    total_bytes += static_cast<double>(bytes.size());
    try {
      const DecodedImage image = DecodeImage(bytes, path, pixels);
      EXPECT_GE(std::min(image.width, image.height), 300) << path;
      EXPECT_LE(std::min(image.width, image.height), 500) << path;
    } catch (const SampleError& e) {
      failed.insert(path);
      reasons.insert(e.reason());
    }
  }
  EXPECT_EQ(failed, std::set<std::string>(broken.begin(), broken.end()));
  EXPECT_EQ(reasons, (std::set<std::string>{"decode", "format"}));
  EXPECT_GT(total_bytes / 40 / 1024, 15);  // sizes of real photographs
}

TEST(WriteSyntheticImageFolder, IsDeterministic) {
  testing::TempDir a, b;
  WriteSyntheticImageFolder(a.path(), 6, 2, 3, 2);
  WriteSyntheticImageFolder(b.path(), 6, 2, 3, 2);
  std::vector<uint8_t> x, y;
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(a.path())) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = std::filesystem::relative(entry.path(), a.path()).string();
    ReadFile(entry.path().c_str(), x);
    ReadFile((b / relative).c_str(), y);
    EXPECT_EQ(x, y) << relative;
    ++files;
  }
  EXPECT_EQ(files, 8);
}

TEST(WriteSyntheticImageFolder, RejectsBadArguments) {
  testing::TempDir dir;
  EXPECT_THROW(WriteSyntheticImageFolder(dir.path(), 10, 0, 1), Error);
  EXPECT_THROW(WriteSyntheticImageFolder(dir.path(), -1, 2, 1), Error);
}

}  // namespace
}  // namespace feedline::vision
