// ServerPorts: TCP ports for the servers the storage tests start (nginx,
// SeaweedFS), taken below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), so that no outgoing connection
// of another test running at the same time (ctest -j) is given one as its
// local port. A port picked by binding port 0 comes from that range: a test
// that stopped its server and started it again on the same port found the
// port taken by another test's connection (nginx: "bind() ... Address
// already in use", a clean-clone run under ASan, 2026-12-02).
//
// Each port is free when returned (bound once here, then released); the
// ports of one call differ. Drawn from a generator seeded by the process id
// and the clock, so that tests in other processes pick other ports.
//
// Thread safety: one thread at a time (the tests start servers from one).
#ifndef FEEDLINE_TESTS_STORAGE_SERVER_PORTS_H_
#define FEEDLINE_TESTS_STORAGE_SERVER_PORTS_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <random>
#include <stdexcept>
#include <vector>

namespace feedline::storage::testing {

// The lowest port the kernel gives outgoing connections (32768 if unknown).
inline int EphemeralPortsStart() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  if (range >> low && low > 2048) return low;
  return 32768;
}

inline std::vector<int> ServerPorts(int count) {
  static std::mt19937 draw(static_cast<uint32_t>(::getpid()) * 2654435761u ^
                           static_cast<uint32_t>(
                               std::chrono::steady_clock::now().time_since_epoch().count()));
  const int high = EphemeralPortsStart();
  const int low = high > 12000 ? 10000 : 1024;
  std::uniform_int_distribution<int> port_in(low, high - 1);
  std::vector<int> fds, ports;
  for (int tries = 0; static_cast<int>(ports.size()) < count && tries < 10000; ++tries) {
    const int port = port_in(draw);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd);
      continue;
    }
    fds.push_back(fd);  // held until all are chosen: the ports of one call differ
    ports.push_back(port);
  }
  for (int fd : fds) ::close(fd);
  if (static_cast<int>(ports.size()) < count) {
    throw std::runtime_error("no free TCP port below " + std::to_string(high));
  }
  return ports;
}

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_SERVER_PORTS_H_
