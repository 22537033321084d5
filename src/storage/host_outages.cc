#include "src/storage/host_outages.h"

namespace feedline::storage {

std::string HostOutages::HostOf(std::string_view url) {
  const size_t scheme = url.find("://");
  const size_t authority = scheme == std::string_view::npos ? 0 : scheme + 3;
  const size_t path = url.find('/', authority);
  return std::string(url.substr(0, path));
}

void HostOutages::Failed(const std::string& host, Clock::time_point now) {
  since_.try_emplace(host, now);  // the first failure counts; later ones keep it
}

void HostOutages::Answered(const std::string& host) {
  since_.erase(host);
}

std::optional<HostOutages::Clock::time_point> HostOutages::FailingSince(
    const std::string& host) const {
  auto found = since_.find(host);
  if (found == since_.end()) return std::nullopt;
  return found->second;
}

}  // namespace feedline::storage
