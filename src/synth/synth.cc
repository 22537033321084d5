#include "feedline/synth/synth.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <numbers>
#include <thread>

#include "feedline/error.h"
#include "feedline/rng.h"

// The pixel loops are simple float arithmetic that GCC vectorizes only
// above -O2.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize")
#endif

namespace feedline::vision {
namespace {

// Rng streams, so pixels and file choices never share random numbers.
constexpr uint64_t kPixelStream = 0x5157;
constexpr uint64_t kFileStream = 0xF11E;

// A fast generator for per-pixel noise (xorshift32); Rng would be ten times
// slower and noise needs no quality.
class NoiseSource {
 public:
  explicit NoiseSource(uint32_t seed) : state_(seed | 1u) {}
  // Roughly normal (sum of two uniforms), mean 0, in [-1, 1).
  float Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    const float a = static_cast<float>(state_ & 0xFFFF) * (1.0f / 65536.0f);
    const float b = static_cast<float>(state_ >> 16) * (1.0f / 65536.0f);
    return a + b - 1.0f;
  }

 private:
  uint32_t state_;
};

// The tone curve 128 + 118 v / sqrt(1 + v^2), v = (x - 128) / 150, as a
// table over x in [-384, 640) at quarter steps.
constexpr int kToneSize = 4096;
constexpr int kToneStep = 4;
constexpr int kToneOffset = 384 * kToneStep;

const std::array<float, kToneSize>& ToneCurve() {
  static const std::array<float, kToneSize> table = [] {
    std::array<float, kToneSize> t;
    for (int i = 0; i < kToneSize; ++i) {
      const double x = static_cast<double>(i - kToneOffset) / kToneStep;
      const double v = (x - 128.0) / 150.0;
      t[static_cast<size_t>(i)] = static_cast<float>(128.0 + 118.0 * v / std::sqrt(1.0 + v * v));
    }
    return t;
  }();
  return table;
}

uint8_t ClampByte(float v) { return static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f) + 0.5f); }

}  // namespace

