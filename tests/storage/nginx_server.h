// NginxServer: a real nginx (Debian's nginx-light) that a test starts on
// 127.0.0.1 (or inside a network namespace, or with TLS) to serve a folder
// over HTTP(S): a free port, its own configuration,
// logs and temporary folders in a scratch folder, run in the foreground as
// the test's child and stopped (SIGTERM, then SIGKILL) on Stop or
// destruction. The access log records each request's connection number, so
// tests can count the connections a reader opened; /status/403, /status/429
// and /status/503 always answer that status.
//
// Thread safety: one thread drives a server.
#ifndef FEEDLINE_TESTS_STORAGE_NGINX_SERVER_H_
#define FEEDLINE_TESTS_STORAGE_NGINX_SERVER_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/storage/server_ports.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage::testing {

class NginxServer {
 public:
  // Serves `root` (an absolute folder) once Start() returns.
  explicit NginxServer(std::string root) : root_(std::move(root)) {}
  ~NginxServer() { Stop(); }
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  // Starts nginx and waits until it accepts connections. A second Start
  // after Stop serves on the same port. Throws std::runtime_error with
  // nginx's error log if it does not come up within 10 s.
  void Start() {
    if (pid_ > 0) return;
    const bool pick_port = port_ == 0;
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (pick_port) port_ = ServerPorts(1)[0];
      WriteConfig();
      pid_ = ::fork();
      if (pid_ == 0) {
        if (!netns_path_.empty()) {
          const int netns = ::open(netns_path_.c_str(), O_RDONLY | O_CLOEXEC);
          if (netns < 0 || ::setns(netns, CLONE_NEWNET) != 0) _exit(126);
        }
        const std::string prefix = dir_.path().string() + "/";
        const std::string conf = dir_ / "nginx.conf";
        const std::string error_log = dir_ / "error.log";
        ::execl(Binary().c_str(), "nginx", "-p", prefix.c_str(), "-c", conf.c_str(), "-e",
                error_log.c_str(), static_cast<char*>(nullptr));
        _exit(127);
      }
      if (WaitUntilListening()) return;
      Stop();
      if (!pick_port) break;  // the port of the first start is taken
    }
    throw std::runtime_error("nginx did not start; its error log:\n" + ErrorLog());
  }

  // Stops nginx (and waits for it); the port is kept for a later Start.
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 500; ++i) {
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

  // Directives added to the server block from the next Start on (e.g.
  // "limit_rate 100k;" for a slow server).
  void set_server_config(std::string directives) { server_config_ = std::move(directives); }

  // From the next Start on: nginx runs inside the network namespace at
  // `netns_path` (/var/run/netns/NAME) and listens on `address`, one of the
  // namespace's (tests/storage/net_namespace.h).
  void set_network_namespace(std::string netns_path, std::string address) {
    netns_path_ = std::move(netns_path);
    address_ = std::move(address);
  }
  // From the next Start on: HTTPS with this certificate and key (PEM files).
  void set_tls(std::string certificate, std::string key) {
    certificate_ = std::move(certificate);
    key_ = std::move(key);
  }

  int port() const { return port_; }
  // "http://ADDRESS:PORT/" + path ("https://" with set_tls).
  std::string Url(const std::string& path = "") const {
    return std::string(certificate_.empty() ? "http" : "https") + "://" + address_ + ":" +
           std::to_string(port_) + "/" + path;
  }

  // The requests served, one "CONNECTION METHOD URI STATUS RANGE END
  // SECONDS" line each (RANGE: the Range header, "-" if none; END: when the
  // answer went out, in seconds since the epoch, to the millisecond;
  // SECONDS: how long the request took, so it began at END - SECONDS). nginx writes a request's line
  // after its answer has gone out, so a busy machine may show it late: this
  // waits (up to 10 s) for at least `at_least` lines, then until two reads
  // 100 ms apart agree.
  std::vector<std::string> AccessLog(size_t at_least = 0) const {
    std::vector<std::string> lines = ReadAccessLog();
    for (int i = 0; i < 1000 && lines.size() < at_least; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      lines = ReadAccessLog();
    }
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::vector<std::string> again = ReadAccessLog();
      if (again == lines) break;
      lines = std::move(again);
    }
    return lines;
  }

  // The requests whose line holds " " + uri + " ", waiting as AccessLog does
  // for at least `at_least` of them.
  size_t Requests(const std::string& uri, size_t at_least = 0) const {
    auto count = [&] {
      size_t n = 0;
      for (const std::string& line : ReadAccessLog()) n += line.find(" " + uri + " ") != std::string::npos;
      return n;
    };
    size_t n = count();
    for (int i = 0; i < 1000 && n < at_least; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      n = count();
    }
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const size_t again = count();
      if (again == n) break;
      n = again;
    }
    return n;
  }

  // The distinct connections the requests came over.
  size_t Connections() const {
    std::set<std::string> connections;
    for (const std::string& line : AccessLog()) connections.insert(line.substr(0, line.find(' ')));
    return connections.size();
  }
  std::string ErrorLog() const {
    std::ifstream in(dir_ / "error.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::vector<std::string> ReadAccessLog() const {
    std::ifstream in(dir_ / "access.log");
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
    return lines;
  }

  // nginx-light puts it in /usr/sbin, which is not on every PATH.
  static std::string Binary() {
    for (const char* path : {"/usr/sbin/nginx", "/usr/bin/nginx"}) {
      if (::access(path, X_OK) == 0) return path;
    }
    return "nginx";
  }


  void WriteConfig() const {
    std::filesystem::create_directories(dir_.path() / "temp");
    std::ofstream conf(dir_ / "nginx.conf", std::ios::trunc);
    // As root, nginx's worker would otherwise run as nobody, who cannot read
    // the test's 0700 scratch folders.
    if (::geteuid() == 0) conf << "user root;\n";
    conf << "daemon off;\n"
         << "worker_processes 1;\n"
         << "pid " << (dir_ / "nginx.pid") << ";\n"
         << "error_log " << (dir_ / "error.log") << " info;\n"
         << "events { worker_connections 256; }\n"
         << "http {\n"
         << "  default_type application/octet-stream;\n"
         << "  log_format counted '$connection $request_method $request_uri $status $http_range "
            "$msec $request_time';\n"
         << "  access_log " << (dir_ / "access.log") << " counted;\n"
         << "  keepalive_requests 100000;\n"
         << "  keepalive_timeout 60s;\n"
         << "  client_body_temp_path " << (dir_ / "temp/body") << ";\n"
         << "  proxy_temp_path " << (dir_ / "temp/proxy") << ";\n"
         << "  fastcgi_temp_path " << (dir_ / "temp/fastcgi") << ";\n"
         << "  uwsgi_temp_path " << (dir_ / "temp/uwsgi") << ";\n"
         << "  scgi_temp_path " << (dir_ / "temp/scgi") << ";\n"
         << "  server {\n"
         << "    listen " << address_ << ":" << port_ << (certificate_.empty() ? "" : " ssl")
         << ";\n";
    if (!certificate_.empty()) {
      conf << "    ssl_certificate " << certificate_ << ";\n"
           << "    ssl_certificate_key " << key_ << ";\n";
    }
    conf
         << "    root " << root_ << ";\n"
         << "    " << server_config_ << "\n"
         // Fixed answers for the tests of failures.
         << "    location = /status/403 { return 403; }\n"
         << "    location = /status/410 { return 410; }\n"
         << "    location = /status/429 { return 429; }\n"
         << "    location = /status/503 { return 503; }\n"
         << "  }\n"
         << "}\n";
  }

  bool WaitUntilListening() {
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(static_cast<uint16_t>(port_));
      ::inet_pton(AF_INET, address_.c_str(), &address.sin_addr);
      const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
      ::close(fd);
      if (up) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  const std::string root_;
  std::string server_config_;
  std::string netns_path_;
  std::string address_ = "127.0.0.1";
  std::string certificate_;
  std::string key_;
  TempDir dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_NGINX_SERVER_H_
