#include "feedline/storage/shard_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_index.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/image_folder.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;

constexpr int64_t kShardImages = 24;

// One synthetic image folder for the whole suite (writing it is the slow part).
class ShardDatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new TempDir();
    // Seed 5: 7 of the 24 JPEGs are progressive (seed 3 made none).
    vision::WriteSyntheticImageFolder(*folder_ / "images", kShardImages, /*classes=*/4, /*seed=*/5,
                                      /*broken=*/0);
  }
  static void TearDownTestSuite() {
    delete folder_;
    folder_ = nullptr;
  }
  static std::string Images() { return *folder_ / "images"; }

  // Packs the folder into `out` with shards of about `shard_bytes`.
  static PackResult Pack(const std::string& out, uint64_t shard_bytes = 200 << 10) {
    PackOptions options;
    options.shard_bytes = shard_bytes;
    return PackSource(Images(), out, options);
  }

  static TempDir* folder_;
};

TempDir* ShardDatasetTest::folder_ = nullptr;

std::vector<uint8_t> ShardImageOf(const Dataset& data, int64_t index, uint64_t seed = 7) {
  SampleContext ctx(seed, /*epoch=*/0, index);
  Sample sample;
  data.Get(index, sample, ctx);
  const Tensor& image = sample["image"];
  const uint8_t* p = static_cast<const uint8_t*>(image.raw());
  std::vector<uint8_t> bytes(p, p + image.bytes());
  const int64_t label = *sample["label"].data<int64_t>();
  bytes.push_back(static_cast<uint8_t>(label));
  return bytes;
}

TEST_F(ShardDatasetTest, SamplesEqualImageFoldersThroughTheSamePipeline) {
  TempDir out;
  const PackResult result = Pack(out / "shards");
  EXPECT_EQ(result.records, kShardImages);
  EXPECT_GT(result.shards, 2);  // ~40 KiB images, 200 KiB shards
  EXPECT_EQ(result.reused_shards, 0);

  for (const vision::Pipeline& pipeline :
       {vision::TrainPipeline(64, DType::kU8), vision::ValPipeline(72, 64, DType::kF32)}) {
    const vision::ImageFolder folder(Images(), pipeline);
    const ShardDataset shards(ShardDataset::Find(out / "shards"), pipeline);
    ASSERT_EQ(shards.size(), folder.size());
    EXPECT_EQ(shards.classes(), folder.classes());
    EXPECT_EQ(shards.labels(), folder.labels());
    EXPECT_EQ(static_cast<int64_t>(shards.shards().size()), result.shards);
    for (int64_t i = 0; i < folder.size(); ++i) {
      EXPECT_EQ(ShardImageOf(shards, i), ShardImageOf(folder, i)) << i;
    }
    EXPECT_EQ(shards.FixedFields().size(), 2u);
  }
  // Packed images have no objects for a RandomIoUCrop to choose from.
  EXPECT_THAT(
      [&] {
        ShardDataset(ShardDataset::Find(out / "shards"),
                     vision::Pipeline({vision::Transform::RandomIoUCrop()}));
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("random_iou_crop chooses its crop from the objects")));
}

// Packing rewrites the baseline JPEGs with restart markers (and the
// progressive ones as baseline JPEGs with markers) and the index lists the
// rows; the samples (the train pipeline's random crops decode only their
// windows) equal the folder's byte for byte.
// A pack without the rewrite, with its index in the version 1 format that
// packs had before, reads the same.
TEST_F(ShardDatasetTest, RestartMarkedAndVersionOnePacksGiveTheFoldersPixels) {
  TempDir out;
  const PackResult marked = Pack(out / "marked");
  EXPECT_GT(marked.rewritten_jpegs, 0);
  EXPECT_GT(marked.rewritten_bytes_after, 0u);
  // The folder holds progressive JPEGs too: written as baseline ones, their
  // crops below decode from their windows as well.
  EXPECT_GT(marked.progressive_converted, 0);
  EXPECT_GT(marked.progressive_bytes_after, 0u);
  int64_t with_restarts = 0;
  for (const std::string& idx : ShardDataset::Find(out / "marked")) {
    const ShardIndex index = ReadShardIndex(idx);
    EXPECT_EQ(index.version, 2u);
    for (const ShardRecord& r : index.records) with_restarts += r.jpeg_restarts.size() > 1;
  }
  EXPECT_EQ(with_restarts, marked.rewritten_jpegs);

  PackOptions plain_options;
  plain_options.shard_bytes = 200 << 10;
  plain_options.jpeg_restart_rows = 0;
  const PackResult plain = PackSource(Images(), out / "plain", plain_options);
  EXPECT_EQ(plain.rewritten_jpegs, 0);
  for (const std::string& idx : ShardDataset::Find(out / "plain")) {
    ShardIndex index = ReadShardIndex(idx);
    index.version = 1;
    WriteBytes(idx, SerializeShardIndex(index));
    ASSERT_EQ(ReadBytes(idx)[8], 1);
  }
  const vision::Pipeline pipeline = vision::TrainPipeline(48, DType::kU8);
  const vision::ImageFolder folder(Images(), pipeline);
  const ShardDataset old_shards(ShardDataset::Find(out / "plain"), pipeline);
  const ShardDataset new_shards(ShardDataset::Find(out / "marked"), pipeline);
  for (uint64_t seed : {1, 2, 3}) {
    for (int64_t i = 0; i < folder.size(); ++i) {
      const std::vector<uint8_t> want = ShardImageOf(folder, i, seed);
      EXPECT_EQ(ShardImageOf(old_shards, i, seed), want) << i;
      EXPECT_EQ(ShardImageOf(new_shards, i, seed), want) << i;
    }
  }
}