std::vector<uint8_t> SynthesizeImage(int width, int height, uint64_t seed) {
  if (width <= 0 || height <= 0) {
    throw Error("SynthesizeImage: width and height must be > 0, got " + std::to_string(width) +
                "x" + std::to_string(height));
  }
  Rng rng(seed, 0, 0, kPixelStream);
  const size_t w = static_cast<size_t>(width);
  const size_t h = static_cast<size_t>(height);

  // 1. A smooth background: a base color and a linear gradient per channel.
  float base[3], gx[3], gy[3];
  for (int c = 0; c < 3; ++c) {
    base[c] = static_cast<float>(rng.Uniform(40, 210));
    gx[c] = static_cast<float>(rng.Uniform(-120, 120) / width);
    gy[c] = static_cast<float>(rng.Uniform(-120, 120) / height);
  }
  // 2. Sinusoid textures from coarse to fine, amplitude growing with the
  // period as in natural images. sin(ax + by + p) is separable into row and
  // column tables, so each wave costs two multiplies per pixel.
  constexpr int kWaves = 7;
  std::vector<float> sin_x(kWaves * w), cos_x(kWaves * w), cos_y(kWaves * h), sin_y(kWaves * h);
  float weight[kWaves][3];
  for (int k = 0; k < kWaves; ++k) {
    const double period = std::exp(rng.Uniform(std::log(2.5), std::log(160.0)));
    const double frequency = 2 * std::numbers::pi / period;
    const double angle = rng.Uniform(0, std::numbers::pi);
    const double phase = rng.Uniform(0, 2 * std::numbers::pi);
    const double a = frequency * std::cos(angle), b = frequency * std::sin(angle);
    const double amplitude = 1.3 * std::pow(period, 0.75);
    const double luma = rng.Uniform(0.5, 1.0);
    for (int c = 0; c < 3; ++c) {
      weight[k][c] = static_cast<float>(amplitude * (luma + rng.Uniform(-0.35, 0.35)));
    }
    for (size_t x = 0; x < w; ++x) {
      sin_x[k * w + x] = static_cast<float>(std::sin(a * x + phase));
      cos_x[k * w + x] = static_cast<float>(std::cos(a * x + phase));
    }
    for (size_t y = 0; y < h; ++y) {
      cos_y[k * h + y] = static_cast<float>(std::cos(b * y));
      sin_y[k * h + y] = static_cast<float>(std::sin(b * y));
    }
  }
  // 3. Hard-edged shapes (rectangles and ellipses), partly transparent, so
  // that edges appear at every scale.
  struct Shape {
    bool ellipse;
    double cx, cy, rx, ry;
    float alpha;
    float color[3];
    int x0, x1, y0, y1;
  };
  std::vector<Shape> shapes(6 + rng.UniformInt(14));
  const double size_unit = std::min(width, height);
  for (Shape& s : shapes) {
    s.ellipse = rng.Bernoulli(0.5);
    s.cx = rng.Uniform(0, width);
    s.cy = rng.Uniform(0, height);
    s.rx = size_unit * rng.Uniform(0.04, 0.3);
    s.ry = size_unit * rng.Uniform(0.04, 0.3);
    s.alpha = static_cast<float>(rng.Uniform(0.4, 0.9));
    for (float& v : s.color) v = static_cast<float>(rng.Uniform(0, 255));
    s.x0 = std::max(0, static_cast<int>(s.cx - s.rx));
    s.x1 = std::min(width, static_cast<int>(s.cx + s.rx) + 1);
    s.y0 = std::max(0, static_cast<int>(s.cy - s.ry));
    s.y1 = std::min(height, static_cast<int>(s.cy + s.ry) + 1);
  }
  // 4. Sensor noise, then a soft tone curve into [0, 255]: photographs clip
  // few pixels, and hard clipping would make block averages (what DCT
  // scaling computes) differ from averages of clipped pixels.
  NoiseSource noise(static_cast<uint32_t>(rng.NextU32()));
  const float noise_amplitude = static_cast<float>(rng.Uniform(2, 6));
  const std::array<float, kToneSize>& tone = ToneCurve();

  // Row by row, one plane per channel, so the working set stays in cache
  // and the loops vectorize.
  std::vector<uint8_t> out(w * h * 3);
  std::vector<float> planes(w * 3);
  float* const plane[3] = {planes.data(), planes.data() + w, planes.data() + 2 * w};
  for (size_t y = 0; y < h; ++y) {
    for (int c = 0; c < 3; ++c) {
      float* p = plane[c];
      const float start = base[c] + gy[c] * static_cast<float>(y), step = gx[c];
      for (size_t x = 0; x < w; ++x) p[x] = start + step * static_cast<float>(x);
    }
    for (int k = 0; k < kWaves; ++k) {
      const float cy = cos_y[k * h + y], sy = sin_y[k * h + y];
      const float* sx = sin_x.data() + k * w;
      const float* cx = cos_x.data() + k * w;
      for (int c = 0; c < 3; ++c) {
        float* p = plane[c];
        const float a = weight[k][c] * cy, b = weight[k][c] * sy;
        for (size_t x = 0; x < w; ++x) p[x] += a * sx[x] + b * cx[x];
      }
    }
    for (const Shape& s : shapes) {
      const int iy = static_cast<int>(y);
      if (iy < s.y0 || iy >= s.y1) continue;
      const double dy = (iy - s.cy) / s.ry;
      int x0 = s.x0, x1 = s.x1;
      if (s.ellipse) {  // the chord of the ellipse on this row
        if (dy * dy > 1.0) continue;
        const double half = s.rx * std::sqrt(1.0 - dy * dy);
        x0 = std::max(x0, static_cast<int>(std::ceil(s.cx - half)));
        x1 = std::min(x1, static_cast<int>(std::floor(s.cx + half)) + 1);
      }
      for (int c = 0; c < 3; ++c) {
        float* p = plane[c];
        const float keep = 1.0f - s.alpha, add = s.alpha * s.color[c];
        for (int x = x0; x < x1; ++x) p[x] = keep * p[x] + add;
      }
    }
    uint8_t* o = out.data() + y * w * 3;
    for (size_t x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int index =
            std::clamp(static_cast<int>(plane[c][x] * kToneStep) + kToneOffset, 0, kToneSize - 1);
        o[3 * x + c] = ClampByte(tone[static_cast<size_t>(index)] + noise_amplitude * noise.Next());
      }
    }
  }
  return out;
}

