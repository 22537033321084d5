#include "feedline/storage/shard_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;

ShardIndex SampleIndex() {
  ShardIndex index;
  index.first_record = 10;
  index.tar_size = 10 * 512;
  index.records.push_back({512, 700, 3, 0x1234, vision::ImageFormat::kJpeg, "000000010"});
  index.records.push_back({512 * 5, 100, 0, 0xABCD, vision::ImageFormat::kPng, "000000011"});
  index.records[0].jpeg_restarts = {300, 420, 699};
  return index;
}

TEST(ShardIndex, RoundTrips) {
  const ShardIndex index = SampleIndex();
  const std::vector<uint8_t> bytes = SerializeShardIndex(index);
  EXPECT_EQ(bytes.size(), kShardIndexHeaderBytes + 2 * kShardIndexRecordBytes + 18 + 3 * 4 + 4);
  const ShardIndex parsed = ParseShardIndex(bytes, "x.idx");
  EXPECT_EQ(parsed.first_record, 10u);
  EXPECT_EQ(parsed.tar_size, 5120u);
  ASSERT_EQ(parsed.records.size(), 2u);
  EXPECT_EQ(parsed.records[0].offset, 512u);
  EXPECT_EQ(parsed.records[0].size, 700u);
  EXPECT_EQ(parsed.records[0].label, 3);
  EXPECT_EQ(parsed.records[0].crc32c, 0x1234u);
  EXPECT_EQ(parsed.records[0].key, "000000010");
  EXPECT_EQ(parsed.records[1].format, vision::ImageFormat::kPng);
  EXPECT_EQ(parsed.records[1].key, "000000011");
  EXPECT_EQ(parsed.records[0].jpeg_restarts, (std::vector<uint32_t>{300, 420, 699}));
  EXPECT_TRUE(parsed.records[1].jpeg_restarts.empty());
  EXPECT_EQ(parsed.version, 2u);
  EXPECT_EQ(SerializeShardIndex(parsed), bytes);
}

// A detection pack's index: each record's annotations (KEY.det after the
// image's member) with their size, CRC-32C and usable-box flag (version 3,
// as detection packs were first written: still read and written back).
TEST(ShardIndex, VersionThreeCarriesTheRecordsAnnotations) {
  ShardIndex index = SampleIndex();
  index.version = 3;
  index.records[0].annotation_size = 300;
  index.records[0].annotation_crc32c = 0xFEED;
  index.records[0].has_usable_box = true;
  index.records[1].offset = 512 * 7;  // after the annotations and the .cls member
  index.records[1].annotation_size = 36;
  index.records[1].annotation_crc32c = 7;
  const std::vector<uint8_t> bytes = SerializeShardIndex(index);
  EXPECT_EQ(bytes.size(), kShardIndexHeaderBytes + 2 * kShardIndexRecordBytesV3 + 18 + 3 * 4 + 4);
  const ShardIndex parsed = ParseShardIndex(bytes, "x.idx");
  EXPECT_EQ(parsed.version, 3u);
  EXPECT_EQ(parsed.records[0].annotation_size, 300u);
  EXPECT_EQ(parsed.records[0].annotation_crc32c, 0xFEEDu);
  EXPECT_TRUE(parsed.records[0].has_usable_box);
  EXPECT_FALSE(parsed.records[1].has_usable_box);
  EXPECT_EQ(AnnotationOffset(parsed.records[0]), 2048u);  // 512 + 700 padded, then a header
  EXPECT_EQ(SerializeShardIndex(parsed), bytes);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(ParseShardIndex(std::span(bytes.data(), n), "x.idx"), Error) << n;
  }
  // The next record may not start inside the annotations.
  ShardIndex overlapping = index;
  overlapping.records[1].offset = 512 * 5;
  EXPECT_THAT([&] { SerializeShardIndex(overlapping); },
              ::testing::ThrowsMessage<Error>(HasSubstr("record 1: offset 2560 overlaps")));
  ShardIndex past_end = index;
  past_end.records[1].annotation_size = 5000;
  EXPECT_THAT([&] { SerializeShardIndex(past_end); },
              ::testing::ThrowsMessage<Error>(HasSubstr("record 1: annotations at 4608")));
  ShardIndex older = index;
  older.version = 2;
  EXPECT_THAT([&] { SerializeShardIndex(older); },
              ::testing::ThrowsMessage<Error>(HasSubstr("annotations need index version 3")));
  ShardIndex sized = index;
  sized.records[1].image_height = 480;
  EXPECT_THAT([&] { SerializeShardIndex(sized); },
              ::testing::ThrowsMessage<Error>(HasSubstr("record 1: an image size needs index version 4")));
}

// Detection packs are written in version 4: each record's image size too,
// so that images are grouped by aspect ratio without reading them.
TEST(ShardIndex, VersionFourCarriesTheImageSizes) {
  ShardIndex index = SampleIndex();
  index.version = kShardIndexVersionAnnotated;
  ASSERT_EQ(index.version, 4u);
  index.records[0].annotation_size = 300;
  index.records[0].annotation_crc32c = 0xFEED;
  index.records[0].has_usable_box = true;
  index.records[0].image_height = 480;
  index.records[0].image_width = 640;
  index.records[1].offset = 512 * 7;
  index.records[1].annotation_size = 36;
  index.records[1].image_height = 1;
  index.records[1].image_width = 65535;
  const std::vector<uint8_t> bytes = SerializeShardIndex(index);
  EXPECT_EQ(bytes.size(), kShardIndexHeaderBytes + 2 * kShardIndexRecordBytesV4 + 18 + 3 * 4 + 4);
  const ShardIndex parsed = ParseShardIndex(bytes, "x.idx");
  EXPECT_EQ(parsed.version, 4u);
  EXPECT_EQ(parsed.records[0].image_height, 480u);
  EXPECT_EQ(parsed.records[0].image_width, 640u);
  EXPECT_EQ(parsed.records[1].image_height, 1u);
  EXPECT_EQ(parsed.records[1].image_width, 65535u);
  EXPECT_EQ(parsed.records[0].annotation_crc32c, 0xFEEDu);
  EXPECT_TRUE(parsed.records[0].has_usable_box);
  EXPECT_EQ(SerializeShardIndex(parsed), bytes);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(ParseShardIndex(std::span(bytes.data(), n), "x.idx"), Error) << n;
  }
  ShardIndex huge = index;
  huge.records[0].image_width = 5'000'000;
  EXPECT_THAT([&] { SerializeShardIndex(huge); },
              ::testing::ThrowsMessage<Error>(HasSubstr("record 0: image size 480x5000000 is over")));
}

