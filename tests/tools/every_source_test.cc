// End to end: `bench`, `tune` and `verify` on every kind of SOURCE (image
// folder, file list, packed shards as folder, glob and .tar, HDF5 file), with
// the same report and the same JSON.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "feedline/storage/shard_index.h"
#include "tests/storage/nginx_server.h"
#include "tests/tools/hdf5_test_file.h"
#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;
using testing::MakeImageFolder;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;

// 24 images packed into 2 or more shards under dir/shards.
void MakeShards(const ScratchDir& dir) {
  MakeImageFolder(dir / "imgs", 24);
  const RunResult packed =
      RunFeedline({"pack", dir / "imgs", dir / "shards", "--shard-size", "300K", "--quiet"});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
}

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.insert(key);
  return keys;
}

RunResult Bench(const std::vector<std::string>& source_and_options) {
  std::vector<std::string> args = {"bench"};
  args.insert(args.end(), source_and_options.begin(), source_and_options.end());
  for (const char* option : {"--batch", "4", "--workers", "2", "--size", "32", "--quiet", "--json"})
    args.push_back(option);
  return RunFeedline(args);
}

TEST(EverySource, BenchOnShardsReportsImagesPerSecond) {
  ScratchDir dir;
  MakeShards(dir);
  const RunResult r = Bench({dir / "shards"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["source_kind"], "shards");
  EXPECT_EQ(j["images"], 24);
  EXPECT_EQ(j["errors_total"], 0);
  EXPECT_GT(j["images_per_s"].get<double>(), 0);
  EXPECT_GT(j["stages"]["read"].get<double>(), 0);
  EXPECT_GT(j["stages"]["decode"].get<double>(), 0);
  EXPECT_THAT(r.out, HasSubstr("feedline bench: " + (dir / "shards") + " (train), 24 images"));
  EXPECT_THAT(r.out, HasSubstr("images/s"));

  // A glob of shards and one shard: the records of those shards only.
  const storage::ShardIndex first = storage::ReadShardIndex(dir / "shards/shard-000000.idx");
  ASSERT_LT(first.records.size(), 24u) << "the pack made one shard";
  const RunResult one = Bench({dir / "shards/shard-000000.tar"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.Json()["images"], static_cast<int64_t>(first.records.size()));
  const RunResult glob = Bench({dir / "shards/shard-*.tar"});
  ASSERT_EQ(glob.exit_code, 0) << glob.err;
  EXPECT_EQ(glob.Json()["images"], 24);
}

TEST(EverySource, BenchOnHDF5ReportsImagesPerSecond) {
  ScratchDir dir;
  testing::WriteHDF5Images(dir / "data.h5", 20);
  const RunResult r = Bench({dir / "data.h5:images", "--fields", "labels,features"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["source_kind"], "hdf5");
  EXPECT_EQ(j["source"], dir / "data.h5:images");
  EXPECT_EQ(j["images"], 20);
  EXPECT_EQ(j["errors_total"], 0);
  EXPECT_GT(j["images_per_s"].get<double>(), 0);
  EXPECT_GT(j["stages"]["read"].get<double>(), 0);
  EXPECT_GT(j["stages"]["decode"].get<double>(), 0);
  EXPECT_GT(j["stages"]["transform"].get<double>(), 0);
  EXPECT_THAT(r.out, HasSubstr("feedline bench: " + (dir / "data.h5:images") + " (train), 20"));
}

// read times the bytes only, decode the decoder; train and val the recipes.
TEST(EverySource, EveryPipelineOnHDF5AndShards) {
  ScratchDir dir;
  testing::WriteHDF5Images(dir / "data.h5", 12);
  MakeShards(dir);
  for (const std::string pipeline : {"train", "val", "decode", "read"}) {
    const RunResult r =
        Bench({dir / "data.h5", "--fields", "images,labels", "--pipeline", pipeline});
    ASSERT_EQ(r.exit_code, 0) << pipeline << ": " << r.err;
    const nlohmann::json j = r.Json();
    EXPECT_EQ(j["pipeline"], pipeline);
    EXPECT_EQ(j["images"], 12) << pipeline;
    EXPECT_EQ(j["errors_total"], 0) << pipeline;
    EXPECT_GT(j["stages"]["read"].get<double>(), 0) << pipeline;
    if (pipeline == "read") {
      EXPECT_EQ(j["stages"]["decode"].get<double>(), 0);
    } else {
      EXPECT_GT(j["stages"]["decode"].get<double>(), 0) << pipeline;
    }
    if (pipeline == "read") continue;
    const RunResult shards = Bench({dir / "shards", "--pipeline", pipeline});
    ASSERT_EQ(shards.exit_code, 0) << pipeline << ": " << shards.err;
    EXPECT_EQ(shards.Json()["images"], 24) << pipeline;
    EXPECT_GT(shards.Json()["stages"]["decode"].get<double>(), 0) << pipeline;
  }
  // A shard's record is read and decoded in one step: read alone is refused.
  const RunResult read = Bench({dir / "shards", "--pipeline", "read"});
  EXPECT_EQ(read.exit_code, 2);
  EXPECT_THAT(read.err, HasSubstr("--pipeline read: packed shards are read and decoded in one "
                                  "step; --pipeline decode times both"));
}

// Every source gives the same report: the same JSON keys, the same lines.
TEST(EverySource, SameReportAndJsonForEveryKind) {
  ScratchDir dir;
  MakeShards(dir);  // also writes dir/imgs
  testing::WriteHDF5Images(dir / "data.h5", 24);
  {
    std::ofstream list(dir / "list.txt");
    for (const std::string& file : testing::FilesUnder(dir / "imgs")) {
      list << "imgs/" << file << " 0\n";
    }
  }
  const std::vector<std::pair<std::string, std::vector<std::string>>> sources = {
      {"folder", {dir / "imgs"}},
      {"file_list", {dir / "list.txt"}},
      {"shards", {dir / "shards"}},
      {"hdf5", {dir / "data.h5:images", "--fields", "labels"}}};
  std::set<std::string> folder_keys;
  for (const auto& [kind, args] : sources) {
    const RunResult r = Bench(args);
    ASSERT_EQ(r.exit_code, 0) << kind << ": " << r.err;
    const nlohmann::json j = r.Json();
    EXPECT_EQ(j["source_kind"], kind);
    EXPECT_GT(j["images_per_s"].get<double>(), 0) << kind;
    if (folder_keys.empty()) folder_keys = Keys(j);
    EXPECT_EQ(Keys(j), folder_keys) << kind;
    for (const char* line :
         {"\n  throughput ", "\n  consumer wait ", "\n  stages ", "\ndiagnosis: "}) {
      EXPECT_THAT(r.out, HasSubstr(line)) << kind;
    }
  }
}

TEST(EverySource, TuneSweepsShardsAndHDF5) {
  ScratchDir dir;
  MakeShards(dir);
  testing::WriteHDF5Images(dir / "data.h5", 16);
  const std::vector<std::pair<std::string, std::vector<std::string>>> sources = {
      {"shards", {dir / "shards"}}, {"hdf5", {dir / "data.h5:images", "--fields", "labels"}}};
  for (const auto& [kind, source] : sources) {
    std::vector<std::string> args = {"tune"};
    args.insert(args.end(), source.begin(), source.end());
    for (const char* option : {"--batch", "4", "--size", "32", "--max-workers", "2", "--prefetch",
                               "1,2", "--max-batches", "3", "--no-online", "--quiet", "--json"})
      args.push_back(option);
    const RunResult r = RunFeedline(args, 120);
    ASSERT_EQ(r.exit_code, 0) << kind << ": " << r.err;
    const nlohmann::json j = r.Json();
    EXPECT_EQ(j["source_kind"], kind);
    ASSERT_EQ(j["results"].size(), 4u) << kind;  // workers 1, 2 x prefetch 1, 2
    for (const auto& row : j["results"])
      EXPECT_GT(row["images_per_s"].get<double>(), 0) << kind << " " << row.dump();
    EXPECT_FALSE(j["recommended"].is_null()) << kind;
    EXPECT_THAT(r.out, HasSubstr("<- recommended")) << kind;
  }
}

// verify reads every row of every field and decodes the images; a broken
// row is listed as FILE:DATASET[ROW], and bench names it too.
TEST(EverySource, VerifyAndBenchNameABrokenHDF5Row) {
  ScratchDir dir;
  testing::WriteHDF5Images(dir / "data.h5", 10, /*broken=*/{3});
  const RunResult clean = RunFeedline({"verify", dir / "data.h5:labels", "--fields", "features"});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_EQ(clean.out, "feedline verify: 10 files, 10 ok, 0 broken\n");

  const RunResult r = RunFeedline({"verify", dir / "data.h5:images", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["source_kind"], "hdf5");
  EXPECT_EQ(j["files"], 10);
  EXPECT_EQ(j["ok"], 9);
  ASSERT_EQ(j["broken"].size(), 1u);
  EXPECT_EQ(j["broken"][0]["path"], (dir / "data.h5") + ":images[3]");
  EXPECT_EQ(j["broken"][0]["reason"], "format");
  EXPECT_THAT(r.out, HasSubstr("broken: " + (dir / "data.h5") + ":images[3]: format: "));

  const RunResult bench = Bench({dir / "data.h5:images"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const nlohmann::json b = bench.Json();
  EXPECT_EQ(b["images"], 9);
  EXPECT_EQ(b["skipped"], 1);
  ASSERT_EQ(b["broken_files"].size(), 1u);
  EXPECT_EQ(b["broken_files"][0]["path"], (dir / "data.h5") + ":images[3]");
}

TEST(EverySource, VerifyOnShardsByGlob) {
  ScratchDir dir;
  MakeShards(dir);
  const RunResult r = RunFeedline({"verify", dir / "shards/shard-*.idx", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.Json()["files"], 24);
  EXPECT_EQ(r.Json()["source_kind"], "shards");
}

// A pack that nginx serves on loopback: bench and verify read it by URL,
// with the local pack's counts; a damaged record and a missing pack are
// named by URL.
TEST(EverySource, BenchAndVerifyOnAServedPack) {
  ScratchDir dir;
  MakeShards(dir);
  storage::testing::NginxServer server(dir.path().string());
  server.Start();
  const RunResult bench = Bench({server.Url("shards/")});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_EQ(bench.Json()["source_kind"], "shards");
  EXPECT_EQ(bench.Json()["images"], 24);
  EXPECT_EQ(bench.Json()["errors_total"], 0);
  const RunResult verified = RunFeedline({"verify", server.Url("shards/"), "--json"});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_EQ(verified.Json()["files"], 24);
  EXPECT_EQ(verified.Json()["broken"].size(), 0u);

  const storage::ShardIndex index = storage::ReadShardIndex(dir / "shards/shard-000001.idx");
  {
    std::fstream tar(dir / "shards/shard-000001.tar", std::ios::in | std::ios::out |
                                                          std::ios::binary);
    tar.seekp(static_cast<std::streamoff>(index.records[0].offset + 100));
    tar.put('\x5a');
  }
  const RunResult damaged = RunFeedline({"verify", server.Url("shards")});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_THAT(damaged.out, HasSubstr("broken: " + server.Url("shards/shard-000001.tar") + ":" +
                                     index.records[0].key + ": checksum: CRC-32C mismatch"));

  const RunResult missing = Bench({server.Url("absent/")});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr(server.Url("absent/pack.txt") + ": HTTP 404 (not found)"));
  EXPECT_THAT(RunFeedline({"verify", server.Url("shards/"), "--fields", "x"}).err,
              HasSubstr("is a URL of packed shards"));
}

// --cache-dir and --cache-limit: bench, tune and verify read a served pack
// through the node's shard cache (each tar fetched once, whole, and kept);
// given for a local SOURCE, or a limit without a folder, they are usage
// errors naming the option.
TEST(EverySource, BenchTuneAndVerifyKeepAServedPackInTheCache) {
  ScratchDir dir;
  MakeShards(dir);
  storage::testing::NginxServer server(dir.path().string());
  server.Start();
  const std::string cache = dir / "cache";
  const RunResult bench = Bench({server.Url("shards/"), "--cache-dir", cache, "--cache-limit",
                                 "1GiB"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_EQ(bench.Json()["images"], 24);
  const RunResult verified =
      RunFeedline({"verify", server.Url("shards/"), "--cache-dir", cache, "--json"});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_EQ(verified.Json()["files"], 24);
  const RunResult tuned = RunFeedline({"tune", server.Url("shards/"), "--cache-dir", cache,
                                       "--batch", "4", "--size", "32", "--max-workers", "1",
                                       "--prefetch", "1", "--max-batches", "3", "--no-online",
                                       "--quiet", "--json"},
                                      120);
  EXPECT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  // Every tar whole in the cache, each fetched once over the three runs.
  size_t tars = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cache)) {
    tars += entry.path().extension() == ".tar";
  }
  size_t shards = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "shards")) {
    shards += entry.path().extension() == ".tar";
  }
  EXPECT_EQ(tars, shards);
  size_t tar_gets = 0;
  for (const std::string& line : server.AccessLog()) {
    tar_gets += line.find(" GET ") != std::string::npos && line.find(".tar ") != std::string::npos;
  }
  EXPECT_EQ(tar_gets, shards);

  const RunResult local = RunFeedline({"verify", dir / "shards", "--cache-dir", cache});
  EXPECT_EQ(local.exit_code, 2);
  EXPECT_THAT(local.err, HasSubstr("--cache-dir keeps the shards of a pack read over the "
                                   "network, but SOURCE '" + dir / "shards" + "' is local"));
  const RunResult no_dir = Bench({server.Url("shards/"), "--cache-limit", "1G"});
  EXPECT_EQ(no_dir.exit_code, 2);
  EXPECT_THAT(no_dir.err, HasSubstr("--cache-limit bounds the cache that --cache-dir names"));
  const RunResult bad_limit = Bench({server.Url("shards/"), "--cache-dir", cache,
                                     "--cache-limit", "lots"});
  EXPECT_EQ(bad_limit.exit_code, 2);
  EXPECT_THAT(bad_limit.err, HasSubstr("--cache-limit"));
}

// What SOURCE and --fields name wrongly is a usage error (exit code 2) that
// names the file and the dataset, in each of the three commands.
TEST(EverySource, BadHDF5SourcesAreUsageErrors) {
  ScratchDir dir;
  testing::WriteHDF5Images(dir / "data.h5", 6);
  testing::MakeImageFolder(dir / "imgs", 4);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{dir / "data.h5:nothing"}, (dir / "data.h5") + ": cannot open dataset 'nothing'"},
      {{dir / "data.h5:images", "--fields", "short"},
       (dir / "data.h5") + ": dataset 'short': 5 rows, but 'images' has 6"},
      {{dir / "data.h5"}, "name the datasets to read"},
      {{dir / "missing.h5:images"}, "the HDF5 file '" + (dir / "missing.h5") + "' does not exist"},
      {{dir / "imgs", "--fields", "labels"}, "--fields names datasets of an HDF5 file"}};
  for (const std::string command : {"bench", "tune", "verify"}) {
    for (const Case& c : cases) {
      std::vector<std::string> args = {command};
      args.insert(args.end(), c.args.begin(), c.args.end());
      args.push_back("--quiet");
      const RunResult r = RunFeedline(args);
      EXPECT_EQ(r.exit_code, 2) << command << " " << c.args[0] << ": " << r.err;
      EXPECT_THAT(r.err, HasSubstr("feedline " + command + ": error: ")) << command;
      EXPECT_THAT(r.err, HasSubstr(c.message)) << command;
      EXPECT_EQ(RunResult::Lines(r.err).size(), 1u) << r.err;
    }
  }
}

}  // namespace
}  // namespace feedline::cli
