#include "feedline/vision/detection_record.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

constexpr char kMagic[4] = {'F', 'L', 'D', 'R'};
constexpr size_t kHeaderBytes = 4 + 2 + 2 + 8 + 5 * 4;
constexpr size_t kObjectBytes = 40;
constexpr size_t kMaskBytes = 12;

template <typename T>
void Put(std::string& out, T value) {
  static_assert(std::is_arithmetic_v<T>);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian, as this library's machines are
  out.append(bytes, sizeof(T));
}

uint32_t Count32(size_t n, const char* what) {
  if (n > std::numeric_limits<uint32_t>::max()) {
    throw Error(std::string("detection record: more than 2^32 - 1 ") + what);
  }
  return static_cast<uint32_t>(n);
}

// Reads the fields in order, each inside the bytes (the total size is
// checked against the counts first).
class RecordReader {
 public:
  explicit RecordReader(std::span<const uint8_t> bytes) : at_(bytes.data()) {}
  template <typename T>
  T Take() {
    T value;
    std::memcpy(&value, at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }

 private:
  const uint8_t* at_;
};

}  // namespace

std::span<const double> DetectionRecord::polygon(uint32_t k) const {
  const size_t begin = k == 0 ? 0 : polygon_ends[k - 1];
  return std::span<const double>(coordinates).subspan(begin, polygon_ends[k] - begin);
}

uint32_t DetectionRecord::AddPolygon(std::span<const double> xy) {
  coordinates.insert(coordinates.end(), xy.begin(), xy.end());
  polygon_ends.push_back(Count32(coordinates.size(), "coordinates"));
  return Count32(polygon_ends.size() - 1, "polygons");
}

std::string EncodeDetectionRecord(const DetectionRecord& record) {
  size_t runs = 0;
  for (const CocoRle& mask : record.masks) runs += mask.counts.size();
  for (const DetectionObject& o : record.objects) {
    const bool fits =
        o.segmentation == CocoSegmentation::kNone ||
        (o.segmentation == CocoSegmentation::kPolygons && o.first <= record.polygon_ends.size() &&
         o.count <= record.polygon_ends.size() - o.first) ||
        (o.segmentation == CocoSegmentation::kRle && o.first < record.masks.size() && o.count == 1);
    if (!fits) throw Error("detection record: an object's segmentation is out of range");
  }
  std::string out;
  out.reserve(kHeaderBytes + kObjectBytes * record.objects.size() +
              4 * record.polygon_ends.size() + kMaskBytes * record.masks.size() +
              8 * record.coordinates.size() + 4 * runs);
  out.append(kMagic, sizeof(kMagic));
  Put<uint16_t>(out, kDetectionRecordVersion);
  Put<uint16_t>(out, 0);
  Put<int64_t>(out, record.image_id);
  Put<uint32_t>(out, Count32(record.objects.size(), "objects"));
  Put<uint32_t>(out, Count32(record.polygon_ends.size(), "polygons"));
  Put<uint32_t>(out, Count32(record.coordinates.size(), "coordinates"));
  Put<uint32_t>(out, Count32(record.masks.size(), "masks"));
  Put<uint32_t>(out, Count32(runs, "runs"));
  for (const DetectionObject& o : record.objects) {
    for (float v : o.box) Put<float>(out, v);
    Put<int64_t>(out, o.category);
    Put<float>(out, o.area);
    Put<uint8_t>(out, o.crowd ? 1 : 0);
    Put<uint8_t>(out, static_cast<uint8_t>(o.segmentation));
    Put<uint16_t>(out, 0);
    Put<uint32_t>(out, o.first);
    Put<uint32_t>(out, o.count);
  }
  for (uint32_t end : record.polygon_ends) Put<uint32_t>(out, end);
  for (const CocoRle& mask : record.masks) {
    Put<uint32_t>(out, static_cast<uint32_t>(mask.height));
    Put<uint32_t>(out, static_cast<uint32_t>(mask.width));
    Put<uint32_t>(out, static_cast<uint32_t>(mask.counts.size()));
  }
  for (double v : record.coordinates) Put<double>(out, v);
  for (const CocoRle& mask : record.masks) {
    for (uint32_t run : mask.counts) Put<uint32_t>(out, run);
  }
  return out;
}

