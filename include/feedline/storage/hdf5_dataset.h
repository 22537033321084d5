// HDF5Dataset: samples are rows of one or more HDF5 datasets of the same
// length (the first dimension), read on demand through HDF5's chunk cache:
// never the whole file.
//
// A field's kind follows its HDF5 type:
//   array   integers and floats of any fixed row shape. The sample field has
//           the row's shape and one of feedline's dtypes (u8, i32, i64, f32;
//           int8/int16/uint16 are widened to i32, uint32/uint64 to i64,
//           float64 is narrowed to f32, by HDF5's own conversion). Declared
//           in FixedFields, so the row is read straight into the batch.
//   image   variable-length uint8 (h5py.vlen_dtype(np.uint8)) holding an
//           encoded JPEG, PNG or WebP, decoded by the Pipeline into the field.
//   bytes   variable-length uint8 not marked as an image: a 1-D u8 field.
//   string  fixed or variable-length strings: their bytes as a 1-D u8 field.
//
// Threads and processes: every HDF5 call holds a process-wide mutex unless
// H5is_library_threadsafe() says the library serializes itself (Debian's
// libhdf5 1.10 does); either way HDF5 reads one row at a time while decoding
// and transforms run in parallel. The file is opened by the process that
// reads it: Get() in a forked child (torch's DataLoader workers) closes the
// inherited handles and opens the file anew. A fork while another thread of
// the parent is inside an HDF5 call is unsafe (as for h5py).
//
// Errors: a file that cannot be opened (missing, truncated, not HDF5), a
// missing dataset, an unsupported type or datasets of different lengths
// throw Error naming the file and dataset. A row that cannot be read (a
// damaged chunk) is a SampleError naming the file, the dataset and the row.
//
// Example:
//   HDF5Dataset data("train.h5", {{"/images", "image", true}, {"/labels", "label", false}},
//                    TrainPipeline(224));
#ifndef FEEDLINE_STORAGE_HDF5_DATASET_H_
#define FEEDLINE_STORAGE_HDF5_DATASET_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/vision/pipeline.h"

namespace feedline::storage {

struct FEEDLINE_EXPORT HDF5Field {
  std::string dataset;  // path in the file, "/images" or "group/labels"
  std::string name;     // the sample's field; empty: the dataset's last path component
  // Decode the bytes as an image: true (it must be variable-length uint8),
  // false (never; a 1-D u8 field), or unset (if it is variable-length uint8).
  std::optional<bool> image;
};

enum class HDF5FieldKind { kArray, kImage, kBytes, kString };
FEEDLINE_EXPORT const char* HDF5FieldKindName(
    HDF5FieldKind kind);  // "array", "image", "bytes", "string"

class FEEDLINE_EXPORT HDF5Dataset : public Dataset {
 public:
  // `pipeline` decodes the image fields (required if there is one).
  // Throws Error as described above.
  HDF5Dataset(std::string path, std::vector<HDF5Field> fields,
              std::optional<vision::Pipeline> pipeline = std::nullopt);
  ~HDF5Dataset() override;
  HDF5Dataset(const HDF5Dataset&) = delete;
  HDF5Dataset& operator=(const HDF5Dataset&) = delete;

  int64_t size() const override { return rows_; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  // "FILE:/dataset[row]" of the first field.
  std::string Source(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;

  const std::string& path() const { return path_; }
  int num_fields() const { return static_cast<int>(fields_.size()); }
  const std::string& field_name(int i) const { return fields_[i].name; }
  HDF5FieldKind field_kind(int i) const { return fields_[i].kind; }

  // Whether the HDF5 library serializes its own calls (else feedline does).
  static bool LibraryThreadSafe();

 private:
  struct Field {
    std::string dataset;
    std::string name;
    HDF5FieldKind kind = HDF5FieldKind::kArray;
    DType dtype = DType::kU8;
    Shape row_shape;          // kArray
    int64_t memory_type = 0;  // hid_t of the in-memory type (kArray)
    size_t fixed_string = 0;  // bytes of a fixed-length string, 0 if variable
    bool utf8 = false;        // the string's character set
  };
  struct Handles;

  // The open file and datasets of this process (reopened after a fork).
  std::shared_ptr<const Handles> Open() const;
  // Classifies the fields' types into fields_ (throws Error).
  void InspectFields(const Handles& handles, const std::vector<HDF5Field>& fields);
  void ReadRow(const Handles& handles, size_t field, int64_t row, Sample& out,
               SampleContext& ctx) const;

  std::string path_;
  std::vector<std::string> dataset_paths_;
  std::vector<Field> fields_;
  std::optional<vision::Pipeline> pipeline_;
  int64_t rows_ = 0;
  mutable std::mutex open_mu_;
  mutable std::shared_ptr<Handles> handles_;  // guarded by open_mu_
};

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_HDF5_DATASET_H_
