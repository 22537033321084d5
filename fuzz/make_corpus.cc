// Writes the seed corpus of decode_fuzzer: one small file per format and
// layout the decoders handle. Usage: make_corpus <dir>. The seeds are kept
// in fuzz/corpus/; rerun this only to change them.
#include <cstdio>
#include <string>
#include <vector>

#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"

using namespace feedline::vision;

namespace {

void Write(const std::string& dir, const char* name, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    return;
  }
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int w = 40, h = 30;
  const std::vector<uint8_t> rgb = SynthesizeImage(w, h, 1);
  JpegEncodeOptions jpeg;
  jpeg.quality = 75;
  Write(dir, "baseline_420.jpg", EncodeJpeg(rgb, w, h, jpeg));
  jpeg.subsampling = ChromaSubsampling::k422;
  Write(dir, "baseline_422.jpg", EncodeJpeg(rgb, w, h, jpeg));
  jpeg.subsampling = ChromaSubsampling::k444;
  jpeg.progressive = true;
  Write(dir, "progressive_444.jpg", EncodeJpeg(rgb, w, h, jpeg));
  jpeg = {};
  jpeg.quality = 75;
  jpeg.grayscale = true;
  Write(dir, "gray.jpg", EncodeJpeg(rgb, w, h, jpeg));
  jpeg.grayscale = false;
  jpeg.cmyk = true;
  Write(dir, "cmyk.jpg", EncodeJpeg(rgb, w, h, jpeg));
  jpeg.ycck = true;
  Write(dir, "ycck.jpg", EncodeJpeg(rgb, w, h, jpeg));
  std::vector<uint8_t> cut = EncodeJpeg(rgb, w, h);
  cut.resize(cut.size() / 2);
  Write(dir, "truncated.jpg", cut);

  Write(dir, "rgb8.png", EncodePng(rgb, w, h));
  PngEncodeOptions png;
  png.channels = 2;
  png.bit_depth = 16;
  png.interlaced = true;
  std::vector<uint8_t> ga;
  for (size_t i = 0; i < rgb.size(); i += 3) ga.insert(ga.end(), {rgb[i], rgb[i + 1]});
  Write(dir, "gray_alpha16_interlaced.png", EncodePng(ga, w, h, png));
  std::vector<uint8_t> few = rgb;
  for (uint8_t& v : few) v &= 0xC0;  // at most 64 colors
  png = {};
  png.palette = true;
  Write(dir, "palette.png", EncodePng(few, w, h, png));

  Write(dir, "lossy.webp", EncodeWebp(rgb, w, h, 70));
  Write(dir, "lossless.webp", EncodeWebp(rgb, w, h, 100, /*lossless=*/true));
  // fuzz/corpus/animated.webp (two 40x30 frames) was written by Pillow
  // (Image.save(save_all=True)): the encoder here writes still images only.
  return 0;
}