// Files are read and rewritten in parallel, written in listing order: the
// same bytes with one thread or several.
TEST_F(ShardDatasetTest, PackingWithThreadsWritesTheSameBytes) {
  TempDir out;
  PackOptions one;
  one.shard_bytes = 200 << 10;
  one.threads = 1;
  PackOptions three = one;
  three.threads = 3;
  const PackResult a = PackSource(Images(), out / "one", one);
  const PackResult b = PackSource(Images(), out / "three", three);
  ASSERT_EQ(a.shards, b.shards);
  EXPECT_EQ(a.rewritten_jpegs, b.rewritten_jpegs);
  for (int64_t s = 0; s < a.shards; ++s) {
    EXPECT_EQ(ReadBytes(out / ("one/" + ShardTarName(s))),
              ReadBytes(out / ("three/" + ShardTarName(s))));
    EXPECT_EQ(ReadBytes(out / ("one/" + ShardIndexName(s))),
              ReadBytes(out / ("three/" + ShardIndexName(s))));
  }
  PackOptions negative = one;
  negative.threads = -1;
  EXPECT_THROW(PackSource(Images(), out / "bad", negative), Error);
}

TEST_F(ShardDatasetTest, OpenTarFilesStayUnderTheBound) {
  TempDir out;
  const PackResult result = Pack(out / "shards", 64 << 10);  // many small shards
  ASSERT_GT(result.shards, 4);
  const vision::Pipeline pipeline = vision::ValPipeline(40, 32, DType::kU8);
  const ShardDataset bounded(ShardDataset::Find(out / "shards"), pipeline, {}, 2);
  const vision::ImageFolder folder(Images(), pipeline);
  EXPECT_EQ(bounded.max_open_shards(), 2u);
  EXPECT_EQ(bounded.open_shards(), 0u);  // opened when first read
  for (int64_t i = bounded.size() - 1; i >= 0; --i) {
    EXPECT_EQ(ShardImageOf(bounded, i), ShardImageOf(folder, i)) << i;
    EXPECT_LE(bounded.open_shards(), 2u);
  }
  EXPECT_GE(bounded.open_shards(), 1u);
}

TEST_F(ShardDatasetTest, ShardsAreTarsWithKeyJpgAndKeyCls) {
  TempDir out;
  Pack(out / "shards", 1 << 30);  // one shard
  const std::vector<uint8_t> tar = ReadBytes(out / "shards/shard-000000.tar");
  ASSERT_GT(tar.size(), 1024u);
  EXPECT_EQ(tar.size() % 512, 0u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(tar.data())), "000000000.jpg");
  EXPECT_EQ(std::memcmp(tar.data() + 257, "ustar", 5), 0);
  // The tar ends with two zero blocks.
  EXPECT_TRUE(std::all_of(tar.end() - 1024, tar.end(), [](uint8_t b) { return b == 0; }));
  const ShardIndex index = ReadShardIndex(out / "shards/shard-000000.idx");
  ASSERT_EQ(index.records.size(), static_cast<size_t>(kShardImages));
  EXPECT_EQ(index.tar_size, tar.size());
  // The label member follows the image: header name key.cls, then the text.
  const ShardRecord& first = index.records[0];
  const size_t cls = (first.offset + first.size + 511) / 512 * 512;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(tar.data() + cls)), "000000000.cls");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(tar.data() + cls + 512)),
            std::to_string(first.label));
}

