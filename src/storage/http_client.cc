#include "src/storage/http_client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "feedline/error.h"
#include "src/storage/attempt_outcome.h"
#include "src/storage/host_outages.h"

namespace feedline::storage {
namespace {

using Clock = std::chrono::steady_clock;

// Every live HttpClient, for the fork handlers. Leaked on purpose: the
// handlers may run during exit.
std::mutex& RegistryMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::set<HttpClient*>& Registry() {
  static auto* registry = new std::set<HttpClient*>;
  return *registry;
}

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", s);
  return text;
}

// SigV4 hashes the body: a GET's or HEAD's is empty.
constexpr char kEmptyPayloadHash[] =
    "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// An upload's body is not hashed (S3 allows it over any transport): hashing
// would read each part once more before sending it.
constexpr char kUnsignedPayload[] = "x-amz-content-sha256: UNSIGNED-PAYLOAD";

}  // namespace

struct HttpClient::Request {
  std::string url;
  bool head = false;
  // Send: the method and the body sent (from `sent` on), and the answer's
  // ETag header.
  std::string method;
  std::span<const uint8_t> upload;
  uint64_t sent = 0;
  std::string etag;
  // A ranged GET into `dst` (exactly `size` bytes), else the whole body
  // into `body` (at most `max_bytes`).
  // The bytes of a range received so far, over all attempts: a retry asks
  // for the rest only.
  bool ranged = false;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint8_t* dst = nullptr;
  // Instead of `dst`: each piece of the range as it arrives.
  const std::function<void(const uint8_t*, size_t)>* sink = nullptr;
  std::exception_ptr sink_error;
  std::vector<uint8_t>* body = nullptr;
  uint64_t max_bytes = 0;
  // Of the attempt under way.
  void* handle = nullptr;
  uint64_t received = 0;
  uint64_t attempt_start = 0;  // where this attempt's range starts
  Clock::time_point deadline;  // of the whole request (retry_budget_s)
  bool too_long = false;
  bool ignored_range = false;
  uint64_t content_length = 0;
  std::string error_body;  // the start of an error answer's body

  // "URL" or "URL: bytes A-B", the start of every message.
  std::string What() const {
    if (!method.empty()) return method + " " + url;
    if (!ranged) return url;
    return url + ": bytes " + std::to_string(offset) + "-" + std::to_string(offset + size - 1);
  }
};

// The body of a 2xx answer goes to the request; an error page is dropped.
size_t HttpClient::WriteBody(char* data, size_t one, size_t count, void* user) {
  auto* request = static_cast<Request*>(user);
  const size_t bytes = one * count;
  long status = 0;
  curl_easy_getinfo(static_cast<CURL*>(request->handle), CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    const size_t keep = std::min(bytes, size_t{2048} - std::min<size_t>(2048, request->error_body.size()));
    request->error_body.append(data, keep);
    return bytes;
  }
  if (request->ranged) {
    // A 200 is the whole file: only right when the range starts at 0 (and,
    // checked below, is the whole file).
    if (status == 200 && request->attempt_start != 0) {
      request->ignored_range = true;
      return 0;
    }
    if (request->received + bytes > request->size) {
      request->too_long = true;
      return 0;
    }
    if (request->sink != nullptr) {
      // An exception must not unwind through libcurl: kept, and rethrown
      // once the transfer is aborted.
      try {
        (*request->sink)(reinterpret_cast<const uint8_t*>(data), bytes);
      } catch (...) {
        request->sink_error = std::current_exception();
        return 0;
      }
    } else {
      std::memcpy(request->dst + request->received, data, bytes);
    }
  } else {
    if (request->received + bytes > request->max_bytes) {
      request->too_long = true;
      return 0;
    }
    request->body->insert(request->body->end(), data, data + bytes);
  }
  request->received += bytes;
  return bytes;
}

size_t HttpClient::ReadBody(char* data, size_t one, size_t count, void* user) {
  auto* request = static_cast<Request*>(user);
  const size_t n = std::min<uint64_t>(one * count, request->upload.size() - request->sent);
  std::memcpy(data, request->upload.data() + request->sent, n);
  request->sent += n;
  return n;
}