std::vector<uint8_t> SynthesizeJpeg(int width, int height, uint64_t seed,
                                    const JpegEncodeOptions& options) {
  return EncodeJpeg(SynthesizeImage(width, height, seed), width, height, options);
}

namespace {

struct FileSpec {
  std::string path;
  std::vector<uint8_t> bytes;
};

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    const int error = errno;
    throw OsError(error, path, "cannot write '" + path + "': " + std::strerror(error));
  }
  const size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
  const bool ok = written == bytes.size() && std::fclose(f) == 0;
  if (!ok) {
    const int error = errno;
    throw OsError(error, path, "cannot write '" + path + "': " + std::strerror(error));
  }
}

// A decodable image: its extension and bytes.
std::pair<const char*, std::vector<uint8_t>> GoodImage(uint64_t seed, int64_t index) {
  Rng rng(seed, 1, static_cast<uint64_t>(index), kFileStream);
  const int short_side = 300 + static_cast<int>(rng.UniformInt(201));
  const int long_side = static_cast<int>(short_side * rng.Uniform(1.0, 1.5));
  const bool landscape = rng.Bernoulli(0.7);
  const int width = landscape ? long_side : short_side;
  const int height = landscape ? short_side : long_side;
  const uint64_t pixel_seed = MixSeed(seed, static_cast<uint64_t>(index));
  JpegEncodeOptions options;
  options.quality = 85 + static_cast<int>(rng.UniformInt(12));
  const double kind = rng.Uniform();
  const double chroma = rng.Uniform();
  options.subsampling = chroma < 0.15   ? ChromaSubsampling::k444
                        : chroma < 0.25 ? ChromaSubsampling::k422
                                        : ChromaSubsampling::k420;
  options.progressive = rng.Bernoulli(0.15);
  if (kind < 0.005) {
    // ImageNet holds a PNG named .JPEG; decoding goes by content.
    return {"jpg", EncodePng(SynthesizeImage(width, height, pixel_seed), width, height)};
  }
  if (kind < 0.015) {
    options.cmyk = true;
  } else if (kind < 0.065) {
    options.grayscale = true;
  }
  return {"jpg", SynthesizeJpeg(width, height, pixel_seed, options)};
}

// Offset of the first chunk of `type` in a PNG, or 0.
size_t FindPngChunk(const std::vector<uint8_t>& png, const char* type) {
  size_t at = 8;
  while (at + 12 <= png.size()) {
    const uint32_t length = (uint32_t{png[at]} << 24) | (uint32_t{png[at + 1]} << 16) |
                            (uint32_t{png[at + 2]} << 8) | png[at + 3];
    if (std::memcmp(png.data() + at + 4, type, 4) == 0) return at;
    at += 12 + static_cast<size_t>(length);
  }
  return 0;
}