TEST_F(ShardDatasetTest, ADamagedRecordIsASampleErrorNamingShardKeyAndOffset) {
  TempDir out;
  Pack(out / "shards");
  const ShardIndex index = ReadShardIndex(out / "shards/shard-000001.idx");
  const ShardRecord& record = index.records[1];
  std::vector<uint8_t> tar = ReadBytes(out / "shards/shard-000001.tar");
  tar[record.offset + record.size / 2] ^= 0x01;
  WriteBytes(out / "shards/shard-000001.tar", tar);

  const ShardDataset shards(ShardDataset::Find(out / "shards"), vision::TrainPipeline(32));
  const int64_t damaged = shards.shard_starts()[1] + 1;
  EXPECT_EQ(shards.key(damaged), record.key);
  try {
    ShardImageOf(shards, damaged);
    FAIL() << "a damaged record was read";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "checksum");
    EXPECT_THAT(e.message(), HasSubstr("CRC-32C mismatch"));
    EXPECT_THAT(e.message(), HasSubstr("shard-000001.tar"));
    EXPECT_THAT(e.message(), HasSubstr("key " + record.key));
    EXPECT_THAT(e.message(), HasSubstr("offset " + std::to_string(record.offset)));
    EXPECT_THAT(e.source(), HasSubstr("shard-000001.tar:" + record.key));
  }
  // The other records still load.
  EXPECT_NO_THROW(ShardImageOf(shards, damaged - 1));
  EXPECT_NO_THROW(ShardImageOf(shards, damaged + 1));
}

TEST_F(ShardDatasetTest, ADamagedTarHeaderIsASampleError) {
  TempDir out;
  Pack(out / "shards");
  const ShardIndex index = ReadShardIndex(out / "shards/shard-000000.idx");
  std::vector<uint8_t> tar = ReadBytes(out / "shards/shard-000000.tar");
  tar[index.records[0].offset - 512] = 'X';  // the member's name
  WriteBytes(out / "shards/shard-000000.tar", tar);
  const ShardDataset shards(ShardDataset::Find(out / "shards"), vision::TrainPipeline(32));
  EXPECT_THAT([&] { ShardImageOf(shards, 0); },
              ::testing::ThrowsMessage<SampleError>(HasSubstr("tar header checksum mismatch")));
}