// libcurl rewinds the body to send it again (a redirect, a reused
// connection that closed).
int HttpClient::SeekBody(void* user, int64_t offset, int origin) {
  auto* request = static_cast<Request*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > request->upload.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  request->sent = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t HttpClient::ReadHeader(char* data, size_t one, size_t count, void* user) {
  auto* request = static_cast<Request*>(user);
  const size_t bytes = one * count;
  const std::string line(data, bytes);
  if (line.size() > 5 && strncasecmp(line.c_str(), "etag:", 5) == 0) {
    size_t begin = 5;
    size_t end = line.size();
    while (begin < end && (line[begin] == ' ' || line[begin] == '\t')) ++begin;
    while (end > begin && (line[end - 1] == '\r' || line[end - 1] == '\n' || line[end - 1] == ' ')) {
      --end;
    }
    request->etag = line.substr(begin, end - begin);
  }
  return bytes;
}

void HttpClient::PrepareFork() {
  RegistryMutex().lock();
  for (HttpClient* client : Registry()) client->mu_.Lock();
}

void HttpClient::ParentAfterFork() {
  for (HttpClient* client : Registry()) client->mu_.Unlock();
  RegistryMutex().unlock();
}

void HttpClient::ChildAfterFork() {
  for (HttpClient* client : Registry()) {
    client->forked_ = true;
    client->mu_.Unlock();
  }
  RegistryMutex().unlock();
}

namespace {

// The authorities HTTPS trusts: RemoteOptions::ca_file, else $SSL_CERT_FILE,
// else "" (libcurl's own store). Throws Error naming a file that cannot be
// read: libcurl would only say so at the first request.
std::string CaFileOf(const RemoteOptions& options) {
  std::string file = options.ca_file;
  std::string named = "remote options: ca_file";
  if (file.empty()) {
    const char* env = std::getenv("SSL_CERT_FILE");
    if (env == nullptr || *env == '\0') return {};
    file = env;
    named = "SSL_CERT_FILE";
  }
  if (::access(file.c_str(), R_OK) != 0) {
    throw Error(named + " " + file + ": cannot read the CA certificates: " + std::strerror(errno));
  }
  return file;
}

}  // namespace

HttpClient::HttpClient(RemoteOptions options) : options_(options), ca_file_(CaFileOf(options_)) {
  CheckRemoteOptions(options_);
  static std::once_flag once;
  std::call_once(once, [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ::pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork);
  });
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().insert(this);
}

HttpClient::~HttpClient() {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().erase(this);
  }
  internal::MutexLock lock(&mu_);
  // A child leaves the parent's handles (and their sockets) alone.
  if (forked_) return;
  for (void* handle : idle_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

size_t HttpClient::handles_made() const {
  internal::MutexLock lock(&mu_);
  return made_;
}

void* HttpClient::AcquireHandle() const {
  {
    internal::MutexLock lock(&mu_);
    if (forked_) {
      // The parent's handles: leaked, not cleaned up (that would close the
      // parent's TLS sessions).
      idle_.clear();
      made_ = 0;
      forked_ = false;
    }
    if (!idle_.empty()) {
      void* handle = idle_.back();
      idle_.pop_back();
      return handle;
    }
    ++made_;
  }
  CURL* handle = curl_easy_init();
  if (handle == nullptr) throw Error("libcurl: cannot create a transfer handle (out of memory?)");
  return handle;
}

void HttpClient::ReleaseHandle(void* handle) const {
  internal::MutexLock lock(&mu_);
  idle_.push_back(handle);
}

// The strings an attempt's libcurl options point into: libcurl keeps the
// pointers, so they live as long as the attempt.
struct HttpClient::AttemptStrings {
  std::string url;
  std::string sigv4;
  std::string token;
  std::string range;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = "";

  AttemptStrings() = default;
  AttemptStrings(const AttemptStrings&) = delete;
  AttemptStrings& operator=(const AttemptStrings&) = delete;
  ~AttemptStrings() { curl_slist_free_all(headers); }
};

AttemptOutcome HttpClient::Attempt(void* raw, Request& request) const {
  CURL* handle = static_cast<CURL*>(raw);
  AttemptStrings strings;
  const std::string refused = SetUp(handle, request, strings);
  if (!refused.empty()) {
    AttemptOutcome outcome;
    outcome.problem = refused;
    return outcome;
  }
  const CURLcode code = curl_easy_perform(handle);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, nullptr);
  if (request.sink_error) std::rethrow_exception(request.sink_error);
  return Judge(handle, code, request, strings);
}

