#include "feedline/storage/hdf5_dataset.h"

#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

// Per-dataset chunk cache of compressed datasets: HDF5's default (1 MiB)
// holds less than one chunk of typical image rows, so every row would
// decompress its chunk again.
constexpr size_t kChunkCacheBytes = size_t{64} << 20;
constexpr size_t kChunkCacheSlots = 12421;  // a prime, as HDF5 advises
// Scratch buffer of Get (Pipeline::Run uses its own slots).
constexpr int kBytesSlot = 0;

std::mutex& GlobalHdf5Mutex() {
  static std::mutex mu;
  return mu;
}

// Holds the process-wide mutex around HDF5 calls when the library does not
// serialize them itself, and turns off HDF5's printing of error stacks for
// the calling thread (the messages go into the exceptions instead).
class Hdf5Lock {
 public:
  Hdf5Lock() {
    if (!HDF5Dataset::LibraryThreadSafe()) lock_ = std::unique_lock<std::mutex>(GlobalHdf5Mutex());
    thread_local bool quiet = false;
    if (!quiet) {
      H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
      quiet = true;
    }
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// The innermost message of the calling thread's HDF5 error stack.
std::string Hdf5Message() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned n, const H5E_error2_t* error, void* data) -> herr_t {
        auto* text = static_cast<std::string*>(data);
        if (error->desc != nullptr && error->desc[0] != '\0') {
          if (!text->empty()) *text += "; ";
          *text += error->desc;
        }
        return n >= 2 ? 1 : 0;  // the two innermost reasons are enough
      },
      &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "HDF5 error" : message;
}

// Closes an HDF5 object on every path out.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// Whether the dataset's chunks go through filters (gzip, shuffle, ...).
bool Compressed(hid_t dataset) {
  Id create(H5Dget_create_plist(dataset), H5Pclose);
  return create.get() >= 0 && H5Pget_nfilters(create.get()) > 0;
}

std::string LastComponent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The in-memory type and feedline dtype for an HDF5 numeric type; false if
// it is not one feedline stores.
bool NumericType(hid_t type, hid_t* memory, DType* dtype) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) {
    *memory = H5T_NATIVE_FLOAT;
    *dtype = DType::kF32;
    return true;
  }
  if (cls != H5T_INTEGER) return false;
  const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
  if (size == 1 && !is_signed) {
    *memory = H5T_NATIVE_UINT8;
    *dtype = DType::kU8;
  } else if (size <= 2 || (size == 4 && is_signed)) {
    *memory = H5T_NATIVE_INT32;
    *dtype = DType::kI32;
  } else {
    *memory = H5T_NATIVE_INT64;
    *dtype = DType::kI64;
  }
  return true;
}

}  // namespace

const char* HDF5FieldKindName(HDF5FieldKind kind) {
  switch (kind) {
    case HDF5FieldKind::kArray:
      return "array";
    case HDF5FieldKind::kImage:
      return "image";
    case HDF5FieldKind::kBytes:
      return "bytes";
    case HDF5FieldKind::kString:
      return "string";
  }
  return "unknown";
}

struct HDF5Dataset::Handles {
  pid_t pid = 0;
  hid_t file = -1;
  std::vector<hid_t> datasets;

  void Close() {
    for (hid_t d : datasets) {
      if (d >= 0) H5Dclose(d);
    }
    datasets.clear();
    if (file >= 0) H5Fclose(file);
    file = -1;
  }
};

bool HDF5Dataset::LibraryThreadSafe() {
  static const bool safe = [] {
    hbool_t is_safe = 0;
    return H5is_library_threadsafe(&is_safe) >= 0 && is_safe;
  }();
  return safe;
}

HDF5Dataset::HDF5Dataset(std::string path, std::vector<HDF5Field> fields,
                         std::optional<vision::Pipeline> pipeline)
    : path_(std::move(path)), pipeline_(std::move(pipeline)) {
  if (fields.empty()) throw Error(path_ + ": HDF5Dataset needs at least one field");
  if (pipeline_) pipeline_->CheckWithoutObjects(path_ + ": HDF5Dataset");
  for (const HDF5Field& field : fields) dataset_paths_.push_back(field.dataset);
  std::shared_ptr<const Handles> handles = Open();  // throws naming the file or dataset
  try {
    InspectFields(*handles, fields);
  } catch (...) {
    // A destructor does not run for a constructor that throws: the file is
    // closed here, or HDF5 would hand its open state to the next opening.
    Hdf5Lock lock;
    handles_->Close();
    handles_.reset();
    throw;
  }
}

