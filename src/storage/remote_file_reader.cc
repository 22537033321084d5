#include "feedline/storage/remote_file_reader.h"

#include <fnmatch.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/storage/http_client.h"
#include "src/storage/http_source.h"
#include "src/storage/s3_listing.h"

namespace feedline::storage {

RemoteFileReader::RemoteFileReader(RemoteOptions options)
    : client_(std::make_unique<HttpClient>(std::move(options))) {}

RemoteFileReader::~RemoteFileReader() = default;

bool RemoteFileReader::IsUrl(std::string_view path) {
  return path.starts_with("http://") || path.starts_with("https://") ||
         path.starts_with("s3://");
}

uint64_t RemoteFileReader::Size(const std::string& url) const {
  std::string missing;
  const std::optional<uint64_t> size = HttpSource(client_.get(), url).Size(&missing);
  if (!size) throw Error(url + ": no such file (" + missing + ")");
  return *size;
}

void RemoteFileReader::ReadRange(const std::string& url, uint64_t offset, size_t size,
                                 uint8_t* dst) const {
  HttpSource(client_.get(), url).ReadRange(offset, size, dst);
}

bool RemoteFileReader::HasGlob(std::string_view path) {
  return path.find_first_of("*?[") != std::string_view::npos;
}

std::vector<std::string> RemoteFileReader::Glob(const std::string& pattern) const {
  if (!pattern.starts_with("s3://")) {
    throw Error(pattern + ": a glob of served files needs a listing, which a web server does "
                "not give (list the files, or serve them from S3)");
  }
  const size_t slash = pattern.rfind('/');
  const std::string folder = pattern.substr(0, slash + 1);
  const std::string name = pattern.substr(slash + 1);
  if (HasGlob(folder)) {
    throw Error(pattern + ": glob characters in the file name only (not in the bucket or "
                "folders)");
  }
  std::vector<std::string> matched;
  for (const S3Object& object : ListS3Folder(*client_, folder)) {
    const std::string listed = object.url.substr(folder.size());
    if (::fnmatch(name.c_str(), listed.c_str(), FNM_PERIOD) == 0) matched.push_back(object.url);
  }
  std::sort(matched.begin(), matched.end());
  return matched;
}

size_t RemoteFileReader::connections() const { return client_->handles_made(); }

}  // namespace feedline::storage
