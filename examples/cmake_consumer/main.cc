// A custom Dataset fed through a DataLoader, built against the installed
// package. Prints one line per epoch and checks what it received, then that a
// failing sample reaches the program as a feedline::SampleError (its type
// information crosses the library boundary) and that the vision API links.
#include <cstdio>
#include <memory>

#include "feedline/feedline.h"
#include "feedline/vision/decode.h"

namespace {

// Sample i: a 3-value feature vector and its label i % 10.
class Squares : public feedline::Dataset {
 public:
  int64_t size() const override { return 1000; }
  void Get(int64_t i, feedline::Sample& out, feedline::SampleContext& ctx) const override {
    feedline::Tensor x = out.Allocate("x", feedline::DType::kF32, {3});
    float* v = x.data<float>();
    v[0] = static_cast<float>(i);
    v[1] = static_cast<float>(i * i);
    v[2] = static_cast<float>(ctx.rng().Uniform());  // augmentation noise
    out.SetScalar<int64_t>("label", i % 10);
  }
};

// Sample 5 cannot be read.
class Broken : public feedline::Dataset {
 public:
  int64_t size() const override { return 10; }
  void Get(int64_t i, feedline::Sample& out, feedline::SampleContext&) const override {
    if (i == 5) {
      throw feedline::SampleError(feedline::FailureKind::kIo, "five.bin", "unreadable");
    }
    out.SetScalar<int64_t>("label", i);
  }
};

bool SampleErrorReachesTheProgram() {
  feedline::LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 1;
  feedline::DataLoader loader(std::make_shared<Broken>(), options);
  try {
    for (const feedline::Batch& batch : loader) (void)batch;
  } catch (const feedline::SampleError& e) {
    std::printf("caught SampleError: index %lld, source %s\n", static_cast<long long>(e.index()),
                e.source().c_str());
    return e.index() == 5 && e.source() == "five.bin";
  }
  return false;
}

}  // namespace

int main() {
  feedline::LoaderOptions options;
  options.batch_size = 64;
  options.shuffle = true;
  options.num_workers = 2;
  options.seed = 42;
  feedline::DataLoader loader(std::make_shared<Squares>(), options);
  for (int epoch = 0; epoch < 2; ++epoch) {
    int64_t samples = 0;
    double checksum = 0;
    for (const feedline::Batch& batch : loader) {
      const float* x = batch["x"].data<float>();
      for (int64_t r = 0; r < batch.size(); ++r) checksum += x[r * 3];
      samples += batch.size();
    }
    std::printf("epoch %d: %lld samples, sum of x[0] = %.0f\n", epoch,
                static_cast<long long>(samples), checksum);
    if (samples != 1000 || checksum != 499500.0) return 1;
  }
  if (!SampleErrorReachesTheProgram()) return 1;
  const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (feedline::vision::DetectFormat(png_signature) != feedline::vision::ImageFormat::kPng) {
    return 1;
  }
  return 0;
}
