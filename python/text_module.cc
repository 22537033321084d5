// feedline._feedline.text: token documents, packing and mixing
// (feedline.io.TokenDataset, PackOptions, MixedDataset; docs/text.md). The
// Python files check and name the arguments; this file converts them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <tuple>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"
#include "feedline/sampler.h"
#include "feedline/storage/remote_file_cache.h"
#include "feedline/storage/remote_file_reader.h"
#include "feedline/text/columnar_dataset.h"
#include "feedline/text/mixed_dataset.h"
#include "feedline/text/pack_batch_sampler.h"
#include "feedline/text/pack_plan.h"
#include "feedline/text/pack_schedule.h"
#include "feedline/text/packed_dataset.h"
#include "feedline/text/row_group_source.h"
#include "feedline/text/token_dataset.h"
#include "python/object_fields.h"
#include "python/python_support.h"

namespace py = pybind11;

namespace feedline::python {

namespace {

using text::PackOptions;

PackOptions ToPackOptions(int64_t seq_len, const std::string& strategy, int64_t max_segments,
                          int64_t open_rows, const std::string& long_documents) {
  PackOptions options;
  options.seq_len = seq_len;
  options.strategy = text::ParsePackStrategy(strategy);
  options.max_segments = max_segments;
  options.open_rows = open_rows;
  options.long_documents = text::ParseLongDocuments(long_documents);
  options.Check();
  return options;
}

template <typename T>
py::array_t<T> ToArray(const std::vector<T>& values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

// A plan as numpy arrays: document, offset and length of every piece, and
// the offsets of the rows into them.
py::dict PlanToPython(const text::PackPlan& plan) {
  std::vector<int64_t> documents, offsets, lengths;
  documents.reserve(plan.pieces.size());
  offsets.reserve(plan.pieces.size());
  lengths.reserve(plan.pieces.size());
  for (const text::PackPiece& p : plan.pieces) {
    documents.push_back(p.document);
    offsets.push_back(p.offset);
    lengths.push_back(p.length);
  }
  py::dict out;
  out["document"] = ToArray(documents);
  out["offset"] = ToArray(offsets);
  out["length"] = ToArray(lengths);
  out["row_offsets"] = ToArray(plan.row_offsets);
  out["tokens"] = plan.tokens;
  out["dropped_documents"] = plan.dropped_documents;
  out["dropped_tokens"] = plan.dropped_tokens;
  return out;
}

std::shared_ptr<const Sampler> DocumentSampler(const py::object& sampler) {
  if (!py::isinstance<Sampler>(sampler)) {
    throw py::type_error("packing: the documents' sampler must be a native feedline sampler, got " +
                         py::repr(sampler).cast<std::string>());
  }
  return sampler.cast<std::shared_ptr<Sampler>>();
}

// Keeps a Python object (an array whose buffer a DecodedColumn views) alive
// until the last holder lets go, on whichever thread that is.
std::shared_ptr<const void> HoldWithGil(py::object object) {
  auto* held = new py::object(std::move(object));
  return std::shared_ptr<const void>(held->ptr(), [held](const void*) {
    py::gil_scoped_acquire gil;
    delete held;
  });
}

// Row groups read by a Python callable (feedline/io/columnar.py, with
// pyarrow): read(group) returns one (values, offsets) pair of numpy arrays
// per column, offsets None for scalars. Python runs once per row group, never
// per row; the values are the arrays' own buffers (pyarrow's), not copied.
//
// Remote files behind the node's cache (`files`, with `file_of_group`: the
// cache's file of each group, -1 for a local one): a group's file is made
// present in the cache here, in C++ without the GIL, before Python is
// called to decode it from the local copy; and the epoch's plan of groups
// becomes the cache's plan of files, which it fetches ahead.
class PyRowGroupSource : public text::RowGroupSource {
 public:
  PyRowGroupSource(py::object read, std::vector<int64_t> rows, std::vector<std::string> names,
                   std::shared_ptr<const storage::RemoteFileCache> files = nullptr,
                   std::vector<int64_t> file_of_group = {})
      : read_(std::move(read)),
        rows_(std::move(rows)),
        names_(std::move(names)),
        files_(std::move(files)),
        file_of_group_(std::move(file_of_group)) {
    if (names_.size() != rows_.size()) throw Error("ColumnarDataset: one name per row group");
    if (files_ != nullptr && file_of_group_.size() != rows_.size()) {
      throw Error("ColumnarDataset: one cached file (or -1) per row group");
    }
  }
  ~PyRowGroupSource() override {
    py::gil_scoped_acquire gil;
    read_ = py::object();
  }

  std::vector<int64_t> RowsPerGroup() const override { return rows_; }
  std::string Describe(int64_t group) const override {
    return names_.at(static_cast<size_t>(group));
  }

  text::DecodedRowGroup Read(int64_t group) const override {
    text::DecodedRowGroup out;
    out.rows = rows_.at(static_cast<size_t>(group));
    if (const int64_t file = CachedFileOf(group); file >= 0) {
      try {
        files_->Ensure(static_cast<size_t>(file));
      } catch (const std::exception& e) {
        throw Error(names_[static_cast<size_t>(group)] + ": " + e.what());
      }
    }
    py::gil_scoped_acquire gil;
    try {
      py::list columns = read_(group);
      out.columns.resize(columns.size());
      for (size_t c = 0; c < columns.size(); ++c) {
        py::tuple pair = columns[c].cast<py::tuple>();
        text::DecodedColumn& column = out.columns[c];
        py::array values = py::array::ensure(pair[0], py::array::c_style);
        if (!values) throw Error(names_[static_cast<size_t>(group)] + ": column values unreadable");
        column.values = std::span<const std::byte>(static_cast<const std::byte*>(values.data()),
                                                   static_cast<size_t>(values.nbytes()));
        column.owner = HoldWithGil(std::move(values));
        if (!pair[1].is_none()) {
          auto offsets = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(
              pair[1]);
          if (!offsets) throw Error(names_[static_cast<size_t>(group)] + ": offsets unreadable");
          column.offsets.assign(offsets.data(), offsets.data() + offsets.size());
        }
      }
    } catch (py::error_already_set& e) {
      // The reader's message names the file, row group and column.
      throw Error(py::str(e.value()).cast<std::string>());
    }
    return out;
  }

  void PlanGroups(const std::vector<text::PlannedGroup>& plan) const override {
    if (files_ == nullptr) return;
    // Each file where its first group is first needed, last used where its
    // last group is.
    std::vector<storage::PlannedFile> files;
    std::vector<int64_t> entry_of(files_->size(), -1);
    for (const text::PlannedGroup& planned : plan) {
      const int64_t file = CachedFileOf(planned.group);
      if (file < 0) continue;
      int64_t& entry = entry_of[static_cast<size_t>(file)];
      if (entry < 0) {
        entry = static_cast<int64_t>(files.size());
        files.push_back(storage::PlannedFile{static_cast<size_t>(file), planned.last_use});
      }
      storage::PlannedFile& kept = files[static_cast<size_t>(entry)];
      kept.last_use = std::max(kept.last_use, planned.last_use);
    }
    files_->Plan(std::move(files));
  }
  void PlanProgress(int64_t delivered) const override {
    if (files_ != nullptr) files_->Progress(delivered);
  }
  // A dataset freed by Python (the GIL held) waits for its reads ahead,
  // which take the GIL to call `read`. GilRelease: a thread that waits so
  // during the interpreter's shutdown is parked, not ended.
  void WaitForReads(const std::function<void()>& wait) const override {
    if (PyGILState_Check()) {
      const GilRelease release;
      wait();
    } else {
      wait();
    }
  }

 private:
  int64_t CachedFileOf(int64_t group) const {
    return files_ == nullptr ? -1 : file_of_group_.at(static_cast<size_t>(group));
  }

  py::object read_;
  std::vector<int64_t> rows_;
  std::vector<std::string> names_;
  std::shared_ptr<const storage::RemoteFileCache> files_;
  std::vector<int64_t> file_of_group_;
};

DType ColumnDType(const std::string& name) {
  static const std::pair<const char*, DType> kNames[] = {
      {"u8", DType::kU8},   {"i8", DType::kI8},   {"i16", DType::kI16}, {"u16", DType::kU16},
      {"i32", DType::kI32}, {"i64", DType::kI64}, {"f16", DType::kF16}, {"f32", DType::kF32},
      {"f64", DType::kF64}, {"bool", DType::kBool}};
  for (const auto& [spelled, dtype] : kNames) {
    if (name == spelled) return dtype;
  }
  throw Error("ColumnarDataset: unknown dtype '" + name + "'");
}

// (column, field, kind, dtype, prefix) tuples from feedline/io/columnar.py.
// A bytes column whose prefix is "s" or "b" is an object field: strings and
// bytes come back as str / bytes objects, one per row (object_fields.h); the
// dataset's object_fields names them for the loader.
std::vector<text::ColumnSpec> ToColumnSpecs(
    const std::vector<std::tuple<std::string, std::string, std::string, std::string,
                                 std::string>>& columns) {
  std::vector<text::ColumnSpec> specs;
  for (const auto& [column, field, kind, dtype, prefix] : columns) {
    text::ColumnSpec spec;
    spec.column = column;
    spec.field = field;
    if (kind == "list") {
      spec.kind = text::ColumnKind::kList;
    } else if (kind == "scalar") {
      spec.kind = text::ColumnKind::kScalar;
    } else if (kind == "bytes") {
      spec.kind = text::ColumnKind::kBytes;
    } else {
      throw Error("ColumnarDataset: unknown column kind '" + kind + "'");
    }
    spec.dtype = ColumnDType(dtype);
    spec.prefix = prefix;
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::vector<int64_t> ToVector(const py::object& values) {
  if (values.is_none()) return {};
  auto array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(values);
  if (!array) throw Error("ColumnarDataset: expected an array of integers");
  return std::vector<int64_t>(array.data(), array.data() + array.size());
}

}  // namespace

void BindText(py::module_& m) {
  py::module_ t = m.def_submodule("text", "token documents, packing and mixing");

  // Parquet files over HTTP(S) / S3: pyarrow reads them through a Python
  // file whose reads are this reader's ranged GETs (columnar.py).
  py::class_<storage::RemoteFileReader, std::shared_ptr<storage::RemoteFileReader>>(
      t, "RemoteFileReader")
      .def(py::init<storage::RemoteOptions>(), py::arg("remote"))
      .def_static("is_url", [](const std::string& path) {
        return storage::RemoteFileReader::IsUrl(path);
      })
      .def("size", &storage::RemoteFileReader::Size, py::arg("url"),
           py::call_guard<py::gil_scoped_release>())
      .def("glob", &storage::RemoteFileReader::Glob, py::arg("pattern"),
           py::call_guard<py::gil_scoped_release>())
      .def(
          "read_into",
          [](const storage::RemoteFileReader& reader, const std::string& url, uint64_t offset,
             const py::buffer& into) {
            py::buffer_info info = into.request(/*writable=*/true);
            const auto size = static_cast<size_t>(info.size * info.itemsize);
            auto* dst = static_cast<uint8_t*>(info.ptr);
            py::gil_scoped_release release;
            reader.ReadRange(url, offset, size, dst);
            return size;
          },
          py::arg("url"), py::arg("offset"), py::arg("into"))
      .def_property_readonly("connections", &storage::RemoteFileReader::connections);

  // Served Parquet files in the node's cache (cache_dir): ensure(i) makes
  // file i present, downloading it without the GIL, and gives its path.
  py::class_<storage::RemoteFileCache, std::shared_ptr<storage::RemoteFileCache>>(
      t, "RemoteFileCache")
      .def(py::init<std::vector<std::string>, std::vector<uint64_t>, storage::RemoteOptions>(),
           py::arg("urls"), py::arg("sizes"), py::arg("remote"))
      .def("path", &storage::RemoteFileCache::Path, py::arg("file"))
      // The GIL is let go only to download: a thread that releases it for a
      // stat may wait a switch interval (5 ms) to get it back while another
      // thread runs Python, once per row group.
      .def(
          "ensure",
          [](const storage::RemoteFileCache& cache, size_t file) {
            if (cache.Present(file)) return cache.Path(file);
            py::gil_scoped_release release;
            return cache.Ensure(file);
          },
          py::arg("file"))
      .def_property_readonly("downloads", &storage::RemoteFileCache::downloads)
      .def_property_readonly("prefetches", &storage::RemoteFileCache::prefetches)
      .def_property_readonly("peak_bytes_ahead", &storage::RemoteFileCache::peak_bytes_ahead);

  py::class_<text::TokenDataset, Dataset, std::shared_ptr<text::TokenDataset>>(t, "TokenDataset")
      .def(py::init([](const py::array& tokens,
                       py::array_t<int64_t, py::array::c_style | py::array::forcecast> offsets,
                       const std::string& field) {
             std::vector<int32_t> narrow(static_cast<size_t>(tokens.size()));
             if (py::isinstance<py::array_t<int32_t>>(tokens) &&
                 (tokens.flags() & py::array::c_style)) {
               // int32 already (Arrow's and Parquet's usual token type): one copy.
               const auto* src = static_cast<const int32_t*>(tokens.data());
               std::copy(src, src + narrow.size(), narrow.begin());
             } else {
               auto wide = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(
                   tokens);
               if (!wide) throw Error("TokenDataset: tokens must be an array of integers");
               const int64_t* src = wide.data();
               for (size_t i = 0; i < narrow.size(); ++i) {
                 if (src[i] < std::numeric_limits<int32_t>::min() ||
                     src[i] > std::numeric_limits<int32_t>::max()) {
                   throw Error("TokenDataset: token " + std::to_string(src[i]) + " at " +
                               std::to_string(i) + " does not fit in 32 bits");
                 }
                 narrow[i] = static_cast<int32_t>(src[i]);
               }
             }
             std::vector<int64_t> starts(offsets.data(), offsets.data() + offsets.size());
             py::gil_scoped_release release;
             return std::make_shared<text::TokenDataset>(std::move(narrow), std::move(starts),
                                                         field);
           }),
           py::arg("tokens"), py::arg("offsets"), py::arg("field"))
      .def_property_readonly("field", &text::TokenDataset::field)
      .def_property_readonly("num_tokens", &text::TokenDataset::num_tokens)
      .def("length", &text::TokenDataset::Length, py::arg("index"));

  t.def(
      "lengths_of",
      [](const Dataset& documents) {
        std::vector<int64_t> lengths;
        {
          py::gil_scoped_release release;
          lengths = text::LengthsOf(documents);
        }
        return ToArray(lengths);
      },
      py::arg("documents"));

  // Token-budget batches over a native dataset's own lengths (a
  // TokenDataset's, from Parquet or Arrow), read in C++: no Python list.
  t.def(
      "dynamic_batch_sampler",
      [](const Dataset& documents, int64_t max_tokens, int64_t max_batch_size,
         int64_t bucket_size, bool shuffle, uint64_t seed) {
        DynamicBatchSampler::Options o{max_tokens, max_batch_size, bucket_size, shuffle, seed};
        py::gil_scoped_release release;
        return std::make_shared<DynamicBatchSampler>(documents, o);
      },
      py::arg("documents"), py::arg("max_tokens"), py::arg("max_batch_size"),
      py::arg("bucket_size"), py::arg("shuffle"), py::arg("seed"));

  t.def(
      "check_pack_options",
      [](int64_t seq_len, const std::string& strategy, int64_t max_segments, int64_t open_rows,
         const std::string& long_documents) {
        ToPackOptions(seq_len, strategy, max_segments, open_rows, long_documents);
      },
      "Raises ValueError naming the first packing option out of range.", py::arg("seq_len"),
      py::arg("strategy"), py::arg("max_segments"), py::arg("open_rows"),
      py::arg("long_documents"));

  t.def(
      "plan_packing",
      [](std::vector<int64_t> order, std::vector<int64_t> lengths, int64_t seq_len,
         const std::string& strategy, int64_t max_segments, int64_t open_rows,
         const std::string& long_documents) {
        const PackOptions options =
            ToPackOptions(seq_len, strategy, max_segments, open_rows, long_documents);
        text::PackPlan plan;
        {
          py::gil_scoped_release release;
          plan = text::PlanPacking(order, lengths, options);
        }
        return PlanToPython(plan);
      },
      py::arg("order"), py::arg("lengths"), py::arg("seq_len"), py::arg("strategy"),
      py::arg("max_segments"), py::arg("open_rows"), py::arg("long_documents"));

  py::class_<text::PackSchedule, std::shared_ptr<text::PackSchedule>>(t, "PackSchedule")
      .def(py::init([](std::vector<int64_t> lengths, const py::object& sampler, int64_t seq_len,
                       const std::string& strategy, int64_t max_segments, int64_t open_rows,
                       const std::string& long_documents) {
             return std::make_shared<text::PackSchedule>(
                 std::move(lengths), DocumentSampler(sampler),
                 ToPackOptions(seq_len, strategy, max_segments, open_rows, long_documents));
           }),
           py::arg("lengths"), py::arg("sampler"), py::arg("seq_len"), py::arg("strategy"),
           py::arg("max_segments"), py::arg("open_rows"), py::arg("long_documents"))
      .def(
          "rows",
          [](const text::PackSchedule& s, int64_t epoch) {
            std::shared_ptr<const text::PackPlan> plan;
            {
              py::gil_scoped_release release;
              plan = s.Rows(epoch);
            }
            return PlanToPython(*plan);
          },
          py::arg("epoch"));

  py::class_<text::PackedDataset, Dataset, std::shared_ptr<text::PackedDataset>>(t,
                                                                                 "PackedDataset")
      .def(py::init([](std::shared_ptr<Dataset> documents,
                       std::shared_ptr<text::PackSchedule> schedule,
                       const std::string& tokens_field, int64_t pad_id, bool shift_labels,
                       bool mask_boundaries) {
             text::PackedRowOptions options;
             options.tokens_field = tokens_field;
             options.pad_id = pad_id;
             options.shift_labels = shift_labels;
             options.mask_boundaries = mask_boundaries;
             py::gil_scoped_release release;
             return std::make_shared<text::PackedDataset>(std::move(documents),
                                                          std::move(schedule), options);
           }),
           py::arg("documents"), py::arg("schedule"), py::arg("tokens_field"), py::arg("pad_id"),
           py::arg("shift_labels"), py::arg("mask_boundaries"));

  py::class_<text::PackBatchSampler, BatchSampler, std::shared_ptr<text::PackBatchSampler>>(
      t, "PackBatchSampler")
      .def(py::init([](std::shared_ptr<text::PackSchedule> schedule, int64_t batch_size,
                       bool drop_last, int64_t num_replicas, int64_t rank) {
             return std::make_shared<text::PackBatchSampler>(std::move(schedule), batch_size,
                                                             drop_last, num_replicas, rank);
           }),
           py::arg("schedule"), py::arg("batch_size"), py::arg("drop_last"),
           py::arg("num_replicas"), py::arg("rank"))
      .def("global_position", &text::PackBatchSampler::GlobalPosition, py::arg("epoch"),
           py::arg("batches"))
      .def("resume_from", &text::PackBatchSampler::ResumeFrom, py::arg("epoch"), py::arg("rows"));

  py::class_<text::MixedDataset, Dataset, std::shared_ptr<text::MixedDataset>>(t, "MixedDataset")
      .def(py::init([](std::vector<std::shared_ptr<Dataset>> sources, std::vector<double> weights,
                       const std::string& stopping, int64_t num_samples,
                       std::vector<bool> shuffle, uint64_t seed, std::vector<int64_t> start,
                       const std::string& source_field) {
             text::MixOptions options;
             options.weights = std::move(weights);
             options.stopping = text::ParseMixStopping(stopping);
             options.num_samples = num_samples;
             options.shuffle = std::move(shuffle);
             options.seed = seed;
             options.start = std::move(start);
             options.source_field = source_field;
             std::vector<std::shared_ptr<const Dataset>> parts(sources.begin(), sources.end());
             py::gil_scoped_release release;
             return std::make_shared<text::MixedDataset>(std::move(parts), std::move(options));
           }),
           py::arg("sources"), py::arg("weights"), py::arg("stopping"), py::arg("num_samples"),
           py::arg("shuffle"), py::arg("seed"), py::arg("start"), py::arg("source_field"))
      .def("source_of", &text::MixedDataset::source_of, py::arg("index"))
      .def("row_of", &text::MixedDataset::row_of, py::arg("index"))
      .def("draws_before", &text::MixedDataset::DrawsBefore, py::arg("position"))
      .def("length", &text::MixedDataset::Length, py::arg("index"));

  py::class_<text::ColumnarDataset, Dataset, std::shared_ptr<text::ColumnarDataset>>(
      t, "ColumnarDataset")
      .def(py::init([](py::object read, std::vector<int64_t> rows, std::vector<std::string> names,
                       const std::vector<std::tuple<std::string, std::string, std::string,
                                                    std::string, std::string>>& columns,
                       int64_t max_row_groups, int64_t readahead, const py::object& row_map,
                       const py::object& lengths,
                       std::shared_ptr<const storage::RemoteFileCache> files,
                       std::vector<int64_t> file_of_group) {
             text::ColumnarOptions options;
             options.max_row_groups = max_row_groups;
             options.readahead = readahead;
             options.row_map = ToVector(row_map);
             options.lengths = ToVector(lengths);
             auto source = std::make_shared<PyRowGroupSource>(
                 std::move(read), std::move(rows), std::move(names), std::move(files),
                 std::move(file_of_group));
             auto specs = ToColumnSpecs(columns);
             py::gil_scoped_release release;
             return std::make_shared<text::ColumnarDataset>(std::move(source), std::move(specs),
                                                            std::move(options));
           }),
           py::arg("read"), py::arg("rows"), py::arg("names"), py::arg("columns"),
           py::arg("max_row_groups"), py::arg("readahead"), py::arg("row_map"),
           py::arg("lengths"), py::arg("files") = nullptr,
           py::arg("file_of_group") = std::vector<int64_t>())
      .def_property_readonly("num_row_groups", &text::ColumnarDataset::num_row_groups)
      .def_property_readonly("row_group_reads", &text::ColumnarDataset::row_group_reads)
      .def_property_readonly("row_groups_held", &text::ColumnarDataset::row_groups_held)
      .def_property_readonly("rows_kept", &text::ColumnarDataset::rows_kept)
      .def_property_readonly("kept_bytes", &text::ColumnarDataset::kept_bytes)
      .def_property_readonly("row_group_reads_ahead",
                             &text::ColumnarDataset::row_group_reads_ahead)
      .def_property_readonly("row_group_read_log", &text::ColumnarDataset::row_group_read_log)
      // At exit (feedline/io/columnar.py): the readers joined while Python
      // can still run them (WaitForReads lets the GIL go).
      .def("stop_reads_ahead", &text::ColumnarDataset::StopReadsAhead)
      .def_property_readonly("has_lengths", &text::ColumnarDataset::has_lengths)
      .def("length", &text::ColumnarDataset::Length, py::arg("index"))
      // The fields that hold str / bytes objects (string and binary
      // columns): the loader's batches give them as objects (MakeLoader).
      .def_property_readonly("object_fields", [](const text::ColumnarDataset& d) {
        std::vector<std::string> names;
        for (const text::ColumnSpec& c : d.columns()) {
          if (c.kind == text::ColumnKind::kBytes) names.push_back(c.field);
        }
        return names;
      });
}

}  // namespace feedline::python
