// libFuzzer target for the worker-process protocol's decoders
// (src/process/worker_protocol.h): the parent decodes what a worker process
// sends, and a worker decodes its requests, so each side parses bytes that
// another process wrote, a process that may have died mid-write or run
// damaged native code.
//
// The first byte picks the decoder (sample reply, error reply, row
// destinations, a kSamples request of the count in the second byte, a
// sample's schema); the rest is its input. A decoder must answer false or decode; anything else (a
// crash, a sanitizer report, an exception, a huge allocation) is a bug. What
// decodes must encode to bytes that decode to the same encoding again, so a
// message the parent accepted means one thing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/process/worker_protocol.h"

namespace {

using namespace feedline::internal;

void CheckSampleReply(const char* data, size_t size) {
  SampleReply reply;
  if (!DecodeSampleReply(data, size, &reply)) return;
  const std::string once = EncodeSampleReply(reply);
  SampleReply again;
  if (!DecodeSampleReply(once.data(), once.size(), &again)) std::abort();
  if (EncodeSampleReply(again) != once) std::abort();
}

void CheckErrorReply(const char* data, size_t size) {
  ErrorReply reply;
  if (!DecodeErrorReply(data, size, &reply)) return;
  if (static_cast<int>(reply.kind) >= feedline::kFailureKindCount) std::abort();
  const std::string once = EncodeErrorReply(reply);
  ErrorReply again;
  if (!DecodeErrorReply(once.data(), once.size(), &again)) std::abort();
  if (EncodeErrorReply(again) != once) std::abort();
}

void CheckDestinations(const char* data, size_t size) {
  std::vector<RowDestination> destinations;
  if (!DecodeDestinations(data, size, &destinations)) return;
  std::string once;
  EncodeDestinations(destinations, &once);
  std::vector<RowDestination> again;
  if (!DecodeDestinations(once.data(), once.size(), &again)) std::abort();
  std::string twice;
  EncodeDestinations(again, &twice);
  if (twice != once) std::abort();
}

void CheckRequestedSamples(const char* data, size_t size, uint64_t count) {
  std::vector<RequestedSample> samples;
  if (!DecodeRequestedSamples(data, size, count, &samples)) return;
  if (samples.size() != count) std::abort();
  std::string once;
  for (const RequestedSample& s : samples) {
    std::string destinations;
    if (!s.destinations.empty()) EncodeDestinations(s.destinations, &destinations);
    EncodeRequestedSample(s.index, s.context_index, destinations, &once);
  }
  std::vector<RequestedSample> again;
  if (!DecodeRequestedSamples(once.data(), once.size(), count, &again)) std::abort();
}

void CheckSchema(const char* data, size_t size) {
  feedline::SampleSchema schema;
  if (!DecodeSampleSchema(data, size, &schema)) return;
  // A decoded schema is one tree: every subtree inside its parent's.
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema.End(i) > schema.size() || (schema.node(i).is_leaf() && schema.End(i) != i + 1)) {
      std::abort();
    }
  }
  if (!schema.empty() && schema.End(0) != schema.size()) std::abort();
  std::string once;
  EncodeSampleSchema(schema, &once);
  feedline::SampleSchema again;
  if (!DecodeSampleSchema(once.data(), once.size(), &again)) std::abort();
  if (!(again == schema)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size < 2) return 0;
  const char* data = reinterpret_cast<const char*>(bytes);
  switch (bytes[0] % 5) {
    case 0: CheckSampleReply(data + 1, size - 1); break;
    case 1: CheckErrorReply(data + 1, size - 1); break;
    case 2: CheckDestinations(data + 1, size - 1); break;
    case 3: CheckRequestedSamples(data + 2, size - 2, bytes[1]); break;
    default: CheckSchema(data + 1, size - 1); break;
  }
  return 0;
}