std::string HttpClient::SetUp(void* raw, Request& request, AttemptStrings& strings) const {
  CURL* handle = static_cast<CURL*>(raw);
  // Reset keeps the handle's live connection (and DNS cache) for reuse.
  curl_easy_reset(handle);
  request.handle = handle;
  if (!request.ranged) request.received = 0;
  request.attempt_start = request.offset + request.received;
  request.too_long = false;
  request.ignored_range = false;
  request.sent = 0;
  request.etag.clear();
  request.error_body.clear();
  if (request.body != nullptr) request.body->clear();
  strings.url = request.url;
  if (strings.url.rfind("s3://", 0) == 0) {
    const std::string refused = SignForS3(handle, request, strings);
    if (!refused.empty()) return refused;
  }
  curl_easy_setopt(handle, CURLOPT_URL, strings.url.c_str());
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, strings.error);
  // Many threads: no signals for timeouts (libcurl's threaded resolver).
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(handle, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(handle, CURLOPT_USERAGENT, "feedline");
  if (!ca_file_.empty()) curl_easy_setopt(handle, CURLOPT_CAINFO, ca_file_.c_str());
  if (strings.headers != nullptr) curl_easy_setopt(handle, CURLOPT_HTTPHEADER, strings.headers);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::ceil(options_.connect_timeout_s * 1000)));
  // The budget's end bounds an attempt too, but for a download streamed
  // into the cache (a whole shard: it may rightly take longer, and its
  // retries continue where it stopped) and for an upload (a part of 8 MiB
  // over a slow uplink may too), which the stall timeout bounds.
  if (request.sink == nullptr && request.upload.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline -
                                                                            Clock::now());
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, std::max<long>(1, static_cast<long>(left.count())));
  }
  // A stall: under 1 byte/s for stall_timeout_s.
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(std::ceil(options_.stall_timeout_s))));
  if (!request.method.empty()) {
    const auto size = static_cast<curl_off_t>(request.upload.size());
    if (request.method == "PUT") {
      curl_easy_setopt(handle, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(handle, CURLOPT_INFILESIZE_LARGE, size);
    } else if (request.method == "POST") {
      curl_easy_setopt(handle, CURLOPT_POST, 1L);
      curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, size);
    } else {
      curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    curl_easy_setopt(handle, CURLOPT_READFUNCTION, ReadBody);
    curl_easy_setopt(handle, CURLOPT_READDATA, &request);
    curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, SeekBody);
    curl_easy_setopt(handle, CURLOPT_SEEKDATA, &request);
    curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, ReadHeader);
    curl_easy_setopt(handle, CURLOPT_HEADERDATA, &request);
  }
  if (request.head) {
    curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, WriteBody);
    curl_easy_setopt(handle, CURLOPT_WRITEDATA, &request);
  }
  if (request.ranged) {
    // A retry asks for the bytes not yet received only.
    strings.range = std::to_string(request.attempt_start) + "-" +
                    std::to_string(request.offset + request.size - 1);
    curl_easy_setopt(handle, CURLOPT_RANGE, strings.range.c_str());
  }
  return {};
}

