// NetNamespace: a network namespace joined to the test's own by a veth pair
// (ip netns, ip link), so that a server started inside it (NginxServer::
// set_network_namespace) is reached over a real link whose faults the test
// sets: a tc qdisc (a tbf rate), delay and loss (tests/storage/
// packet_delay.h), and connections reset with `ss -K`. Traffic stays on this machine. Made with iproute2
// (scripts/install_deps.sh); needs root. Removed (the namespace and both
// ends of the pair) on destruction.
//
// Unavailable() says why one cannot be made here ("" if it can), for a test
// to fail saying so.
//
// Thread safety: one thread drives a namespace.
#ifndef FEEDLINE_TESTS_STORAGE_NET_NAMESPACE_H_
#define FEEDLINE_TESTS_STORAGE_NET_NAMESPACE_H_

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace feedline::storage::testing {

// Runs `command` with the shell; its exit status, and its output (stdout
// and stderr) in `output` if given.
inline int Shell(const std::string& command, std::string* output = nullptr) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string text;
  std::array<char, 512> buffer;
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) text += buffer.data();
  const int status = ::pclose(pipe);
  if (output != nullptr) *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class NetNamespace {
 public:
  // Throws std::runtime_error with the failing command's output (check
  // Unavailable() first).
  NetNamespace() {
    static int made = 0;
    const std::string id = std::to_string(::getpid() % 100000) + "x" + std::to_string(made++);
    name_ = "feedline" + id;
    host_link_ = "flh" + id;
    inner_link_ = "fln" + id;
    // A /30 of 10.211.0.0/16 per namespace of this process.
    const int subnet = (::getpid() * 7 + made * 4) % 16000 * 4;
    const std::string prefix =
        "10.211." + std::to_string(subnet / 256 % 256) + ".";
    host_address_ = prefix + std::to_string(subnet % 256 + 1);
    address_ = prefix + std::to_string(subnet % 256 + 2);
    Must("ip netns add " + name_);
    Must("ip link add " + host_link_ + " type veth peer name " + inner_link_);
    Must("ip link set " + inner_link_ + " netns " + name_);
    Must("ip addr add " + host_address_ + "/30 dev " + host_link_);
    Must("ip link set " + host_link_ + " up");
    Must("ip -n " + name_ + " addr add " + address_ + "/30 dev " + inner_link_);
    Must("ip -n " + name_ + " link set " + inner_link_ + " up");
    Must("ip -n " + name_ + " link set lo up");
  }
  ~NetNamespace() {
    Shell("ip link del " + host_link_);  // takes its peer with it
    Shell("ip netns del " + name_);
  }
  NetNamespace(const NetNamespace&) = delete;
  NetNamespace& operator=(const NetNamespace&) = delete;

  // Why a namespace cannot be made here, or "".
  static std::string Unavailable() {
    if (::geteuid() != 0) return "network namespaces need root (running as uid " +
                                 std::to_string(::geteuid()) + ")";
    std::string output;
    if (Shell("ip -V", &output) != 0) {
      return "iproute2's ip is missing (scripts/install_deps.sh installs it): " + output;
    }
    const std::string probe = "feedlineprobe" + std::to_string(::getpid());
    if (Shell("ip netns add " + probe, &output) != 0) {
      return "this kernel or container refuses network namespaces: " + output;
    }
    Shell("ip netns del " + probe);
    return "";
  }

  // Both directions: `qdisc` (e.g. "tbf rate 20mbit burst 32kb latency
  // 50ms") on each end of the link.
  void Impair(const std::string& qdisc) {
    Must("tc qdisc replace dev " + host_link_ + " root " + qdisc);
    Must("ip netns exec " + name_ + " tc qdisc replace dev " + inner_link_ + " root " + qdisc);
  }

  // Resets (RST) every established TCP connection to `port` inside the
  // namespace (ss -K); returns how many it reset.
  int ResetConnections(int port) {
    std::string output;
    Must("ip netns exec " + name_ + " ss -K -t -n state established '( sport = :" +
             std::to_string(port) + " )'",
         &output);
    int lines = 0;
    for (char c : output) lines += c == '\n';
    return lines > 0 ? lines - 1 : 0;  // less ss's header
  }

  // NAME, for ip netns exec; the namespace's end of the veth pair.
  const std::string& name() const { return name_; }
  const std::string& inner_link() const { return inner_link_; }
  // /var/run/netns/NAME, for setns().
  std::string path() const { return "/var/run/netns/" + name_; }
  // The namespace's end of the link, and ours.
  const std::string& address() const { return address_; }
  const std::string& host_address() const { return host_address_; }

 private:
  static void Must(const std::string& command, std::string* output = nullptr) {
    std::string text;
    if (Shell(command, &text) != 0) throw std::runtime_error(command + ": " + text);
    if (output != nullptr) *output = text;
  }

  std::string name_;
  std::string host_link_;
  std::string inner_link_;
  std::string host_address_;
  std::string address_;
};

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_NET_NAMESPACE_H_
