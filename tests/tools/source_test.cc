// The SOURCE parser that bench, tune and verify share (tools/source.h).
#include "tools/source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/tools/hdf5_test_file.h"
#include "tests/tools/run_feedline.h"
#include "tools/command_line.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ScratchDir;

SourceArgs Args(const std::string& source, std::vector<std::string> fields = {}) {
  SourceArgs args;
  args.source = source;
  args.fields = std::move(fields);
  return args;
}

// The message of the UsageError that parsing `args` throws ("" if none).
std::string UsageMessage(const SourceArgs& args) {
  try {
    ParseSource(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseSource, ImageFolderAndFileList) {
  ScratchDir dir;
  testing::MakeImageFolder(dir / "imgs", 4);
  std::ofstream(dir / "list.txt") << "imgs/a.jpg 0\n";
  EXPECT_EQ(ParseSource(Args(dir / "imgs")).kind, SourceKind::kFolder);
  const ParsedSource list = ParseSource(Args(dir / "list.txt"));
  EXPECT_EQ(list.kind, SourceKind::kFileList);
  EXPECT_EQ(list.path, dir / "list.txt");
}

TEST(ParseSource, ShardsAsFolderGlobTarAndIndex) {
  ScratchDir dir;
  fs::create_directory(dir / "shards");
  std::ofstream(dir / "shards/shard-000000.tar") << "x";
  std::ofstream(dir / "shards/shard-000000.idx") << "x";
  for (const std::string& source :
       {dir / "shards", dir / "shards/shard-*.tar", dir / "shards/shard-000000.tar",
        dir / "shards/shard-000000.idx"}) {
    const ParsedSource parsed = ParseSource(Args(source));
    EXPECT_EQ(parsed.kind, SourceKind::kShards) << source;
    EXPECT_EQ(parsed.path, source);
  }
}

TEST(ParseSource, HDF5FileColonDatasetAndFields) {
  ScratchDir dir;
  testing::WriteHDF5Images(dir / "data.h5", 4);
  ParsedSource parsed = ParseSource(Args(dir / "data.h5:images", {"labels", "f=/features"}));
  EXPECT_EQ(parsed.kind, SourceKind::kHDF5);
  EXPECT_EQ(parsed.path, dir / "data.h5");
  EXPECT_EQ(parsed.hdf5.file, dir / "data.h5");
  ASSERT_EQ(parsed.hdf5.fields.size(), 3u);
  EXPECT_EQ(parsed.hdf5.fields[0].dataset, "images");
  EXPECT_EQ(parsed.hdf5.fields[0].name, "");
  EXPECT_EQ(parsed.hdf5.fields[1].dataset, "labels");
  EXPECT_EQ(parsed.hdf5.fields[2].name, "f");
  EXPECT_EQ(parsed.hdf5.fields[2].dataset, "/features");

  // The file alone, its datasets from --fields.
  parsed = ParseSource(Args(dir / "data.h5", {"images", "labels"}));
  EXPECT_EQ(parsed.kind, SourceKind::kHDF5);
  ASSERT_EQ(parsed.hdf5.fields.size(), 2u);
  EXPECT_EQ(parsed.hdf5.fields[0].dataset, "images");

  // Known by its signature whatever its name.
  fs::copy_file(dir / "data.h5", dir / "data.bin");
  parsed = ParseSource(Args(dir / "data.bin:images"));
  EXPECT_EQ(parsed.kind, SourceKind::kHDF5);
  EXPECT_EQ(parsed.hdf5.file, dir / "data.bin");
}

TEST(ParseSource, WhatIsNoSourceIsAUsageErrorNamingIt) {
  ScratchDir dir;
  testing::MakeImageFolder(dir / "imgs", 4);
  testing::WriteHDF5Images(dir / "data.h5", 4);
  std::ofstream(dir / "list.txt") << "imgs/a.jpg 0\n";
  EXPECT_THAT(UsageMessage(Args("")), HasSubstr("SOURCE is required: an image folder, a file "
                                                "list, packed shards, an HDF5 file or detection data"));
  EXPECT_THAT(UsageMessage(Args(dir / "none")),
              HasSubstr("SOURCE '" + (dir / "none") + "' does not exist"));
  EXPECT_THAT(UsageMessage(Args(dir / "missing.h5:images")),
              HasSubstr("the HDF5 file '" + (dir / "missing.h5") + "' does not exist"));
  EXPECT_THAT(UsageMessage(Args(dir / "list.txt:images")),
              HasSubstr("'" + (dir / "list.txt") + "' is no HDF5 file"));
  EXPECT_THAT(UsageMessage(Args(dir / "data.h5")),
              HasSubstr("is an HDF5 file: name the datasets to read, as '" + (dir / "data.h5") +
                        ":DATASET' or with --fields DATASET,..."));
  EXPECT_THAT(UsageMessage(Args(dir / "data.h5:")), HasSubstr("names no dataset after the ':'"));
  EXPECT_THAT(UsageMessage(Args(dir / "data.h5:images", {"=labels"})),
              HasSubstr("--fields: '=labels' names no field before the '='"));
  EXPECT_THAT(UsageMessage(Args(dir / "data.h5:images", {"label="})),
              HasSubstr("--fields: 'label=' names no dataset"));
  EXPECT_THAT(UsageMessage(Args(dir / "imgs", {"labels"})),
              HasSubstr("--fields names datasets of an HDF5 file, but SOURCE '" + (dir / "imgs") +
                        "' is an image folder"));
  EXPECT_THAT(UsageMessage(Args(dir / "list.txt", {"labels"})), HasSubstr("' is a file list"));
}

TEST(SourceKindName, NamesEveryKind) {
  EXPECT_STREQ(SourceKindName(SourceKind::kFolder), "folder");
  EXPECT_STREQ(SourceKindName(SourceKind::kFileList), "file_list");
  EXPECT_STREQ(SourceKindName(SourceKind::kShards), "shards");
  EXPECT_STREQ(SourceKindName(SourceKind::kHDF5), "hdf5");
}

// --fields is one option of the three commands, split at commas.
TEST(AddSourceOptions, FieldsSplitAtCommas) {
  CLI::App app;
  SourceArgs args;
  AddSourceOptions(&app, args);
  app.parse(std::vector<std::string>{"labels,f=/features", "--fields", "data.h5:images"});
  EXPECT_EQ(args.source, "data.h5:images");
  EXPECT_EQ(args.fields, (std::vector<std::string>{"labels", "f=/features"}));
  // Before SOURCE, and repeated.
  SourceArgs again;
  CLI::App other;
  AddSourceOptions(&other, again);
  other.parse(std::vector<std::string>{"data.h5:images", "f=/features", "--fields", "labels",
                                       "--fields"});
  EXPECT_EQ(again.source, "data.h5:images");
  EXPECT_EQ(again.fields, (std::vector<std::string>{"labels", "f=/features"}));
}

}  // namespace
}  // namespace feedline::cli
