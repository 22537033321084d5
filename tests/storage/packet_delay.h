// PacketDelay: delay and loss on a NetNamespace's link made with netfilter
// instead of tc netem, which kernels built without sch_netem (this
// machine's) lack. Inside the
// namespace:
//  - every packet that arrives over the link is queued (iptables NFQUEUE)
//    to feedline_packet_delay (tests/storage/packet_delay_main.cc), which
//    lets it go `delay_ms` later: the round trip grows by `delay_ms`;
//  - `loss` of the packets each way is dropped (iptables `-m statistic
//    --mode random`), counted by DroppedPackets().
// The delay is put on the packets entering the namespace only: a packet is
// detached from its sending socket when it crosses into the namespace, so
// holding it there does not throttle the sender (TCP small queues would,
// for packets held on their way out). The namespace's end of the link
// sends one MSS per packet (gso_max_segs 1), so a loss is one packet on the
// wire, not a 64 KiB GSO super-packet.
//
// Unavailable() says why it cannot be used here ("" if it can): no
// iptables, no NFQUEUE or statistic match in the kernel, or no delay
// program (built only where libnetfilter-queue is installed,
// scripts/install_deps.sh). The destructor removes the rules and stops the
// program: the link is as it was.
//
// Thread safety: one thread drives it.
#ifndef FEEDLINE_TESTS_STORAGE_PACKET_DELAY_H_
#define FEEDLINE_TESTS_STORAGE_PACKET_DELAY_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/storage/net_namespace.h"

namespace feedline::storage::testing {

class PacketDelay {
 public:
  // Throws std::runtime_error naming the failing step (check Unavailable()
  // first).
  PacketDelay(const NetNamespace& netns, double delay_ms, double loss)
      : netns_(netns), iptables_(Iptables()) {
    int ready[2];
    if (::pipe(ready) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(ready[1], STDOUT_FILENO);
      ::close(ready[0]);
      ::close(ready[1]);
      const std::string delay = std::to_string(delay_ms);
      ::execlp("ip", "ip", "netns", "exec", netns.name().c_str(), Program().c_str(), "0",
               delay.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    ::close(ready[1]);
    char line[16] = {};
    const ssize_t got = ::read(ready[0], line, sizeof(line) - 1);
    ::close(ready[0]);
    if (got <= 0 || std::string(line).rfind("ready", 0) != 0) {
      Stop();
      throw std::runtime_error(Program() + " did not start in namespace " + netns.name());
    }
    const std::string link = netns.inner_link();
    const std::string probability = std::to_string(loss);
    Must("ip -n " + netns.name() + " link set " + link + " gso_max_segs 1");
    Rule("-A INPUT -i " + link + " -m statistic --mode random --probability " + probability +
         " -j DROP");
    Rule("-A INPUT -i " + link + " -j NFQUEUE --queue-num 0");
    Rule("-A OUTPUT -o " + link + " -m statistic --mode random --probability " + probability +
         " -j DROP");
  }
  ~PacketDelay() { Stop(); }
  PacketDelay(const PacketDelay&) = delete;
  PacketDelay& operator=(const PacketDelay&) = delete;

  // Why it cannot be used here, or "" (needs a namespace: check
  // NetNamespace::Unavailable() first).
  static std::string Unavailable(const NetNamespace& netns) {
    if (::access(Program().c_str(), X_OK) != 0) {
      return Program() + " is not built (libnetfilter-queue-dev is missing: "
             "scripts/install_deps.sh installs it)";
    }
    std::string output;
    const std::string iptables = "ip netns exec " + netns.name() + " " + Iptables();
    if (Shell(iptables + " -A INPUT -s 192.0.2.1 -m statistic --mode random "
                         "--probability 0.5 -j NFQUEUE --queue-num 9",
              &output) != 0) {
      return "iptables with the statistic match and the NFQUEUE target is unavailable "
             "(the iptables package; CONFIG_NETFILTER_XT_MATCH_STATISTIC, "
             "CONFIG_NETFILTER_XT_TARGET_NFQUEUE): " + output;
    }
    Shell(iptables + " -F INPUT");
    return "";
  }

  // The packets the loss rules dropped so far, both ways.
  uint64_t DroppedPackets() const { return Counted("DROP"); }
  // The packets queued for the delay so far.
  uint64_t DelayedPackets() const { return Counted("NFQUEUE"); }
  // Whether the delay program still runs (a test that saw no delay would
  // otherwise not know why).
  bool Running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  // Built beside the tests where libnetfilter-queue is (tests/CMakeLists.txt).
  static std::string Program() {
#ifdef FEEDLINE_PACKET_DELAY
    return FEEDLINE_PACKET_DELAY;
#else
    return "feedline_packet_delay (not built)";
#endif
  }
  // The legacy tables where there are both: NFQUEUE in nf_tables needs
  // nft_queue, which some kernels that have xt_NFQUEUE lack.
  static std::string Iptables() {
    return Shell("iptables-legacy -V") == 0 ? "iptables-legacy" : "iptables";
  }

  void Rule(const std::string& rule) const {
    Must("ip netns exec " + netns_.name() + " " + iptables_ + " " + rule);
  }
  static void Must(const std::string& command) {
    std::string output;
    if (Shell(command, &output) != 0) throw std::runtime_error(command + ": " + output);
  }

  // The sum of the packet counters of the rules whose target is `target`.
  uint64_t Counted(const std::string& target) const {
    std::string output;
    Shell("ip netns exec " + netns_.name() + " " + iptables_ + " -L -v -x -n", &output);
    std::istringstream lines(output);
    std::string line;
    uint64_t total = 0;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string packets, bytes, name;
      if (!(fields >> packets >> bytes >> name) || name != target) continue;
      if (packets.find_first_not_of("0123456789") == std::string::npos) {
        total += std::stoull(packets);
      }
    }
    return total;
  }

  // Removes the rules (a queue with no program drops what reaches it), then
  // lets the held packets go (SIGTERM) and waits for the program.
  void Stop() {
    if (pid_ <= 0) return;
    Shell("ip netns exec " + netns_.name() + " " + iptables_ + " -F INPUT");
    Shell("ip netns exec " + netns_.name() + " " + iptables_ + " -F OUTPUT");
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  const NetNamespace& netns_;
  const std::string iptables_;
  pid_t pid_ = -1;
};

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_PACKET_DELAY_H_