void HDF5Dataset::InspectFields(const Handles& handles, const std::vector<HDF5Field>& fields) {
  Hdf5Lock lock;
  for (size_t i = 0; i < fields.size(); ++i) {
    Field field;
    field.dataset = fields[i].dataset;
    field.name = fields[i].name.empty() ? LastComponent(field.dataset) : fields[i].name;
    const std::string where = path_ + ": dataset '" + field.dataset + "'";
    for (const Field& other : fields_) {
      if (other.name == field.name) throw Error(where + ": field name '" + field.name + "' twice");
    }
    const hid_t dataset = handles.datasets[i];
    Id space(H5Dget_space(dataset), H5Sclose);
    Id type(H5Dget_type(dataset), H5Tclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 1) throw Error(where + ": a scalar; fields need one row per sample");
    if (rank > Shape::kMaxRank + 1)
      throw Error(where + ": rank " + std::to_string(rank) + " is too large");
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    const int64_t rows = static_cast<int64_t>(dims[0]);
    if (i == 0) {
      rows_ = rows;
    } else if (rows != rows_) {
      throw Error(where + ": " + std::to_string(rows) + " rows, but '" + fields_[0].dataset +
                  "' has " + std::to_string(rows_));
    }
    const H5T_class_t cls = H5Tget_class(type.get());
    hid_t memory = -1;
    if (NumericType(type.get(), &memory, &field.dtype)) {
      field.kind = HDF5FieldKind::kArray;
      field.memory_type = memory;
      for (int d = 1; d < rank; ++d) field.row_shape.push_back(static_cast<int64_t>(dims[d]));
    } else if (cls == H5T_VLEN) {
      Id base(H5Tget_super(type.get()), H5Tclose);
      if (H5Tget_class(base.get()) != H5T_INTEGER || H5Tget_size(base.get()) != 1) {
        throw Error(where + ": variable-length data of other than bytes is not supported");
      }
      if (rank != 1) throw Error(where + ": variable-length bytes must be one per row (1-D)");
      field.kind = fields[i].image.value_or(true) ? HDF5FieldKind::kImage : HDF5FieldKind::kBytes;
      if (field.kind == HDF5FieldKind::kImage && !pipeline_) {
        throw Error(where + ": an image field needs a pipeline");
      }
    } else if (cls == H5T_STRING) {
      if (rank != 1) throw Error(where + ": strings must be one per row (1-D)");
      field.kind = HDF5FieldKind::kString;
      field.fixed_string = H5Tis_variable_str(type.get()) > 0 ? 0 : H5Tget_size(type.get());
      // HDF5 converts between ASCII and UTF-8 strings only when the sets match.
      field.utf8 = H5Tget_cset(type.get()) == H5T_CSET_UTF8;
    } else {
      throw Error(where + ": HDF5 type class " + std::to_string(static_cast<int>(cls)) +
                  " is not supported (numbers, variable-length bytes and strings are)");
    }
    if (fields[i].image.value_or(false) && field.kind != HDF5FieldKind::kImage) {
      throw Error(where + ": marked as an image but holds " + HDF5FieldKindName(field.kind) +
                  ", not variable-length bytes");
    }
    fields_.push_back(std::move(field));
  }
}

HDF5Dataset::~HDF5Dataset() {
  std::lock_guard<std::mutex> guard(open_mu_);
  if (handles_ && handles_->pid == ::getpid()) {
    Hdf5Lock lock;
    handles_->Close();
  }
}

std::shared_ptr<const HDF5Dataset::Handles> HDF5Dataset::Open() const {
  std::lock_guard<std::mutex> guard(open_mu_);
  const pid_t pid = ::getpid();
  if (handles_ && handles_->pid == pid) return handles_;
  Hdf5Lock lock;
  if (handles_) {
    // Inherited across a fork: this process's copies are closed (the
    // parent's stay open) and the file is opened anew.
    handles_->Close();
    handles_.reset();
  }
  auto fresh = std::make_shared<Handles>();
  fresh->pid = pid;
  fresh->file = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fresh->file < 0) {
    // A file the system refuses (missing, unreadable) is an OsError, with
    // errno's reason; one HDF5 cannot read, HDF5's.
    struct stat st;
    if (::stat(path_.c_str(), &st) != 0) {
      const int error = errno;
      throw OsError(error, path_, path_ + ": cannot open HDF5 file: " + std::strerror(error));
    }
    throw Error(path_ + ": cannot open HDF5 file: " + Hdf5Message());
  }
  Id cached(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  H5Pset_chunk_cache(cached.get(), kChunkCacheSlots, kChunkCacheBytes, 1.0);
  Id uncached(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  H5Pset_chunk_cache(uncached.get(), 0, 0, 1.0);
  for (const std::string& name : dataset_paths_) {
    hid_t dataset = H5Dopen2(fresh->file, name.c_str(), cached.get());
    if (dataset >= 0 && !Compressed(dataset)) {
      // Without filters a row is read straight from its place in the file;
      // a cache would read (and keep) its whole chunk, which costs more for
      // rows visited in random order.
      H5Dclose(dataset);
      dataset = H5Dopen2(fresh->file, name.c_str(), uncached.get());
    }
    if (dataset < 0) {
      const std::string message = Hdf5Message();
      fresh->Close();
      throw Error(path_ + ": cannot open dataset '" + name + "': " + message);
    }
    fresh->datasets.push_back(dataset);
  }
  handles_ = fresh;
  return handles_;
}

std::string HDF5Dataset::Source(int64_t index) const {
  CheckIndex(index, size());
  return path_ + ":" + fields_[0].dataset + "[" + std::to_string(index) + "]";
}

std::vector<FieldSpec> HDF5Dataset::FixedFields() const {
  std::vector<FieldSpec> specs;
  for (const Field& field : fields_) {
    if (field.kind == HDF5FieldKind::kArray) {
      specs.push_back(FieldSpec{field.name, field.dtype, field.row_shape});
    } else if (field.kind == HDF5FieldKind::kImage) {
      if (std::optional<Shape> shape = pipeline_->FixedShape()) {
        specs.push_back(FieldSpec{field.name, pipeline_->dtype(), *shape});
      }
    }
  }
  return specs;
}

void HDF5Dataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  CheckIndex(index, size());
  std::shared_ptr<const Handles> handles;
  try {
    handles = Open();
  } catch (const Error& e) {
    throw SampleError(FailureKind::kIo, Source(index), e.what());
  }
  for (size_t i = 0; i < fields_.size(); ++i) ReadRow(*handles, i, index, out, ctx);
}

