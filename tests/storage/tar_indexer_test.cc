// The index of a tar that has none beside it: what TarIndexer builds from
// the bytes alone, fed in pieces of any size, and the members it refuses.
#include "src/storage/tar_indexer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/crc32c.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/image_folder.h"
#include "src/storage/tar_header.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;

struct Member {
  std::string name;
  std::string data;
  char type = '0';
};

// A tar of `members` as tar tools write one: headers, data padded to 512
// bytes, and (unless `end` is false) the two zero blocks.
std::vector<uint8_t> TarOf(const std::vector<Member>& members, bool end = true) {
  std::vector<uint8_t> tar;
  for (const Member& m : members) {
    TarHeader h = MakeTarHeader(m.name, m.data.size());
    if (m.type != '0') {
      h[156] = static_cast<uint8_t>(m.type);
      uint32_t sum = 0;
      for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
      std::snprintf(reinterpret_cast<char*>(h.data() + 148), 8, "%06o", sum);
      h[155] = ' ';
    }
    tar.insert(tar.end(), h.begin(), h.end());
    tar.insert(tar.end(), m.data.begin(), m.data.end());
    tar.resize((tar.size() + 511) / 512 * 512, 0);
  }
  if (end) tar.resize(tar.size() + 1024, 0);
  return tar;
}

ShardIndex IndexOf(const std::vector<uint8_t>& tar, size_t piece = 1 << 20) {
  TarIndexer indexer("t.tar");
  for (size_t at = 0; at < tar.size(); at += piece) {
    indexer.Feed(tar.data() + at, std::min(piece, tar.size() - at));
  }
  return indexer.Finish();
}