// An index written before restart offsets existed (version 1, the bytes of
// fuzz/corpus_shard_index/three_records.idx as the first shard writer wrote
// them) still parses, and serializes back to the same bytes.
TEST(ShardIndex, ReadsVersionOneIndexes) {
  std::ifstream in(std::string(FEEDLINE_SOURCE_DIR) + "/fuzz/corpus_shard_index/three_records.idx",
                   std::ios::binary);
  const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
  ASSERT_GT(bytes.size(), kShardIndexHeaderBytesV1);
  ASSERT_EQ(bytes[8], 1);  // version 1
  const ShardIndex index = ParseShardIndex(bytes, "old.idx");
  EXPECT_EQ(index.version, 1u);
  EXPECT_EQ(index.records.size(), 3u);
  for (const ShardRecord& r : index.records) EXPECT_TRUE(r.jpeg_restarts.empty());
  EXPECT_EQ(SerializeShardIndex(index), bytes);

  ShardIndex v1 = SampleIndex();
  v1.version = 1;
  EXPECT_THAT([&] { SerializeShardIndex(v1); },
              ::testing::ThrowsMessage<Error>(HasSubstr("need index version 2")));
  v1.records[0].jpeg_restarts.clear();
  EXPECT_EQ(ParseShardIndex(SerializeShardIndex(v1), "v1.idx").version, 1u);
}

TEST(ShardIndex, RestartOffsetsMustIncreaseInsideAJpeg) {
  ShardIndex decreasing = SampleIndex();
  decreasing.records[0].jpeg_restarts = {300, 300};
  EXPECT_THAT([&] { SerializeShardIndex(decreasing); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not increasing")));
  ShardIndex outside = SampleIndex();
  outside.records[0].jpeg_restarts = {300, 700};
  EXPECT_THAT([&] { SerializeShardIndex(outside); },
              ::testing::ThrowsMessage<Error>(HasSubstr("outside the image")));
  ShardIndex png = SampleIndex();
  png.records[1].jpeg_restarts = {10};
  EXPECT_THAT([&] { SerializeShardIndex(png); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no JPEG")));
}

TEST(ShardIndex, EveryTruncationIsRefusedNamingTheFile) {
  const std::vector<uint8_t> bytes = SerializeShardIndex(SampleIndex());
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      ParseShardIndex(std::span<const uint8_t>(bytes.data(), n), "cut.idx");
      FAIL() << "a truncation to " << n << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("cut.idx: ")) << n;
    }
  }
}

TEST(ShardIndex, EveryFlippedByteIsRefused) {
  const std::vector<uint8_t> bytes = SerializeShardIndex(SampleIndex());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> damaged = bytes;
    damaged[i] ^= 0x40;
    EXPECT_THROW(ParseShardIndex(damaged, "bad.idx"), Error) << "byte " << i;
  }
}

TEST(ShardIndex, SaysWhatIsWrong) {
  std::vector<uint8_t> bytes = SerializeShardIndex(SampleIndex());
  std::vector<uint8_t> magic = bytes;
  magic[0] = 'X';
  EXPECT_THAT([&] { ParseShardIndex(magic, "a.idx"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("a.idx: not a feedline shard index")));
  std::vector<uint8_t> crc = bytes;
  crc[kShardIndexHeaderBytes + 16] ^= 1;  // a label
  EXPECT_THAT([&] { ParseShardIndex(crc, "b.idx"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("b.idx: index checksum mismatch")));
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 10);
  EXPECT_THAT([&] { ParseShardIndex(cut, "c.idx"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("c.idx: truncated or damaged index")));
}

TEST(ShardIndex, RecordsMustLieInsideTheTarInOrder) {
  ShardIndex past = SampleIndex();
  past.records[1].size = 5000;
  EXPECT_THAT([&] { SerializeShardIndex(past); },
              ::testing::ThrowsMessage<Error>(HasSubstr("past the tar's end")));
  ShardIndex overlap = SampleIndex();
  overlap.records[1].offset = 1024;
  EXPECT_THAT([&] { SerializeShardIndex(overlap); },
              ::testing::ThrowsMessage<Error>(HasSubstr("overlaps")));
  ShardIndex unaligned = SampleIndex();
  unaligned.records[0].offset = 513;
  EXPECT_THAT([&] { SerializeShardIndex(unaligned); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not a multiple of 512")));
  ShardIndex key = SampleIndex();
  key.records[0].key = "a.b";
  EXPECT_THAT([&] { SerializeShardIndex(key); },
              ::testing::ThrowsMessage<Error>(HasSubstr("bad key")));
}

TEST(ShardIndex, ReadingAMissingFileNamesIt) {
  EXPECT_THAT([] { ReadShardIndex("/nonexistent/shard-000000.idx"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("/nonexistent/shard-000000.idx")));
}

}  // namespace
}  // namespace feedline::storage
