#include "src/storage/s3_listing.h"

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "src/storage/s3_config.h"

namespace feedline::storage {
namespace {

// A listing's text with XML's five predefined entities replaced (a key may
// hold &, <, >, quotes).
std::string XmlText(const std::string& text) {
  static const std::pair<const char*, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (size_t at = 0; at < text.size();) {
    bool replaced = false;
    for (const auto& [entity, c] : kEntities) {
      if (text.compare(at, std::char_traits<char>::length(entity), entity) == 0) {
        out += c;
        at += std::char_traits<char>::length(entity);
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[at++];
  }
  return out;
}

}  // namespace

std::vector<S3Object> ListS3Folder(const HttpClient& client, std::string folder_url,
                                   int page_keys) {
  if (folder_url.rfind("s3://", 0) != 0) {
    throw Error(folder_url + ": not an S3 folder (expected s3://BUCKET/PREFIX/)");
  }
  if (folder_url.back() != '/') folder_url += '/';
  const std::string rest = folder_url.substr(5);
  const size_t slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash);
  const std::string prefix = rest.substr(slash + 1);
  if (bucket.empty()) throw Error(folder_url + ": no bucket (expected s3://BUCKET/PREFIX/)");
  std::vector<S3Object> objects;
  std::string token;
  // Bounded, in case a store repeats a continuation token.
  for (int page = 0; page < 1000000; ++page) {
    // The parameters in canonical (name) order, encoded, as SigV4 signs them.
    std::string query = "?";
    if (!token.empty()) query += "continuation-token=" + QueryEncode(token) + "&";
    query += "delimiter=%2F&list-type=2&max-keys=" + std::to_string(page_keys) +
             "&prefix=" + QueryEncode(prefix);
    const std::string request = "s3://" + bucket + "/" + query;
    long status = 0;
    const std::optional<std::vector<uint8_t>> answer =
        client.ReadAll(request, uint64_t{64} << 20, &status);
    if (!answer) {
      throw Error(folder_url + ": cannot list: " + HttpClient::NotFoundText(status) +
                  " (no such bucket)");
    }
    const std::string body(answer->begin(), answer->end());
    if (body.find("<ListBucketResult") == std::string::npos) {
      throw Error(folder_url + ": the answer to a listing is not one: " + body.substr(0, 200));
    }
    for (size_t at = body.find("<Contents>"); at != std::string::npos;
         at = body.find("<Contents>", at + 1)) {
      // One object's element, so that a field it lacks is not the next one's.
      const std::string contents = XmlElement(body, "Contents", at);
      const std::string key = XmlText(XmlElement(contents, "Key"));
      const std::string size = XmlElement(contents, "Size");
      // Directly in the folder, and not the folder's own marker object.
      if (key.size() <= prefix.size() || key.find('/', prefix.size()) != std::string::npos) {
        continue;
      }
      S3Object object;
      object.url = "s3://" + bucket + "/" + key;
      try {
        object.size = std::stoull(size);
      } catch (const std::exception&) {
        throw Error(folder_url + ": the listing gives " + object.url + " no size");
      }
      objects.push_back(std::move(object));
    }
    if (XmlElement(body, "IsTruncated") != "true") break;
    token = XmlText(XmlElement(body, "NextContinuationToken"));
    if (token.empty()) {
      throw Error(folder_url + ": the listing is cut short with no continuation token");
    }
  }
  return objects;
}

}  // namespace feedline::storage
