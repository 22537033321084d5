#include "src/storage/s3_upload.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/storage/s3_config.h"

namespace feedline::storage {
namespace {

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
      const int error = errno;
      if (fd_ >= 0) ::close(fd_);
      throw OsError(error, path, path + ": cannot read the file to upload: " + std::strerror(error));
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }
  // Bytes [offset, offset + dst.size()) into `dst`.
  void Read(uint64_t offset, std::vector<uint8_t>& dst) const {
    size_t done = 0;
    while (done < dst.size()) {
      const ssize_t n = ::pread(fd_, dst.data() + done, dst.size() - done,
                                static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int error = n < 0 ? errno : EIO;
        throw OsError(error, path_, path_ + ": cannot read the file to upload" +
                                        (n < 0 ? ": " + std::string(std::strerror(error))
                                               : std::string(": shorter than it was")));
      }
      done += static_cast<size_t>(n);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

void UploadMultipart(const HttpClient& client, const InputFile& file, const std::string& url,
                     uint64_t part_bytes) {
  const HttpClient::Answer created = client.Send("POST", url + "?uploads=");
  const std::string upload_id = XmlElement(created.body, "UploadId");
  if (upload_id.empty()) {
    throw Error("POST " + url + "?uploads: the answer names no UploadId: " +
                created.body.substr(0, 200));
  }
  const std::string upload_query = "uploadId=" + QueryEncode(upload_id);
  try {
    std::string complete = "<CompleteMultipartUpload>";
    std::vector<uint8_t> part;
    int number = 1;
    for (uint64_t offset = 0; offset < file.size(); offset += part_bytes, ++number) {
      part.resize(std::min(part_bytes, file.size() - offset));
      file.Read(offset, part);
      // The query in canonical order (partNumber before uploadId) so that
      // the signature libcurl makes matches the one the store computes.
      const HttpClient::Answer sent = client.Send(
          "PUT", url + "?partNumber=" + std::to_string(number) + "&" + upload_query, part);
      if (sent.etag.empty()) {
        throw Error("PUT " + url + ": part " + std::to_string(number) +
                    ": the answer has no ETag, which CompleteMultipartUpload needs");
      }
      complete += "<Part><PartNumber>" + std::to_string(number) + "</PartNumber><ETag>" +
                  XmlEscape(sent.etag) + "</ETag></Part>";
    }
    complete += "</CompleteMultipartUpload>";
    const HttpClient::Answer done = client.Send(
        "POST", url + "?" + upload_query,
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(complete.data()),
                                 complete.size()));
    // S3 may answer 200 and still fail the completion, in the body.
    if (done.body.find("<Error>") != std::string::npos) {
      throw Error("POST " + url + " (CompleteMultipartUpload): " +
                  XmlElement(done.body, "Code") + ": " + XmlElement(done.body, "Message"));
    }
  } catch (...) {
    // The parts sent are not left for the store to keep (and bill).
    try {
      client.Send("DELETE", url + "?" + upload_query);
    } catch (const Error&) {
      // The first failure is the one to report.
    }
    throw;
  }
}

}  // namespace

void UploadFileToS3(const HttpClient& client, const std::string& path, const std::string& url,
                    uint64_t part_bytes) {
  if (part_bytes < kS3MinPartBytes) {
    throw Error(url + ": the upload's part size must be at least " +
                std::to_string(kS3MinPartBytes) + " bytes (S3's least), got " +
                std::to_string(part_bytes));
  }
  const InputFile file(path);
  if (file.size() > part_bytes) {
    UploadMultipart(client, file, url, part_bytes);
    return;
  }
  std::vector<uint8_t> bytes(file.size());
  file.Read(0, bytes);
  client.Send("PUT", url, bytes);
}

void UploadTextToS3(const HttpClient& client, const std::string& text, const std::string& url) {
  client.Send("PUT", url,
              std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void DeleteFromS3(const HttpClient& client, const std::string& url) {
  client.Send("DELETE", url);
}

int64_t AbortS3Uploads(const HttpClient& client, const std::string& prefix_url) {
  const std::string rest = prefix_url.substr(prefix_url.rfind("s3://", 0) == 0 ? 5 : 0);
  const size_t slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash);
  const std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (prefix_url.rfind("s3://", 0) != 0 || bucket.empty()) {
    throw Error(prefix_url + ": not an S3 prefix (expected s3://BUCKET/PREFIX/)");
  }
  // The query in canonical order (prefix before uploads), as for the parts.
  const std::string list = "s3://" + bucket + "/?prefix=" + QueryEncode(prefix) + "&uploads=";
  int64_t aborted = 0;
  // A listing holds at most 1000 uploads; the next one no longer has those
  // aborted. Bounded, in case a store lists an upload it cannot abort.
  for (int round = 0; round < 100; ++round) {
    const std::optional<std::vector<uint8_t>> answer = client.ReadAll(list, uint64_t{16} << 20);
    if (!answer) throw Error("GET " + list + ": HTTP 404 (no such bucket)");
    const std::string body(answer->begin(), answer->end());
    int64_t listed = 0;
    for (size_t at = body.find("<Upload>"); at != std::string::npos;
         at = body.find("<Upload>", at + 1)) {
      const size_t end = body.find("</Upload>", at);
      const std::string upload = body.substr(at, end == std::string::npos ? end : end - at);
      const std::string key = XmlElement(upload, "Key");
      const std::string id = XmlElement(upload, "UploadId");
      // Directly in the prefix's folder only: another pack may be writing
      // to a folder below it.
      if (key.empty() || id.empty() || key.rfind(prefix, 0) != 0 ||
          key.find('/', prefix.size()) != std::string::npos) {
        continue;
      }
      client.Send("DELETE", "s3://" + bucket + "/" + key + "?uploadId=" + QueryEncode(id));
      ++listed;
    }
    aborted += listed;
    if (listed == 0 || XmlElement(body, "IsTruncated") != "true") break;
  }
  return aborted;
}

}  // namespace feedline::storage
