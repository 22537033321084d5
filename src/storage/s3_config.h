// S3Config: where and as whom s3://BUCKET/KEY URLs are read, from the
// standard AWS configuration, the way the AWS CLI reads it:
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN),
//                else the profile AWS_PROFILE ("default") of
//                AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials)
//   region       AWS_REGION, AWS_DEFAULT_REGION, else the profile's `region`
//                in AWS_CONFIG_FILE (~/.aws/config), else us-east-1
//   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else the profile's
//                `endpoint_url`; none: AWS itself
// A custom endpoint (SeaweedFS, MinIO, Ceph) is addressed path-style
// (ENDPOINT/BUCKET/KEY); AWS virtual-hosted
// (https://BUCKET.s3.REGION.amazonaws.com/KEY). Requests are signed with
// SigV4 by libcurl (HttpClient).
//
// Thread safety: a value; LoadS3Config is reentrant (it reads the
// environment and the files).
#ifndef FEEDLINE_SRC_STORAGE_S3_CONFIG_H_
#define FEEDLINE_SRC_STORAGE_S3_CONFIG_H_

#include <cstddef>
#include <string>

namespace feedline::storage {

struct S3Config {
  std::string endpoint;  // without a trailing '/'; empty: AWS
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  std::string profile = "default";
};

// The configuration of this process's environment and files. Never throws:
// missing credentials are reported when a request needs them.
S3Config LoadS3Config();

// The HTTP(S) URL of `s3_url` (s3://BUCKET/KEY). Throws Error naming it if
// it has no bucket.
std::string S3HttpUrl(const S3Config& config, const std::string& s3_url);

// `text` percent-encoded but for RFC 3986's unreserved characters, as a
// SigV4 canonical query string wants it (a request's query parameters are
// also given in their canonical order, by name, so that the signature holds
// whichever way libcurl orders them).
std::string QueryEncode(const std::string& text);

// The text of the first <TAG> element of an S3 answer at or after `from`,
// or "" (entities left as they are).
std::string XmlElement(const std::string& body, const std::string& tag, size_t from = 0);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_S3_CONFIG_H_
