#include "feedline/vision/detection_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

using ::testing::HasSubstr;

// Two polygon objects (one of two polygons), a crowd with a mask, a box.
DetectionRecord ThreeKinds() {
  DetectionRecord r;
  r.image_id = -42;
  const std::vector<double> a = {1.5, 2.25, 10, 2, 6.125, 9};
  const std::vector<double> b = {0, 0, 4, 0, 4, 4, 0, 4};
  DetectionObject first{{1.5f, 2.0f, 10.0f, 9.0f}, 7, 31.5f, false,
                        CocoSegmentation::kPolygons};
  first.first = r.AddPolygon(a);
  first.count = 1;
  DetectionObject second{{0, 0, 4, 4}, 3, 16, false, CocoSegmentation::kPolygons};
  second.first = r.AddPolygon(b);
  r.AddPolygon(a);
  second.count = 2;
  DetectionObject crowd{{2, 1, 3, 3}, 1, 2, true, CocoSegmentation::kRle, 0, 1};
  r.masks.push_back(CocoRle{3, 4, {5, 2, 1, 4}});
  DetectionObject box{{0.5f, 0.5f, 1e6f, 2}, int64_t{1} << 40, 0, false};
  r.objects = {first, second, crowd, box};
  return r;
}

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(DetectionRecordTest, DecodingGivesBackWhatWasEncoded) {
  const DetectionRecord r = ThreeKinds();
  const DetectionRecord back = DecodeDetectionRecord(Bytes(EncodeDetectionRecord(r)), "rec");
  EXPECT_EQ(back.image_id, -42);
  ASSERT_EQ(back.objects.size(), 4u);
  for (size_t i = 0; i < r.objects.size(); ++i) {
    const DetectionObject& a = r.objects[i];
    const DetectionObject& b = back.objects[i];
    EXPECT_EQ(a.box, b.box);
    EXPECT_EQ(a.category, b.category);
    EXPECT_EQ(a.area, b.area);
    EXPECT_EQ(a.crowd, b.crowd);
    EXPECT_EQ(a.segmentation, b.segmentation);
    EXPECT_EQ(a.first, b.first);
    EXPECT_EQ(a.count, b.count);
  }
  EXPECT_EQ(back.coordinates, r.coordinates);
  EXPECT_EQ(back.polygon_ends, r.polygon_ends);
  ASSERT_EQ(back.polygon(1).size(), 8u);
  EXPECT_EQ(back.polygon(2)[1], 2.25);
  ASSERT_EQ(back.masks.size(), 1u);
  EXPECT_EQ(back.masks[0].height, 3);
  EXPECT_EQ(back.masks[0].width, 4);
  EXPECT_EQ(back.masks[0].counts, (std::vector<uint32_t>{5, 2, 1, 4}));
  // An image without objects is a header alone.
  EXPECT_EQ(EncodeDetectionRecord(DetectionRecord{}).size(), 36u);
  EXPECT_TRUE(DecodeDetectionRecord(Bytes(EncodeDetectionRecord({})), "e").objects.empty());
}

TEST(DetectionRecordTest, EveryTruncationAndEveryChangedByteIsAnErrorOrTheSameShape) {
  const std::string good = EncodeDetectionRecord(ThreeKinds());
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(DecodeDetectionRecord(Bytes(good.substr(0, n)), "rec"), Error) << n;
  }
  // A changed byte gives an Error, or a record of the same shape (a changed
  // number): never a crash or a read outside the bytes.
  for (size_t at = 0; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x41);
    try {
      const DetectionRecord r = DecodeDetectionRecord(Bytes(bad), "rec");
      EXPECT_EQ(r.objects.size(), 4u) << at;
      for (const DetectionObject& o : r.objects) {
        if (o.segmentation == CocoSegmentation::kPolygons) {
          for (uint32_t k = 0; k < o.count; ++k) EXPECT_EQ(r.polygon(o.first + k).size() % 2, 0u);
        }
      }
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("rec: annotations: ")) << at;
    }
  }
}

TEST(DetectionRecordTest, DamageIsNamed) {
  const std::string good = EncodeDetectionRecord(ThreeKinds());
  auto decode = [](std::string bytes) { return DecodeDetectionRecord(Bytes(bytes), "s.tar:0001"); };
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_THAT([&] { decode(magic); },
              ::testing::ThrowsMessage<Error>(HasSubstr("s.tar:0001: annotations: not a feedline "
                                                        "detection record (bad magic)")));
  std::string version = good;
  version[4] = 9;
  EXPECT_THAT([&] { decode(version); },
              ::testing::ThrowsMessage<Error>(HasSubstr("record version 9, this feedline reads "
                                                        "version 1")));
  EXPECT_THAT([&] { decode(good + "x"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("make 396 bytes, the record has 397")));
  // The crowd flag of object 0, then its segmentation kind.
  std::string crowd = good;
  crowd[36 + 28] = 2;
  EXPECT_THAT([&] { decode(crowd); },
              ::testing::ThrowsMessage<Error>(HasSubstr("object 0: a flag is neither 0 nor 1")));
  std::string kind = good;
  kind[36 + 29] = 3;
  EXPECT_THAT([&] { decode(kind); },
              ::testing::ThrowsMessage<Error>(HasSubstr("object 0: unknown segmentation 3")));
  // A mask's runs that do not cover it.
  DetectionRecord r = ThreeKinds();
  r.masks[0].counts.back() = 5;
  EXPECT_THAT([&] { decode(EncodeDetectionRecord(r)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("a mask's runs do not cover")));
  r = ThreeKinds();
  r.coordinates[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT([&] { decode(EncodeDetectionRecord(r)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("coordinate is not a finite number")));
  r = ThreeKinds();
  r.polygon_ends[0] = 5;  // odd: not x, y pairs
  EXPECT_THAT([&] { decode(EncodeDetectionRecord(r)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not x, y pairs")));
}

TEST(DetectionRecordTest, EncodingRefusesASegmentationOutsideTheRecord) {
  DetectionRecord r = ThreeKinds();
  r.objects[0].count = 9;
  EXPECT_THROW(EncodeDetectionRecord(r), Error);
  r = ThreeKinds();
  r.objects[2].first = 1;
  EXPECT_THAT([&] { EncodeDetectionRecord(r); },
              ::testing::ThrowsMessage<Error>(HasSubstr("segmentation is out of range")));
}

}  // namespace
}  // namespace feedline::vision