std::string HttpClient::SignForS3(void* raw, const Request& request,
                                  AttemptStrings& strings) const {
  CURL* handle = static_cast<CURL*>(raw);
  const S3Config s3 = S3();
  if (s3.access_key.empty() || s3.secret_key.empty()) {
    return "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE "
           "(now '" + s3.profile + "') with its keys in ~/.aws/credentials";
  }
  strings.url = S3HttpUrl(s3, request.url);
  strings.sigv4 = "aws:amz:" + s3.region + ":s3";
  curl_easy_setopt(handle, CURLOPT_AWS_SIGV4, strings.sigv4.c_str());
  curl_easy_setopt(handle, CURLOPT_USERNAME, s3.access_key.c_str());
  curl_easy_setopt(handle, CURLOPT_PASSWORD, s3.secret_key.c_str());
  strings.headers = curl_slist_append(
      strings.headers, request.upload.empty() ? kEmptyPayloadHash : kUnsignedPayload);
  if (!s3.session_token.empty()) {
    strings.token = "x-amz-security-token: " + s3.session_token;
    strings.headers = curl_slist_append(strings.headers, strings.token.c_str());
  }
  return {};
}

AttemptOutcome HttpClient::Judge(void* raw, int code, Request& request,
                                 const AttemptStrings& strings) {
  CURL* handle = static_cast<CURL*>(raw);
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  AttemptOutcome outcome;
  outcome.status = status;
  if (request.ignored_range) {
    outcome.problem = "the server ignored the Range header (HTTP 200 with the whole file)";
    return outcome;
  }
  if (request.too_long) {
    outcome.problem = request.ranged ? "the server sent more than the " +
                                           std::to_string(request.size) + " bytes asked for"
                                     : "larger than the limit of " +
                                           std::to_string(request.max_bytes) + " bytes";
    return outcome;
  }
  if (code != CURLE_OK) {
    outcome = TransportFailure(code, strings.error);
    outcome.status = status;
    return outcome;
  }
  outcome = AnswerOutcome(status, request.error_body);
  if (status < 200 || status >= 300) return outcome;
  // A 2xx: whole, as asked?
  if (request.head) {
    curl_off_t length = -1;
    curl_easy_getinfo(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (length < 0) {
      outcome.done = false;
      outcome.problem = "HTTP " + std::to_string(status) + " without a Content-Length";
      return outcome;
    }
    request.content_length = static_cast<uint64_t>(length);
  } else if (request.ranged && request.received != request.size) {
    outcome.done = false;
    outcome.retry = true;
    outcome.problem = "short body: " + std::to_string(request.received) + " of " +
                      std::to_string(request.size) + " bytes (HTTP " + std::to_string(status) +
                      ")";
  }
  return outcome;
}

S3Config HttpClient::S3() const {
  {
    internal::MutexLock lock(&mu_);
    if (s3_) return *s3_;
  }
  S3Config config = LoadS3Config();
  internal::MutexLock lock(&mu_);
  if (!s3_) s3_ = config;
  return *s3_;
}

namespace {

// The longest wait between two attempts: a server back after an outage is
// in use again within about this long.
constexpr double kMaxBackoffSeconds = 2.0;

}  // namespace

long HttpClient::Run(Request& request) const {
  thread_local std::mt19937_64 jitter{std::random_device{}()};
  const std::string host = HostOutages::HostOf(request.url);
  const Clock::time_point start = Clock::now();
  const auto budget = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.retry_budget_s));
  request.deadline = start + budget;
  void* handle = AcquireHandle();
  struct GiveBack {
    const HttpClient* client;
    void* handle;
    ~GiveBack() { client->ReleaseHandle(handle); }
  } give_back{this, handle};
  double wait = options_.backoff_s;
  for (int attempt = 1;; ++attempt) {
    const AttemptOutcome outcome = Attempt(handle, request);
    const Clock::time_point now = Clock::now();
    std::optional<Clock::time_point> failing_since;
    {
      internal::MutexLock lock(&mu_);
      if (outcome.unreachable) {
        outages_.Failed(host, now);
        failing_since = outages_.FailingSince(host);
      } else {
        outages_.Answered(host);  // an answer, if only an error: the server is there
      }
    }
    if (outcome.done) return outcome.status;
    // Retried until the budget runs out, counted from the server's first
    // failure when it was failing before this request began: every request
    // to a server that is gone ends within one budget of its first failure,
    // however many there are (host_outages.h). max_attempts is the fewest
    // attempts within the request's own budget, unless its server has been
    // failing for longer than the budget.
    const Clock::time_point outage_start =
        failing_since ? std::min(start, *failing_since) : start;
    const Clock::time_point retry_until = outage_start + budget;
    const bool outage_past_budget = failing_since && now - *failing_since >= budget;
    const Clock::time_point last_start =
        now < retry_until ? retry_until
        : attempt < options_.max_attempts && !outage_past_budget ? request.deadline
                                                                  : now;
    const double pause =
        std::min(wait, kMaxBackoffSeconds) * std::uniform_real_distribution<double>(0.5, 1.5)(jitter);
    // No attempt starts after the wait if the budget would be over by then
    // (it could not say more than that the budget ran out).
    if (!outcome.retry || now + std::chrono::duration<double>(pause) >= last_start) {
      const double elapsed = std::chrono::duration<double>(now - start).count();
      std::string tries = std::to_string(attempt) + (attempt == 1 ? " attempt" : " attempts");
      if (outcome.retry) {
        tries += ", the retry budget of " + Seconds(options_.retry_budget_s) + " spent";
        if (outage_start < start) {
          tries += " (the server failing for " +
                   Seconds(std::chrono::duration<double>(now - outage_start).count()) + ")";
        }
      }
      throw Error(request.What() + ": " + outcome.problem + " (" + tries + " in " +
                  Seconds(elapsed) + ")");
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    wait *= 2;
  }
}