TEST_F(ShardDatasetTest, TruncatedShardsAndDamagedIndexesAreRefusedNamingTheFile) {
  TempDir out;
  Pack(out / "shards");
  const std::string tar = out / "shards/shard-000001.tar";
  fs::resize_file(tar, fs::file_size(tar) - 1000);
  EXPECT_THAT([&] { ShardDataset(ShardDataset::Find(out / "shards"), vision::TrainPipeline(32)); },
              ::testing::ThrowsMessage<Error>(HasSubstr(tar + ": truncated shard")));

  Pack(out / "shards2");
  const std::string idx = out / "shards2/shard-000002.idx";
  std::vector<uint8_t> bytes = ReadBytes(idx);
  bytes[60] ^= 0xFF;
  WriteBytes(idx, bytes);
  EXPECT_THAT([&] { ShardDataset(ShardDataset::Find(out / "shards2"), vision::TrainPipeline(32)); },
              ::testing::ThrowsMessage<Error>(HasSubstr(idx + ": index checksum mismatch")));
  fs::resize_file(idx, 30);
  EXPECT_THAT([&] { ShardDataset(ShardDataset::Find(out / "shards2"), vision::TrainPipeline(32)); },
              ::testing::ThrowsMessage<Error>(HasSubstr(idx + ": truncated index")));
  fs::remove(out / "shards2/shard-000000.tar");
  EXPECT_THAT([&] { ShardDataset(ShardDataset::Find(out / "shards2"), vision::TrainPipeline(32)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("shard-000000.tar: cannot open shard")));
}

TEST_F(ShardDatasetTest, FindTakesAFolderAGlobOrOneShard) {
  TempDir out;
  const PackResult result = Pack(out / "shards");
  EXPECT_EQ(static_cast<int64_t>(ShardDataset::Find(out / "shards").size()), result.shards);
  EXPECT_EQ(static_cast<int64_t>(ShardDataset::Find(out / "shards/shard-*.tar").size()),
            result.shards);
  EXPECT_EQ(ShardDataset::Find(out / "shards/shard-000001.tar"),
            std::vector<std::string>{out / "shards/shard-000001.idx"});
  EXPECT_THROW(ShardDataset::Find(out / "shards/nothing-*.tar"), Error);
  EXPECT_THROW(ShardDataset::Find(Images()), Error);  // no index in an image folder
  // One shard of several: its records only.
  const ShardDataset one(ShardDataset::Find(out / "shards/shard-000001.tar"),
                         vision::TrainPipeline(32));
  const ShardIndex index = ReadShardIndex(out / "shards/shard-000001.idx");
  EXPECT_EQ(one.size(), static_cast<int64_t>(index.records.size()));
}

TEST_F(ShardDatasetTest, AnInterruptedPackIsRefusedThenResumedToTheSameBytes) {
  TempDir out;
  const PackResult fresh = Pack(out / "fresh");
  ASSERT_GE(fresh.shards, 3);

  Pack(out / "cut");
  // As if stopped while writing shard 1: its index not yet written, its tar
  // half written, later shards absent, pack.txt without the counts.
  const std::string cut = out / "cut";
  fs::remove(cut + "/shard-000001.idx");
  fs::resize_file(cut + "/shard-000001.tar", fs::file_size(cut + "/shard-000001.tar") / 2);
  for (int64_t s = 2; s < fresh.shards; ++s) {
    fs::remove(cut + "/" + ShardTarName(s));
    fs::remove(cut + "/" + ShardIndexName(s));
  }
  const std::vector<uint8_t> manifest_bytes = ReadBytes(cut + "/pack.txt");
  std::string manifest(manifest_bytes.begin(), manifest_bytes.end());
  ASSERT_NE(manifest.find("\nrecords "), std::string::npos);
  manifest.resize(manifest.find("\nrecords ") + 1);
  {
    std::ofstream rewrite(cut + "/pack.txt", std::ios::trunc);
    rewrite << manifest;
  }
  EXPECT_THAT([&] { ShardDataset(ShardDataset::Find(cut), vision::TrainPipeline(32)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("the pack is unfinished")));

  const PackResult resumed = Pack(cut);
  EXPECT_EQ(resumed.reused_shards, 1);
  EXPECT_EQ(resumed.shards, fresh.shards);
  EXPECT_EQ(resumed.records, fresh.records);
  for (int64_t s = 0; s < fresh.shards; ++s) {
    EXPECT_EQ(ReadBytes(cut + "/" + ShardTarName(s)), ReadBytes(out / "fresh/" + ShardTarName(s)))
        << s;
    EXPECT_EQ(ReadBytes(cut + "/" + ShardIndexName(s)),
              ReadBytes(out / "fresh/" + ShardIndexName(s)))
        << s;
  }
  EXPECT_EQ(ShardDataset(ShardDataset::Find(cut), vision::TrainPipeline(32)).size(), kShardImages);
  // Packing a finished pack again keeps every shard.
  EXPECT_EQ(Pack(cut).reused_shards, fresh.shards);
}

TEST_F(ShardDatasetTest, AnotherShardSizeIntoTheSameFolderNeedsRestart) {
  TempDir out;
  Pack(out / "shards");
  EXPECT_THAT([&] { Pack(out / "shards", 300 << 10); },
              ::testing::ThrowsMessage<Error>(HasSubstr("pass --restart")));
  PackOptions options;
  options.shard_bytes = 300 << 10;
  options.restart = true;
  const PackResult result = PackSource(Images(), out / "shards", options);
  EXPECT_EQ(result.reused_shards, 0);
  EXPECT_EQ(static_cast<int64_t>(ShardDataset::Find(out / "shards").size()), result.shards);
}

// Other JPEG rewrite options into the same folder are another pack too,
// including those whose pack.txt lines are a prefix of the folder's (no
// restart markers, or progressive JPEGs kept).
TEST_F(ShardDatasetTest, OtherJpegRewriteOptionsIntoTheSameFolderNeedRestart) {
  TempDir out;
  Pack(out / "shards");
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    PackOptions options;
    options.shard_bytes = 200 << 10;
    if (variant == 0) options.jpeg_restart_rows = 0;
    if (variant == 1) options.jpeg_restart_mcus = 0;
    if (variant == 2) options.jpeg_progressive_to_baseline = false;
    EXPECT_THAT([&] { PackSource(Images(), out / "shards", options); },
                ::testing::ThrowsMessage<Error>(HasSubstr("pass --restart")));
  }
  const PackResult again = Pack(out / "shards");  // the same options resume
  EXPECT_EQ(again.reused_shards, again.shards);
}

TEST_F(ShardDatasetTest, BrokenSourceFilesStopThePackOrAreSkipped) {
  TempDir out;
  const std::string images = out / "images";
  fs::copy(Images(), images, fs::copy_options::recursive);
  const std::string broken = images + "/class_001/zz_broken.jpg";
  { std::ofstream(broken) << "not an image at all"; }
  EXPECT_THAT([&] { PackSource(images, out / "a", PackOptions{}); },
              ::testing::ThrowsMessage<Error>(HasSubstr(broken + ": cannot be packed")));
  PackOptions skip;
  skip.skip_broken = true;
  const PackResult result = PackSource(images, out / "b", skip);
  EXPECT_EQ(result.records, kShardImages);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].first, broken);
}

}  // namespace
}  // namespace feedline::storage
