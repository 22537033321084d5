#include "src/storage/http_pack_store.h"

#include <cstdio>

#include "feedline/error.h"
#include "src/storage/http_source.h"
#include "src/storage/pack_manifest.h"

namespace feedline::storage {
namespace {

constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

HttpPackStore::HttpPackStore(std::vector<std::string> tar_urls, const RemoteOptions& options,
                             SourceWrap wrap)
    : PackStore(std::move(wrap)), client_(options) {
  std::vector<std::unique_ptr<ByteSource>> sources;
  for (std::string& url : tar_urls) {
    sources.push_back(std::make_unique<HttpSource>(&client_, std::move(url)));
  }
  SetTars(std::move(sources));
}

std::unique_ptr<ByteSource> HttpPackStore::OpenFile(const std::string& location) const {
  return std::make_unique<HttpSource>(&client_, location);
}

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
  std::string missing;
  const std::optional<std::vector<uint8_t>> manifest =
      HttpSource(&client, folder + "pack.txt").ReadAll(kMaxManifestBytes, &missing);
  if (!manifest) {
    throw Error(folder + "pack.txt: " + missing +
                ": a pack over HTTP is found through the pack.txt that 'feedline pack' writes; "
                "serve that folder, or give one shard's .tar or .idx URL");
  }
  const int64_t count =
      PackManifest(std::string(manifest->begin(), manifest->end())).ShardCount(folder);
  std::vector<std::string> indexes;
  for (int64_t i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "shard-%06lld.idx", static_cast<long long>(i));
    indexes.push_back(folder + name);
  }
  return indexes;
}

}  // namespace feedline::storage
