// HttpClient: GET and HEAD requests over HTTP(S) with libcurl, for reading a
// pack that a web server or object store serves, and requests with a body
// (PUT, POST, DELETE) for writing one (s3_upload.h). Each request is bounded
// (RemoteOptions: attempts, a time budget, connect and stall timeouts) and
// retried as remote_options.h says; a failure throws an Error whose message
// names the URL, the byte range, the HTTP status or libcurl's error, and the
// attempts.
//
// Connections are reused: the client keeps a pool of libcurl easy handles,
// one per thread reading at the same time (a worker takes one for a request
// and gives it back), and each handle keeps its connection alive between
// requests (HTTP/1.1 keep-alive), so a worker's ranged GETs go over one
// connection. After fork, a child never uses a handle it inherited (its
// socket, and any TLS state, belong to the parent's connection): it opens its
// own, and leaves the inherited ones untouched. A pthread_atfork handler holds
// every client's lock across fork so that a child never inherits it held.
//
// s3://BUCKET/KEY URLs are requested from the endpoint that the AWS
// configuration names (S3Config, read when the first one is requested),
// signed with SigV4 (libcurl's CURLOPT_AWS_SIGV4); an S3 error's code (e.g.
// SignatureDoesNotMatch) is part of the message.
//
// HTTPS verifies the server's certificate and name against
// RemoteOptions::ca_file, else the file $SSL_CERT_FILE names, else the
// system's store; a failed verification is not retried.
//
// Thread safety: every method may be called from many threads at once.
#ifndef FEEDLINE_SRC_STORAGE_HTTP_CLIENT_H_
#define FEEDLINE_SRC_STORAGE_HTTP_CLIENT_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "feedline/storage/remote_options.h"
#include "src/core/mutex.h"
#include "src/storage/attempt_outcome.h"
#include "src/storage/host_outages.h"
#include "src/storage/s3_config.h"

namespace feedline::storage {

class HttpClient {
 public:
  // Throws Error if `options` are out of range (CheckRemoteOptions), or
  // naming the CA file (ca_file, SSL_CERT_FILE) if it cannot be read.
  explicit HttpClient(RemoteOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Reads bytes [offset, offset + size) of `url` into `dst` with one ranged
  // GET (retried as a whole). The server must answer 206 with exactly `size`
  // bytes (or 200 with the whole file when it is that range). REQUIRES: size > 0.
  // A retry asks for the bytes not yet received only.
  void ReadRange(const std::string& url, uint64_t offset, size_t size, uint8_t* dst) const;

  // As ReadRange, handing each piece to `sink` as it arrives, in order,
  // each byte once (a retry continues where the last attempt stopped). An
  // exception from `sink` aborts the request and propagates.
  void StreamRange(const std::string& url, uint64_t offset, uint64_t size,
                   const std::function<void(const uint8_t*, size_t)>& sink) const;

  // The whole body of `url` (at most `max_bytes`, else an Error), or nullopt
  // if the server answers 404 or 410; `not_found`, when given, then receives
  // that status, so that a message says which.
  std::optional<std::vector<uint8_t>> ReadAll(const std::string& url, uint64_t max_bytes,
                                              long* not_found = nullptr) const;

  // The length of `url` from a HEAD request, or nullopt if the server
  // answers 404 or 410 (`not_found` as ReadAll's). Throws Error if the
  // answer has no length.
  std::optional<uint64_t> Size(const std::string& url, long* not_found = nullptr) const;

  // "HTTP 410 (gone)" or "HTTP 404 (not found)", for such a status, with
  // `code` (an S3 error code) after the number when given.
  static std::string NotFoundText(long status, const std::string& code = "");

  // The answer to a request that Send made.
  struct Answer {
    long status = 0;
    std::string body;  // at most 1 MiB
    std::string etag;  // the ETag header, quotes kept; "" if none
  };
  // Sends `method` ("PUT", "POST" or "DELETE") to `url` with `body` (none
  // if empty; s3:// bodies are signed as UNSIGNED-PAYLOAD, so that a part
  // is not read twice), retried as a GET is, the whole body again each
  // time. Returns the 2xx answer; anything else, 404 included, throws an
  // Error naming the method, the URL, the status and the attempts.
  Answer Send(const std::string& method, const std::string& url,
              std::span<const uint8_t> body = {}) const;

  const RemoteOptions& options() const { return options_; }
  // The easy handles this process has made: the most threads that have
  // requested at the same time (each one keeps its connection).
  size_t handles_made() const;

 private:
  struct Request;
  struct AttemptStrings;
  void* AcquireHandle() const;
  void ReleaseHandle(void* handle) const;
  // One attempt of `request`: SetUp, libcurl's transfer, Judge.
  AttemptOutcome Attempt(void* handle, Request& request) const;
  // Resets `request`'s state of the last attempt and sets `handle`'s
  // options for the next (the URL, signing, timeouts, the body, the range
  // still missing); returns why it cannot start ("" when it can).
  std::string SetUp(void* handle, Request& request, AttemptStrings& strings) const;
  // Signs an s3:// request (SigV4, the payload header, a session token);
  // returns why it cannot be ("" when it is).
  std::string SignForS3(void* handle, const Request& request, AttemptStrings& strings) const;
  // How the attempt that libcurl ended with `code` went: the request's own
  // checks (a range ignored, a body too long or short, a HEAD without a
  // length), then AnswerOutcome or TransportFailure (attempt_outcome.h).
  static AttemptOutcome Judge(void* handle, int code, Request& request,
                              const AttemptStrings& strings);
  // Runs `request` with retries; returns the final HTTP status.
  long Run(Request& request) const;
  // The AWS configuration, read on first use.
  S3Config S3() const;

  // libcurl's write callback: a 2xx body into the request.
  static size_t WriteBody(char* data, size_t one, size_t count, void* request);
  // libcurl's read, seek and header callbacks of a request with a body.
  static size_t ReadBody(char* data, size_t one, size_t count, void* request);
  static int SeekBody(void* request, int64_t offset, int origin);
  static size_t ReadHeader(char* data, size_t one, size_t count, void* request);
  // They lock and unlock every client's mutex across fork.
  static void PrepareFork() NO_THREAD_SAFETY_ANALYSIS;
  static void ParentAfterFork() NO_THREAD_SAFETY_ANALYSIS;
  static void ChildAfterFork() NO_THREAD_SAFETY_ANALYSIS;

  const RemoteOptions options_;
  const std::string ca_file_;  // the CA certificates HTTPS trusts; "": libcurl's store
  mutable internal::Mutex mu_;
  mutable std::vector<void*> idle_ GUARDED_BY(mu_);
  mutable size_t made_ GUARDED_BY(mu_) = 0;
  // Set in a forked child by the fork handler: the idle handles are the
  // parent's.
  mutable bool forked_ GUARDED_BY(mu_) = false;
  mutable std::optional<S3Config> s3_ GUARDED_BY(mu_);
  // Since when each server has failed: its requests share one budget.
  mutable HostOutages outages_ GUARDED_BY(mu_);
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_HTTP_CLIENT_H_