void HttpClient::ReadRange(const std::string& url, uint64_t offset, size_t size,
                           uint8_t* dst) const {
  Request request;
  request.url = url;
  request.ranged = true;
  request.offset = offset;
  request.size = size;
  request.dst = dst;
  const long status = Run(request);
  if (IsNotFound(status)) throw Error(request.What() + ": " + NotFoundText(status));
}

void HttpClient::StreamRange(const std::string& url, uint64_t offset, uint64_t size,
                             const std::function<void(const uint8_t*, size_t)>& sink) const {
  Request request;
  request.url = url;
  request.ranged = true;
  request.offset = offset;
  request.size = size;
  request.sink = &sink;
  const long status = Run(request);
  if (IsNotFound(status)) throw Error(request.What() + ": " + NotFoundText(status));
}

std::optional<std::vector<uint8_t>> HttpClient::ReadAll(const std::string& url,
                                                        uint64_t max_bytes,
                                                        long* not_found) const {
  std::vector<uint8_t> body;
  Request request;
  request.url = url;
  request.body = &body;
  request.max_bytes = max_bytes;
  const long status = Run(request);
  if (IsNotFound(status)) {
    if (not_found != nullptr) *not_found = status;
    return std::nullopt;
  }
  return body;
}

std::string HttpClient::NotFoundText(long status, const std::string& code) {
  return "HTTP " + std::to_string(status) + (code.empty() ? "" : " " + code) +
         (status == 410 ? " (gone)" : " (not found)");
}

HttpClient::Answer HttpClient::Send(const std::string& method, const std::string& url,
                                    std::span<const uint8_t> body) const {
  if (method != "PUT" && method != "POST" && method != "DELETE") {
    throw Error(url + ": HttpClient::Send takes PUT, POST or DELETE, not " + method);
  }
  std::vector<uint8_t> answer_body;
  Request request;
  request.url = url;
  request.method = method;
  request.upload = body;
  request.body = &answer_body;
  request.max_bytes = uint64_t{1} << 20;
  const long status = Run(request);
  if (IsNotFound(status)) {
    throw Error(request.What() + ": " + NotFoundText(status, S3ErrorCode(request.error_body)));
  }
  Answer answer;
  answer.status = status;
  answer.body.assign(answer_body.begin(), answer_body.end());
  answer.etag = request.etag;
  return answer;
}

std::optional<uint64_t> HttpClient::Size(const std::string& url, long* not_found) const {
  Request request;
  request.url = url;
  request.head = true;
  const long status = Run(request);
  if (IsNotFound(status)) {
    if (not_found != nullptr) *not_found = status;
    return std::nullopt;
  }
  return request.content_length;
}

}  // namespace feedline::storage