// An undecodable file of kind `kind`: its extension and bytes.
std::pair<const char*, std::vector<uint8_t>> BrokenFile(uint64_t seed, int64_t index, int kind) {
  Rng rng(seed, 2, static_cast<uint64_t>(index), kFileStream);
  const uint64_t pixel_seed = MixSeed(seed, static_cast<uint64_t>(index));
  switch (kind) {
    case 0: {  // truncated JPEG
      std::vector<uint8_t> jpeg = SynthesizeJpeg(320, 240, pixel_seed);
      jpeg.resize(static_cast<size_t>(jpeg.size() * rng.Uniform(0.3, 0.7)));
      return {"jpg", jpeg};
    }
    case 1:  // empty file
      return {"jpg", {}};
    case 2: {  // random bytes
      std::vector<uint8_t> bytes(500 + rng.UniformInt(3500));
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng.NextU32());
      bytes[0] = static_cast<uint8_t>(rng.UniformInt(0x80));  // no magic number
      return {"jpeg", bytes};
    }
    case 3: {  // a GIF named .jpg
      static const uint8_t kGif[] = {'G', 'I', 'F', '8', '9', 'a', 1,   0,   1, 0, 0x80, 0,
                                     0,   0,   0,   0,   255, 255, 255, ',', 0, 0, 0,    0,
                                     1,   0,   1,   0,   0,   2,   2,   'D', 1, 0, ';'};
      return {"jpg", std::vector<uint8_t>(std::begin(kGif), std::end(kGif))};
    }
    case 4: {  // PNG whose image data fails its CRC
      std::vector<uint8_t> png = EncodePng(SynthesizeImage(64, 48, pixel_seed), 64, 48);
      const size_t idat = FindPngChunk(png, "IDAT");
      const uint32_t length = (uint32_t{png[idat]} << 24) | (uint32_t{png[idat + 1]} << 16) |
                              (uint32_t{png[idat + 2]} << 8) | png[idat + 3];
      png[idat + 8 + length] ^= 0x5A;  // first CRC byte
      return {"png", png};
    }
    case 5: {  // truncated PNG
      std::vector<uint8_t> png = EncodePng(SynthesizeImage(64, 48, pixel_seed), 64, 48);
      png.resize(png.size() * 6 / 10);
      return {"png", png};
    }
    default: {  // JPEG with an invalid sample precision in its frame header
      std::vector<uint8_t> jpeg = SynthesizeJpeg(64, 48, pixel_seed);
      for (size_t i = 2; i + 4 < jpeg.size(); ++i) {
        if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {
          jpeg[i + 4] = 0;  // precision byte, after the two length bytes
          break;
        }
      }
      return {"jpg", jpeg};
    }
  }
}

constexpr int kBrokenKinds = 7;

}  // namespace

std::vector<std::string> WriteSyntheticImageFolder(const std::string& dir, int64_t images,
                                                   int classes, uint64_t seed, int64_t broken) {
  if (images < 0 || broken < 0 || classes <= 0) {
    throw Error("WriteSyntheticImageFolder: need images >= 0, classes > 0, broken >= 0; got " +
                std::to_string(images) + ", " + std::to_string(classes) + ", " +
                std::to_string(broken));
  }
  const int64_t total = images + broken;
  // Broken files spread evenly among the good ones.
  std::vector<bool> is_broken(static_cast<size_t>(total), false);
  for (int64_t k = 0; k < broken; ++k) {
    is_broken[static_cast<size_t>((2 * k + 1) * total / (2 * broken))] = true;
  }
  const int digits = std::max(3, static_cast<int>(std::to_string(classes - 1).size()));
  std::vector<std::string> class_dirs;
  for (int c = 0; c < classes; ++c) {
    std::string number = std::to_string(c);  // zero-padded to `digits`
    if (number.size() < static_cast<size_t>(digits)) {
      number.insert(0, static_cast<size_t>(digits) - number.size(), '0');
    }
    class_dirs.push_back(dir + "/class_" + number);
    std::error_code ec;
    std::filesystem::create_directories(class_dirs.back(), ec);
    if (ec) throw Error("cannot create '" + class_dirs.back() + "': " + ec.message());
  }

  std::vector<std::string> broken_paths(static_cast<size_t>(broken));
  std::vector<int64_t> broken_rank(static_cast<size_t>(total), -1);
  for (int64_t i = 0, k = 0; i < total; ++i) {
    if (is_broken[static_cast<size_t>(i)]) broken_rank[static_cast<size_t>(i)] = k++;
  }
  std::mutex mu;
  std::exception_ptr failure;
  auto work = [&](int64_t first, int64_t step) {
    try {
      for (int64_t i = first; i < total; i += step) {
        const int64_t rank = broken_rank[static_cast<size_t>(i)];
        auto [ext, bytes] = rank >= 0 ? BrokenFile(seed, i, static_cast<int>(rank % kBrokenKinds))
                                      : GoodImage(seed, i);
        char name[48];
        std::snprintf(name, sizeof(name), "/img_%07lld.%s", static_cast<long long>(i), ext);
        const std::string path = class_dirs[static_cast<size_t>(i % classes)] + name;
        WriteFile(path, bytes);
        if (rank >= 0) broken_paths[static_cast<size_t>(rank)] = path;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure) failure = std::current_exception();
    }
  };
  const int64_t threads =
      std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::max<int64_t>(total, 1));
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(work, t, threads);
  work(0, threads);
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return broken_paths;
}

}  // namespace feedline::vision
