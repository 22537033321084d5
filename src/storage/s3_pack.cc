#include "src/storage/s3_pack.h"

#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <span>
#include <string>
#include <system_error>

#include "feedline/error.h"
#include "src/storage/http_client.h"
#include "src/storage/pack_hooks.h"
#include "src/storage/pack_manifest.h"
#include "src/storage/s3_upload.h"
#include "src/storage/shard_writer.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;

// The URL with exactly one '/' at the end.
std::string PrefixOf(const std::string& url) {
  std::string prefix = url;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix + "/";
}

uint64_t Fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

std::optional<uint64_t> LocalSize(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return std::nullopt;
  return static_cast<uint64_t>(size);
}

// The hooks' state for one pack: the bucket's side of the staging folder.
class S3PackTarget {
 public:
  S3PackTarget(std::string prefix, std::string staging, const PackOptions& options)
      : prefix_(std::move(prefix)), staging_(std::move(staging)), restart_(options.restart),
        client_(options.remote) {}
  // An upload under way is waited for, its failure dropped: the pack is
  // failing already (a finished pack waits for its last upload, and reports
  // its failure, before pack.txt goes up).
  ~S3PackTarget() {
    if (upload_.valid()) upload_.wait();
  }

  PackHooks Hooks() {
    PackHooks hooks;
    hooks.destination = prefix_;
    hooks.locked = [this] { TakeBucketManifest(); };
    hooks.before_index = [this](int64_t shard) { FetchIndex(shard); };
    hooks.shard_whole = [this](int64_t shard, const ShardIndex& index) {
      return ShardWhole(shard, index);
    };
    hooks.shards_removed = [this](int64_t from) { RemoveShardsFrom(from); };
    hooks.shard_finished = [this](int64_t shard) { StartUpload(shard); };
    hooks.text_written = [this](const std::string& name, const std::string& text) {
      TextWritten(name, text);
    };
    return hooks;
  }

 private:
  std::string Url(const std::string& name) const { return prefix_ + name; }
  std::string Local(const std::string& name) const { return staging_ + "/" + name; }

  // The bucket's pack.txt decides, as the folder's does locally: it is put
  // in the staging folder (a staging folder left from a pack that the
  // bucket no longer holds is cleared, so nothing of it is taken as
  // uploaded).
  void TakeBucketManifest() {
    const std::optional<std::vector<uint8_t>> manifest = client_.ReadAll(Url("pack.txt"), 1 << 20);
    // The parts of multipart uploads that a killed pack left are dropped
    // rather than kept (and billed). Best effort: a store without the
    // listing, or credentials without its permission, leave them to a
    // lifecycle rule, as before.
    try {
      AbortS3Uploads(client_, prefix_);
    } catch (const Error&) {
    }
    std::error_code ec;
    if (manifest) {
      bucket_manifest_.assign(manifest->begin(), manifest->end());
      if (restart_) return;
      // Staged shards of another pack than the bucket's are not this one's.
      std::string staged;
      if (const std::optional<uint64_t> size = LocalSize(Local("pack.txt"))) {
        FILE* file = std::fopen(Local("pack.txt").c_str(), "rb");
        if (file != nullptr) {
          staged.resize(*size);
          staged.resize(std::fread(staged.data(), 1, staged.size(), file));
          std::fclose(file);
        }
      }
      if (PackManifest(staged).head() != PackManifest(bucket_manifest_).head()) {
        RemoveStagedShards();
      }
      WriteFileAtomically(Local("pack.txt"), *manifest);
      return;
    }
    fs::remove(Local("pack.txt"), ec);
    RemoveStagedShards();
    if (!restart_ && (client_.Size(Url(ShardTarName(0))) || client_.Size(Url(ShardIndexName(0))))) {
      throw Error(prefix_ + " holds shard files but no pack.txt; pass --restart to replace them");
    }
  }