DetectionRecord DecodeDetectionRecord(std::span<const uint8_t> bytes, std::string_view source) {
  auto fail = [&](const std::string& why) -> Error {
    return Error(std::string(source) + ": annotations: " + why);
  };
  if (bytes.size() < kHeaderBytes) {
    throw fail("damaged record: " + std::to_string(bytes.size()) +
               " bytes, shorter than its header");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    throw fail("not a feedline detection record (bad magic)");
  }
  RecordReader in(bytes.subspan(sizeof(kMagic)));
  const uint16_t version = in.Take<uint16_t>();
  if (version != kDetectionRecordVersion) {
    throw fail("record version " + std::to_string(version) + ", this feedline reads version " +
               std::to_string(kDetectionRecordVersion));
  }
  if (in.Take<uint16_t>() != 0) throw fail("damaged record: reserved bytes are not zero");
  DetectionRecord record;
  record.image_id = in.Take<int64_t>();
  const uint64_t objects = in.Take<uint32_t>();
  const uint64_t polygons = in.Take<uint32_t>();
  const uint64_t coordinates = in.Take<uint32_t>();
  const uint64_t masks = in.Take<uint32_t>();
  const uint64_t runs = in.Take<uint32_t>();
  // Each term is below 2^32 times a small size: no overflow in 64 bits.
  const uint64_t expected = kHeaderBytes + kObjectBytes * objects + 4 * polygons +
                            kMaskBytes * masks + 8 * coordinates + 4 * runs;
  if (expected != bytes.size()) {
    throw fail("damaged record: its counts (" + std::to_string(objects) + " objects, " +
               std::to_string(polygons) + " polygons, " + std::to_string(masks) +
               " masks) make " + std::to_string(expected) + " bytes, the record has " +
               std::to_string(bytes.size()));
  }
  record.objects.resize(objects);
  for (uint64_t i = 0; i < objects; ++i) {
    DetectionObject& o = record.objects[i];
    const std::string which = "object " + std::to_string(i) + ": ";
    for (float& v : o.box) v = in.Take<float>();
    o.category = in.Take<int64_t>();
    o.area = in.Take<float>();
    const uint8_t crowd = in.Take<uint8_t>();
    const uint8_t segmentation = in.Take<uint8_t>();
    const uint16_t reserved = in.Take<uint16_t>();
    o.first = in.Take<uint32_t>();
    o.count = in.Take<uint32_t>();
    if (crowd > 1 || reserved != 0) throw fail(which + "a flag is neither 0 nor 1");
    if (segmentation > static_cast<uint8_t>(CocoSegmentation::kRle)) {
      throw fail(which + "unknown segmentation " + std::to_string(segmentation));
    }
    o.crowd = crowd == 1;
    o.segmentation = static_cast<CocoSegmentation>(segmentation);
    for (float v : o.box) {
      if (!std::isfinite(v)) throw fail(which + "its box is not finite numbers");
    }
    if (!std::isfinite(o.area)) throw fail(which + "its area is not a finite number");
    const bool fits =
        o.segmentation == CocoSegmentation::kNone ||
        (o.segmentation == CocoSegmentation::kPolygons && o.first <= polygons &&
         o.count <= polygons - o.first) ||
        (o.segmentation == CocoSegmentation::kRle && o.first < masks && o.count == 1);
    if (!fits) throw fail(which + "its segmentation is outside the record's polygons and masks");
  }
  record.polygon_ends.resize(polygons);
  uint64_t previous = 0;
  for (uint32_t& end : record.polygon_ends) {
    end = in.Take<uint32_t>();
    if (end < previous || end > coordinates || (end - previous) % 2 != 0) {
      throw fail("a polygon is outside the coordinates or not x, y pairs");
    }
    previous = end;
  }
  if (previous != coordinates) throw fail("coordinates not used by any polygon");
  record.masks.resize(masks);
  uint64_t mask_runs = 0;
  for (CocoRle& mask : record.masks) {
    const uint32_t height = in.Take<uint32_t>();
    const uint32_t width = in.Take<uint32_t>();
    const uint32_t count = in.Take<uint32_t>();
    if (height > static_cast<uint32_t>(std::numeric_limits<int>::max()) ||
        width > static_cast<uint32_t>(std::numeric_limits<int>::max()) ||
        count > runs - mask_runs) {
      throw fail("a mask's size or runs are out of range");
    }
    mask.height = static_cast<int>(height);
    mask.width = static_cast<int>(width);
    mask.counts.resize(count);
    mask_runs += count;
  }
  if (mask_runs != runs) throw fail("runs not used by any mask");
  record.coordinates.resize(coordinates);
  for (double& v : record.coordinates) {
    v = in.Take<double>();
    if (!std::isfinite(v)) throw fail("a polygon's coordinate is not a finite number");
  }
  for (CocoRle& mask : record.masks) {
    uint64_t total = 0;
    for (uint32_t& run : mask.counts) {
      run = in.Take<uint32_t>();
      total += run;
    }
    if (total != static_cast<uint64_t>(mask.height) * static_cast<uint64_t>(mask.width)) {
      throw fail("a mask's runs do not cover its height x width");
    }
  }
  return record;
}

}  // namespace feedline::vision
