// feedline_packet_delay QUEUE DELAY_MS: holds every packet that netfilter
// queues to QUEUE (iptables ... -j NFQUEUE --queue-num QUEUE) for DELAY_MS
// milliseconds, then lets it go on (NF_ACCEPT). A link delay for kernels
// without tc netem (sch_netem), which the storage tests' network namespace
// uses (tests/storage/packet_delay.h); run inside that namespace, since a
// queue belongs to the namespace whose rules fill it.
//
// Only the packets' metadata is copied to this process (NFQNL_COPY_META),
// and GSO super-packets are queued whole (NFQA_CFG_F_GSO), so a fast TCP
// stream is a few thousand packets a second, not one per MTU. Every packet
// waits the same time, and the kernel numbers a queue's packets in order,
// so the packets due are always the oldest ones: one batch verdict
// (nfq_set_verdict_batch, "every id up to this one") lets them all go.
//
// Prints "ready" on stdout once bound; stops on SIGTERM or SIGINT, letting
// every held packet go first.
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t stop = 0;

void Stop(int) { stop = 1; }

struct Held {
  uint32_t id;
  Clock::time_point due;
};

struct State {
  std::chrono::microseconds delay;
  std::deque<Held> held;
};

int OnPacket(nfq_q_handle*, nfgenmsg*, nfq_data* data, void* opaque) {
  State* state = static_cast<State*>(opaque);
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
  if (header == nullptr) return 0;
  state->held.push_back({ntohl(header->packet_id), Clock::now() + state->delay});
  return 0;
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "feedline_packet_delay: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: feedline_packet_delay QUEUE DELAY_MS\n");
    return 2;
  }
  const int queue = std::atoi(argv[1]);
  State state{std::chrono::microseconds(static_cast<int64_t>(std::atof(argv[2]) * 1000)), {}};

  nfq_handle* handle = nfq_open();
  if (handle == nullptr) Fail("nfq_open");
  nfq_q_handle* qh = nfq_create_queue(handle, static_cast<uint16_t>(queue), OnPacket, &state);
  if (qh == nullptr) Fail("binding queue " + std::to_string(queue));
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) Fail("nfq_set_mode");
  if (nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0) Fail("NFQA_CFG_F_GSO");
  // Room for what a delayed fast link holds: a queue that overflows drops.
  if (nfq_set_queue_maxlen(qh, 1 << 16) < 0) Fail("nfq_set_queue_maxlen");
  nfnl_rcvbufsiz(nfq_nfnlh(handle), 32u << 20);
  const int fd = nfq_fd(handle);

  struct sigaction action {};
  action.sa_handler = Stop;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  std::printf("ready\n");
  std::fflush(stdout);

  std::vector<char> buffer(1 << 16);
  while (!stop) {
    int timeout_ms = 100;
    if (!state.held.empty()) {
      const auto wait = std::chrono::duration_cast<std::chrono::microseconds>(
          state.held.front().due - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, (wait.count() + 999) / 1000));
    }
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, timeout_ms) < 0 && errno != EINTR) Fail("poll");
    if (ready.revents & POLLIN) {
      for (;;) {
        const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (got < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          if (errno == ENOBUFS) continue;  // the kernel dropped some messages; go on
          Fail("recv");
        }
        nfq_handle_packet(handle, buffer.data(), static_cast<int>(got));
      }
    }
    const Clock::time_point now = Clock::now();
    uint32_t last = 0;
    bool any = false;
    while (!state.held.empty() && state.held.front().due <= now) {
      last = state.held.front().id;
      any = true;
      state.held.pop_front();
    }
    if (any && nfq_set_verdict_batch(qh, last, NF_ACCEPT) < 0) Fail("nfq_set_verdict_batch");
  }
  if (!state.held.empty()) nfq_set_verdict_batch(qh, state.held.back().id, NF_ACCEPT);
  nfq_destroy_queue(qh);
  nfq_close(handle);
  return 0;
}