  void RemoveStagedShards() {
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(staging_, ec)) {
      if (entry.path().filename().string().rfind("shard-", 0) == 0) fs::remove(entry.path(), ec);
    }
  }

  // A kept shard's index, from the bucket when the staging folder lacks it.
  void FetchIndex(int64_t shard) {
    const std::string name = ShardIndexName(shard);
    if (LocalSize(Local(name))) return;
    const std::optional<std::vector<uint8_t>> index = client_.ReadAll(Url(name), uint64_t{1} << 30);
    if (index) WriteFileAtomically(Local(name), *index);
  }

  // Whole in the bucket: its tar of the index's size and its index of the
  // staged one's (the index goes up after the tar).
  bool ShardWhole(int64_t shard, const ShardIndex& index) {
    const std::optional<uint64_t> index_bytes = LocalSize(Local(ShardIndexName(shard)));
    const std::optional<uint64_t> tar = client_.Size(Url(ShardTarName(shard)));
    if (!tar || *tar != index.tar_size || !index_bytes) return false;
    const std::optional<uint64_t> uploaded_index = client_.Size(Url(ShardIndexName(shard)));
    return uploaded_index && *uploaded_index == *index_bytes;
  }

  // The bucket's shards from `from` on (numbered without a gap) are deleted,
  // so that none is left beyond those of the pack written now.
  void RemoveShardsFrom(int64_t from) {
    if (restart_ && !replaced_ && !bucket_manifest_.empty()) {
      // Replaced: the old pack.txt goes first, so that no reader takes the
      // prefix for a pack while its shards go.
      DeleteFromS3(client_, Url("pack.txt"));
      bucket_manifest_.clear();
    }
    replaced_ = true;
    for (int64_t shard = from;; ++shard) {
      bool any = false;
      for (const std::string& name : {ShardIndexName(shard), ShardTarName(shard)}) {
        if (client_.Size(Url(name))) {
          DeleteFromS3(client_, Url(name));
          any = true;
        }
      }
      if (!any) return;
    }
  }

  // The shard goes up while the next one is written; one upload at a time,
  // so shards arrive in order and the staging folder holds two tars at most.
  void StartUpload(int64_t shard) {
    WaitForUpload();
    upload_ = std::async(std::launch::async, [this, shard] {
      const std::string tar = ShardTarName(shard);
      const std::string index = ShardIndexName(shard);
      UploadFileToS3(client_, Local(tar), Url(tar));
      UploadFileToS3(client_, Local(index), Url(index));
      // Uploaded: the index stays (small; a rerun here checks against it).
      std::error_code ec;
      fs::remove(Local(tar), ec);
    });
  }

  void WaitForUpload() {
    if (upload_.valid()) upload_.get();
  }

  void TextWritten(const std::string& name, const std::string& text) {
    if (name == "classes.txt") {
      classes_ = text;
      return;
    }
    if (text.find("\nrecords ") == std::string::npos) {
      // The head alone (an unfinished pack) marks the prefix as this pack's
      // before any shard goes up.
      if (bucket_manifest_ != text) UploadTextToS3(client_, text, Url(name));
      bucket_manifest_ = text;
      return;
    }
    WaitForUpload();
    UploadTextToS3(client_, classes_, Url("classes.txt"));
    UploadTextToS3(client_, text, Url(name));
  }

  const std::string prefix_;
  const std::string staging_;
  const bool restart_;
  const HttpClient client_;
  std::string bucket_manifest_;  // the bucket's pack.txt as this pack last saw it
  std::string classes_;
  bool replaced_ = false;  // a restart's old pack.txt deleted
  std::future<void> upload_;
};

}  // namespace

bool IsS3Location(const std::string& location) { return location.rfind("s3://", 0) == 0; }

std::string S3StagingDir(const std::string& url, const PackOptions& options) {
  if (!options.staging_dir.empty()) return options.staging_dir;
  const std::string prefix = PrefixOf(url);
  std::string name;
  for (const char c : prefix.substr(5)) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-' || c == '_';
    name += plain ? c : '_';
  }
  char hash[20];
  std::snprintf(hash, sizeof(hash), "%08llx",
                static_cast<unsigned long long>(Fnv1a(prefix) & 0xffffffffull));
  std::error_code ec;
  fs::path temp = fs::temp_directory_path(ec);
  if (ec) temp = "/tmp";
  return (temp / ("feedline-pack-" + name + "-" + hash)).string();
}

PackResult PackImagesToS3(const std::string& source, const std::string& root,
                          const vision::ImageList& files,
                          const std::vector<std::string>& classes, const std::string& url,
                          const PackOptions& options) {
  const std::string prefix = PrefixOf(url);
  if (prefix.size() <= 6 || prefix[5] == '/') {
    throw Error(url + ": no bucket (expected s3://BUCKET/PREFIX/)");
  }
  const std::string staging = S3StagingDir(url, options);
  S3PackTarget target(prefix, staging, options);
  return PackImagesWithHooks(source, root, files, classes, staging, options, target.Hooks());
}

}  // namespace feedline::storage
