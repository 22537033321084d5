// ServedPackTest: the fixture of the storage tests that read a pack a real
// nginx serves (tests/storage/nginx_server.h). A suite packs one synthetic
// image folder once (MakePack, from its SetUpTestSuite, with its PackSpec);
// each test serves its own copy of that pack under ROOT/train (some damage
// theirs), from an nginx of its own, and has a scratch folder for a cache.
//
// A suite whose server needs setting up first (a network namespace, slow
// answers) overrides SetUp and calls CopyPack, configures server_, then
// starts it.
//
// Thread safety: one thread drives a test.
#ifndef FEEDLINE_TESTS_STORAGE_SERVED_PACK_H_
#define FEEDLINE_TESTS_STORAGE_SERVED_PACK_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "feedline/storage/pack.h"
#include "feedline/storage/remote_options.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/synth/synth.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage::testing {

// The suite's pack: `images` synthetic JPEGs in 4 classes made from `seed`,
// in shards of about `shard_bytes`, at least `min_shards` of them.
struct PackSpec {
  int64_t images = 24;
  uint64_t seed = 5;
  uint64_t shard_bytes = 200 << 10;
  int min_shards = 3;
};

class ServedPackTest : public ::testing::Test {
 protected:
  static void MakePack(const PackSpec& spec) {
    folder_ = new TempDir();
    vision::WriteSyntheticImageFolder(*folder_ / "images", spec.images, /*classes=*/4, spec.seed,
                                      /*broken=*/0);
    PackOptions options;
    options.shard_bytes = spec.shard_bytes;
    ASSERT_GE(PackSource(*folder_ / "images", LocalPack(), options).shards, spec.min_shards);
  }
  static void DropPack() {
    delete folder_;
    folder_ = nullptr;
  }
  static void SetUpTestSuite() { MakePack(PackSpec()); }
  static void TearDownTestSuite() { DropPack(); }

  void SetUp() override {
    CopyPack();
    server_.Start();
  }

  // The suite's pack, on the local disk.
  static std::string LocalPack() { return *folder_ / "pack"; }
  // A copy of it under the folder server_ serves, as train/.
  void CopyPack() const {
    std::filesystem::copy(LocalPack(), root_ / "train", std::filesystem::copy_options::recursive);
  }
  // A ShardDataset over the served copy (server_.Url("train/")).
  std::shared_ptr<ShardDataset> ServedDataset(const RemoteOptions& options,
                                              const vision::Pipeline& pipeline,
                                              size_t max_open_shards = 0) const {
    return std::make_shared<ShardDataset>(ShardDataset::Find(server_.Url("train/"), options),
                                          pipeline, std::vector<std::string>{}, max_open_shards,
                                          options);
  }
  // `options` with cache_dir in this test's scratch folder.
  RemoteOptions WithCache(RemoteOptions options) const {
    options.cache_dir = cache_ / "cache";
    return options;
  }

  TempDir root_;
  TempDir cache_;
  NginxServer server_{root_.path().string()};

 private:
  static inline TempDir* folder_ = nullptr;
};

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_SERVED_PACK_H_
