// HttpPackStore: a pack that an HTTP(S) server serves (any server with
// ranged GETs: nginx, a CDN, an object store's HTTP endpoint; s3:// URLs
// signed). Nothing is written to disk: the manifest, classes and indexes
// are fetched whole when the dataset is built, and each record is one
// ranged GET of its tar header and bytes, over the connection that the
// reading thread keeps (HttpClient), each file an HttpSource.
//
// Thread safety: as PackStore.
#ifndef FEEDLINE_SRC_STORAGE_HTTP_PACK_STORE_H_
#define FEEDLINE_SRC_STORAGE_HTTP_PACK_STORE_H_

#include <string>
#include <vector>

#include "src/storage/http_client.h"
#include "src/storage/pack_store.h"

namespace feedline::storage {

class HttpPackStore : public PackStore {
 public:
  HttpPackStore(std::vector<std::string> tar_urls, const RemoteOptions& options,
                SourceWrap wrap = {});

  // The index URLs of the pack at `url`: a folder URL (its pack.txt's shard
  // count names shard-000000.idx ...), or one shard's .tar or .idx URL.
  // Throws Error naming the URL if pack.txt is missing or unfinished, or for
  // a glob (HTTP lists no folders; ShardDataset::Find expands brace lists
  // before this).
  static std::vector<std::string> FindIndexes(const std::string& url,
                                              const RemoteOptions& options);

  size_t max_open() const override { return 0; }
  size_t open_count() const override { return client_.handles_made(); }
  const HttpClient& client() const { return client_; }

 protected:
  std::unique_ptr<ByteSource> OpenFile(const std::string& location) const override;

 private:
  HttpClient client_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_HTTP_PACK_STORE_H_