std::string ErrorOf(const std::vector<uint8_t>& tar) {
  try {
    IndexOf(tar);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TarIndexer, GivesBackTheIndexThatPackWroteFedInPiecesOfAnySize) {
  TempDir dir;
  vision::WriteSyntheticImageFolder(dir / "images", 12, /*classes=*/3, /*seed=*/4, /*broken=*/0);
  PackOptions options;
  options.shard_bytes = 100 << 10;
  ASSERT_GT(PackSource(dir / "images", dir / "pack", options).shards, 1);
  for (const std::string& index_path : ShardDataset::Find(dir / "pack")) {
    const ShardIndex written = ReadShardIndex(index_path);
    const std::string tar_path = index_path.substr(0, index_path.size() - 4) + ".tar";
    const std::vector<uint8_t> tar = ReadBytes(tar_path);
    for (size_t piece : {size_t{1}, size_t{7}, size_t{512}, size_t{4096}, tar.size()}) {
      SCOPED_TRACE(tar_path + " in pieces of " + std::to_string(piece));
      const ShardIndex built = IndexOf(tar, piece);
      EXPECT_EQ(built.tar_size, written.tar_size);
      ASSERT_EQ(built.records.size(), written.records.size());
      for (size_t r = 0; r < built.records.size(); ++r) {
        EXPECT_EQ(built.records[r].key, written.records[r].key);
        EXPECT_EQ(built.records[r].offset, written.records[r].offset);
        EXPECT_EQ(built.records[r].size, written.records[r].size);
        EXPECT_EQ(built.records[r].label, written.records[r].label);
        EXPECT_EQ(built.records[r].crc32c, written.records[r].crc32c);
        EXPECT_EQ(built.records[r].format, written.records[r].format);
      }
    }
    EXPECT_EQ(IndexTarFile(tar_path).records.size(), written.records.size());
  }
}

TEST(TarIndexer, TakesWebDatasetSamplesAndSkipsTheirOtherFiles) {
  const std::vector<uint8_t> tar = TarOf({{"a.cls", "2\n"},
                                          {"a.jpg", "jpeg bytes"},
                                          {"a.json", "{\"w\": 3}"},
                                          {"b.png", "png"},
                                          {"b.cls", "0"},
                                          {"c.txt", "a caption"},
                                          {"c.webp", std::string(600, 'w')},
                                          {"c.cls", " 11 "}});
  const ShardIndex index = IndexOf(tar);
  ASSERT_EQ(index.records.size(), 3u);
  EXPECT_EQ(index.tar_size, tar.size());
  EXPECT_EQ(index.records[0].key, "a");
  EXPECT_EQ(index.records[0].label, 2);
  EXPECT_EQ(index.records[0].format, vision::ImageFormat::kJpeg);
  EXPECT_EQ(index.records[0].offset, 3 * 512u);  // after a.cls and its block, and a.jpg's header
  EXPECT_EQ(index.records[0].size, 10u);
  EXPECT_EQ(index.records[0].crc32c, Crc32c("jpeg bytes", 10));
  EXPECT_EQ(index.records[1].format, vision::ImageFormat::kPng);
  EXPECT_EQ(index.records[1].label, 0);
  EXPECT_EQ(index.records[2].format, vision::ImageFormat::kWebp);
  EXPECT_EQ(index.records[2].size, 600u);
  EXPECT_EQ(index.records[2].label, 11);
  // Without its end blocks it is taken up to its last member.
  EXPECT_EQ(IndexOf(TarOf({{"a.jpg", "x"}, {"a.cls", "1"}}, /*end=*/false)).records.size(), 1u);
}

TEST(TarIndexer, RefusesWhatIsNotASampleNamingTheMember) {
  EXPECT_THAT(ErrorOf(TarOf({{"train", "", '5'}, {"a.jpg", "x"}, {"a.cls", "1"}})),
              HasSubstr("t.tar: member train is not a sample's file (tar type '5')"));
  EXPECT_THAT(ErrorOf(TarOf({{"train/a.jpg", "x"}, {"train/a.cls", "1"}})),
              HasSubstr("t.tar: member train/a.jpg is not a sample's file: expected KEY.EXT"));
  EXPECT_THAT(ErrorOf(TarOf({{"README", "x"}})),
              HasSubstr("member README is not a sample's file"));
  EXPECT_THAT(ErrorOf(TarOf({{"a.jpg", "x"}})), HasSubstr("t.tar: sample a has no label (KEY.cls)"));
  EXPECT_THAT(ErrorOf(TarOf({{"a.cls", "1"}, {"b.jpg", "x"}, {"b.cls", "1"}})),
              HasSubstr("sample a has no image"));
  EXPECT_THAT(ErrorOf(TarOf({{"a.jpg", "x"}, {"a.png", "y"}, {"a.cls", "1"}})),
              HasSubstr("member a.png: sample a has a second image"));
  EXPECT_THAT(ErrorOf(TarOf({{"a.jpg", "x"}, {"a.cls", "dog"}})),
              HasSubstr("member a.cls: label 'dog' is not a class number"));
  EXPECT_THAT(ErrorOf(TarOf({{"a.jpg", "x"}, {"a.cls", "-1"}})), HasSubstr("label '-1'"));
  EXPECT_THAT(ErrorOf(TarOf({{"a.jpeg", "x"}, {"a.cls", "1"}})), HasSubstr("sample a has no image"));
  EXPECT_THAT(
      ErrorOf(TarOf({{"a.jpg", "x"}, {"a.cls", "1"}, {"b.jpg", "x"}, {"b.cls", "1"}, {"a.txt", ""}})),
      HasSubstr("member a.txt: key a comes back after another sample"));
  EXPECT_THAT(ErrorOf(TarOf({})), HasSubstr("t.tar: holds no sample"));
  // Cut inside a member, and a header that is not one.
  std::vector<uint8_t> tar = TarOf({{"a.jpg", std::string(1000, 'x')}, {"a.cls", "1"}});
  tar.resize(700);
  EXPECT_THAT(ErrorOf(tar), HasSubstr("t.tar: ends inside member a.jpg (truncated at byte 700)"));
  tar = TarOf({{"a.jpg", "x"}, {"a.cls", "1"}});
  tar[1024 + 3] ^= 0x20;  // a.cls's header
  EXPECT_THAT(ErrorOf(tar), HasSubstr("t.tar: at byte 1024: tar header checksum mismatch"));
}

TEST(TarIndexer, AMissingFileIsAnOsError) {
  TempDir dir;
  EXPECT_THROW(IndexTarFile(dir / "none.tar"), OsError);
  WriteBytes(dir / "x.tar", TarOf({{"k.jpg", "x"}, {"k.cls", "3"}}));
  EXPECT_EQ(IndexTarFile(dir / "x.tar").records.at(0).label, 3);
}

}  // namespace
}  // namespace feedline::storage
