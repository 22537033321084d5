// ListS3Folder: the objects directly in an S3 "folder" (s3://BUCKET/PREFIX/),
// by ListObjectsV2 with the delimiter "/" (so objects further down, under
// PREFIX/sub/, are not listed), page after page. For a corpus named by a
// glob (ParquetDataset("s3://bucket/corpus/*.parquet")): an object store
// lists what a web server cannot.
//
// Thread safety: a function of its arguments; the HttpClient is shared.
#ifndef FEEDLINE_SRC_STORAGE_S3_LISTING_H_
#define FEEDLINE_SRC_STORAGE_S3_LISTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "src/storage/http_client.h"

namespace feedline::storage {

struct S3Object {
  std::string url;  // s3://BUCKET/KEY
  uint64_t size = 0;
};

// The objects of `folder_url` (s3://BUCKET/ or s3://BUCKET/PREFIX/, the
// trailing slash added if missing), in the store's order (by key), at most
// `page_keys` a request. Throws Error naming the URL for a bucket that does
// not exist, a refused request (the status and S3's code) or an answer that
// is not a listing.
std::vector<S3Object> ListS3Folder(const HttpClient& client, std::string folder_url,
                                   int page_keys = 1000);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_S3_LISTING_H_
