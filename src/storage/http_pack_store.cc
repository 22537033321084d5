#include "src/storage/http_pack_store.h"

#include <cstdio>
#include <sstream>

#include "feedline/error.h"
#include "src/storage/tar_indexer.h"

namespace feedline::storage {
namespace {

constexpr uint64_t kMaxTextBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The value of pack.txt's "name value" line, or "".
std::string ManifestValue(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
  }
  return {};
}

}  // namespace

HttpPackStore::HttpPackStore(std::vector<std::string> tar_urls, const RemoteOptions& options)
    : tar_urls_(std::move(tar_urls)), client_(options) {}

std::vector<std::string> HttpPackStore::FindIndexes(const std::string& url,
                                                    const RemoteOptions& options) {
  if (url.find_first_of("*[") != std::string::npos) {
    throw Error(url + ": glob patterns are not read over HTTP (it lists no folders); give the "
                      "pack's folder URL, one shard's .tar or .idx URL, or a brace list "
                      "(shard-{000000..000009}.tar)");
  }
  if (EndsWith(url, ".idx")) return {url};
  if (EndsWith(url, ".tar")) return {url.substr(0, url.size() - 4) + ".idx"};
  const std::string folder = EndsWith(url, "/") ? url : url + "/";
  const HttpClient client(options);
  long status = 0;
  const std::optional<std::vector<uint8_t>> manifest =
      client.ReadAll(folder + "pack.txt", kMaxTextBytes, &status);
  if (!manifest) {
    throw Error(folder + "pack.txt: " + HttpClient::NotFoundText(status) +
                ": a pack over HTTP is found through the pack.txt that 'feedline pack' writes; "
                "serve that folder, or give one shard's .tar or .idx URL");
  }
  const std::string text(manifest->begin(), manifest->end());
  const std::string shards = ManifestValue(text, "shards");
  if (ManifestValue(text, "records").empty() || shards.empty()) {
    throw Error(folder +
                ": the pack is unfinished (pack.txt has no record or shard count); run "
                "'feedline pack' with the same SOURCE and OUT again to finish it");
  }
  long long count = -1;
  char extra = 0;
  if (std::sscanf(shards.c_str(), "%lld%c", &count, &extra) != 1 || count < 1) {
    throw Error(folder + "pack.txt: bad shard count '" + shards + "'");
  }
  std::vector<std::string> indexes;
  for (long long i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "shard-%06lld.idx", i);
    indexes.push_back(folder + name);
  }
  return indexes;
}

std::optional<std::string> HttpPackStore::ReadText(const std::string& location) const {
  std::optional<std::vector<uint8_t>> bytes = client_.ReadAll(location, kMaxTextBytes);
  if (!bytes) return std::nullopt;
  return std::string(bytes->begin(), bytes->end());
}

std::optional<ShardIndex> HttpPackStore::ReadIndex(const std::string& location) const {
  std::optional<std::vector<uint8_t>> bytes = client_.ReadAll(location, kMaxIndexBytes);
  if (!bytes) return std::nullopt;
  return ParseShardIndex(*bytes, location);
}

ShardIndex HttpPackStore::IndexTar(size_t shard, const std::string& index_location) const {
  const std::string& url = tar_urls_.at(shard);
  long status = 0;
  const std::optional<uint64_t> size = client_.Size(url, &status);
  if (!size) {
    throw Error(index_location + ": cannot read shard index (the server has none), nor is " + url +
                " there to index: " + HttpClient::NotFoundText(status));
  }
  TarIndexer indexer(url);
  if (*size > 0) {
    client_.StreamRange(url, 0, *size,
                        [&](const uint8_t* data, size_t n) { indexer.Feed(data, n); });
  }
  return indexer.Finish();
}

void HttpPackStore::CheckTar(size_t shard, uint64_t bytes) const {
  const std::string& url = tar_urls_.at(shard);
  long status = 0;
  const std::optional<uint64_t> size = client_.Size(url, &status);
  if (!size) throw Error(url + ": cannot open shard: " + HttpClient::NotFoundText(status));
  if (*size < bytes) {
    throw Error(url + ": truncated shard: " + std::to_string(*size) +
                " bytes, its index expects " + std::to_string(bytes));
  }
}

void HttpPackStore::ReadRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst) const {
  client_.ReadRange(tar_urls_.at(shard), offset, size, dst);
}

}  // namespace feedline::storage