void HDF5Dataset::ReadRow(const Handles& handles, size_t f, int64_t row, Sample& out,
                          SampleContext& ctx) const {
  const Field& field = fields_[f];
  const hid_t dataset = handles.datasets[f];
  auto fail = [&](const std::string& message) {
    throw SampleError(FailureKind::kIo, path_ + ":" + field.dataset + "[" + std::to_string(row) + "]",
                      "cannot read row " + std::to_string(row) + " of dataset '" + field.dataset +
                          "' in " + path_ + ": " + message);
  };
  std::vector<uint8_t>& bytes = ctx.scratch(kBytesSlot);
  bool decode = false;
  {
    auto timer = ctx.Time(Stage::kRead);
    Hdf5Lock lock;
    Id file_space(H5Dget_space(dataset), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(file_space.get());
    std::vector<hsize_t> start(static_cast<size_t>(rank), 0);
    std::vector<hsize_t> count(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(file_space.get(), count.data(), nullptr);
    start[0] = static_cast<hsize_t>(row);
    count[0] = 1;
    if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                            nullptr) < 0) {
      fail(Hdf5Message());
    }
    // The row as a block of the same rank: one element per row for 1-D.
    Id memory_space(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
    switch (field.kind) {
      case HDF5FieldKind::kArray: {
        Tensor tensor = out.Allocate(field.name, field.dtype, field.row_shape);
        if (H5Dread(dataset, static_cast<hid_t>(field.memory_type), memory_space.get(),
                    file_space.get(), H5P_DEFAULT, tensor.raw()) < 0) {
          fail(Hdf5Message());
        }
        return;
      }
      case HDF5FieldKind::kImage:
      case HDF5FieldKind::kBytes: {
        Id type(H5Tvlen_create(H5T_NATIVE_UINT8), H5Tclose);
        hvl_t value{0, nullptr};
        if (H5Dread(dataset, type.get(), memory_space.get(), file_space.get(), H5P_DEFAULT,
                    &value) < 0) {
          fail(Hdf5Message());
        }
        const uint8_t* p = static_cast<const uint8_t*>(value.p);
        bytes.assign(p, p + value.len);
        H5Dvlen_reclaim(type.get(), memory_space.get(), H5P_DEFAULT, &value);
        decode = field.kind == HDF5FieldKind::kImage;
        break;
      }
      case HDF5FieldKind::kString: {
        Id type(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_cset(type.get(), field.utf8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
        if (field.fixed_string > 0) {
          H5Tset_size(type.get(), field.fixed_string);
          bytes.resize(field.fixed_string);
          if (H5Dread(dataset, type.get(), memory_space.get(), file_space.get(), H5P_DEFAULT,
                      bytes.data()) < 0) {
            fail(Hdf5Message());
          }
          // Fixed-length strings are padded with NULs.
          while (!bytes.empty() && bytes.back() == 0) bytes.pop_back();
        } else {
          H5Tset_size(type.get(), H5T_VARIABLE);
          char* value = nullptr;
          if (H5Dread(dataset, type.get(), memory_space.get(), file_space.get(), H5P_DEFAULT,
                      &value) < 0) {
            fail(Hdf5Message());
          }
          bytes.assign(value, value + (value ? std::strlen(value) : 0));
          H5Dvlen_reclaim(type.get(), memory_space.get(), H5P_DEFAULT, &value);
        }
        break;
      }
    }
  }
  if (decode) {
    const std::string source = path_ + ":" + field.dataset + "[" + std::to_string(row) + "]";
    pipeline_->Run(bytes, source, out, field.name, ctx);
    return;
  }
  Tensor tensor = out.Allocate(field.name, DType::kU8, Shape{static_cast<int64_t>(bytes.size())});
  if (!bytes.empty()) std::memcpy(tensor.raw(), bytes.data(), bytes.size());
}

}  // namespace feedline::storage
