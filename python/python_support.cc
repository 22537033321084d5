#include "python/python_support.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "python/bfloat16_fields.h"
#include "python/object_fields.h"

namespace feedline::python {
namespace {

thread_local const WorkerInfoScope* current_worker = nullptr;
// Loaders whose code this thread runs (nested loaders are allowed), and
// whether one of them was used from it.
thread_local std::vector<const void*> running_loaders;
thread_local bool misuse_seen = false;
std::atomic<unsigned long> main_thread{0};

// The feedline dtype a numpy array is stored as, or false if none fits.
bool ChooseDType(const py::dtype& dtype, DType* out) {
  const char kind = dtype.kind();
  const py::ssize_t size = dtype.itemsize();
  switch (kind) {
    case 'b':
      *out = DType::kBool;
      return true;
    case 'u':
      // uint32 and uint64 widen to int64 (torch 1.13 has neither dtype).
      *out = size == 1 ? DType::kU8 : (size == 2 ? DType::kU16 : DType::kI64);
      return true;
    case 'i':
      *out = size == 1 ? DType::kI8
             : size == 2 ? DType::kI16
             : size == 4 ? DType::kI32
                         : DType::kI64;
      return true;
    case 'f':
      // float128 narrows to float64, the widest dtype torch and Paddle have.
      *out = size == 2 ? DType::kF16 : (size == 4 ? DType::kF32 : DType::kF64);
      return true;
    default:
      return false;
  }
}

// `array` is a field's value as a numeric numpy array (IsObjectValue
// converted it and sent everything else to FillObjectField).
void FillField(const std::string& name, py::array array, const AllocateFn& allocate) {
  DType dtype;
  if (!ChooseDType(array.dtype(), &dtype)) {
    throw Error("field '" + name + "' has dtype " + std::string(py::str(array.dtype())) +
                ", which is not numeric");
  }
  const bool value_dtype_is_u64 = array.dtype().kind() == 'u' && array.dtype().itemsize() == 8;
  // Converts and makes contiguous only when needed.
  py::dtype target = NumpyDType(dtype);
  if (!array.dtype().is(target) && !array.dtype().equal(target)) {
    array = py::reinterpret_steal<py::array>(py::detail::npy_api::get().PyArray_FromAny_(
        array.ptr(), target.release().ptr(), 0, 0,
        py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_FORCECAST_,
        nullptr));
    if (!array) throw py::error_already_set();
  } else if (!(array.flags() & py::array::c_style)) {
    array = py::array::ensure(array, py::array::c_style);
  }
  if (array.ndim() > Shape::kMaxRank) {
    throw SampleError(FailureKind::kType, "",
                      "field '" + name + "' has " + std::to_string(array.ndim()) +
                          " dimensions; at most " + std::to_string(Shape::kMaxRank) +
                          " are supported");
  }
  if (value_dtype_is_u64 && array.size() > 0) {
    // Stored as int64: a value past its range would come back negative.
    const auto* values = static_cast<const int64_t*>(array.data());
    for (py::ssize_t i = 0; i < array.size(); ++i) {
      if (values[i] < 0) {
        throw SampleError(FailureKind::kType, "",
                          "field '" + name + "' holds the uint64 value " +
                              std::to_string(static_cast<uint64_t>(values[i])) +
                              ", above the int64 range that feedline stores integers in");
      }
    }
  }
  Shape shape;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) shape.push_back(array.shape(d));
  Tensor tensor = allocate(name, dtype, shape);
  if (tensor.bytes() > 0) std::memcpy(tensor.raw(), array.data(), tensor.bytes());
}

std::vector<py::ssize_t> Dims(const Tensor& tensor) {
  return std::vector<py::ssize_t>(tensor.shape().begin(), tensor.shape().end());
}

py::array ViewArray(const Tensor& tensor, const py::handle& owner) {
  if (tensor.raw() == nullptr) return CopyToArray(tensor);  // empty: nothing to view
  return py::array(NumpyDType(tensor.dtype()), Dims(tensor), std::vector<py::ssize_t>{},
                   tensor.raw(), owner);
}

// Nested samples: a leaf inside tuples, lists and dicts is a field whose name
// is its path. The top-level part is the element's index or the dict's key,
// as for flat samples; each level below adds kNestSeparator and 't' + index
// (a tuple or list) or 'd' + key (a dict), so the tree can be rebuilt from the
// names alone (they cross to the parent from worker processes).
constexpr char kNestSeparator = '\x1e';

bool IsNested(const std::string& name) { return name.find(kNestSeparator) != std::string::npos; }

// A dict key as a field-name part; keys holding the separators would be
// mistaken for structure.
std::string KeyName(const py::handle& key) {
  std::string name = py::str(key);
  if (name.find_first_of("\x1e\x1f") != std::string::npos) {
    throw SampleError(FailureKind::kType, "",
                      "the sample has a dict key " + py::repr(key).cast<std::string>() +
                          " holding a control character (\\x1e or \\x1f), which feedline "
                          "reserves");
  }
  return name;
}

// Adds the leaves of `value` under `path`. An empty tuple, list or dict is a
// leaf (an object field): it has no elements to collate.
void FlattenInto(const std::string& path, const py::handle& value, std::vector<std::string>* names,
                 std::vector<py::handle>* values) {
  PyObject* v = value.ptr();
  if ((PyTuple_Check(v) || PyList_Check(v)) && PySequence_Fast_GET_SIZE(v) > 0) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    for (Py_ssize_t i = 0; i < n; ++i) {
      FlattenInto(path + kNestSeparator + 't' + std::to_string(i), PySequence_Fast_GET_ITEM(v, i),
                  names, values);
    }
    return;
  }
  if (PyDict_Check(v) && PyDict_Size(v) > 0) {
    for (auto entry : py::reinterpret_borrow<py::dict>(value)) {
      FlattenInto(path + kNestSeparator + 'd' + KeyName(entry.first), entry.second, names, values);
    }
    return;
  }
  names->push_back(path);
  values->push_back(value);
}

std::vector<std::string> SplitPath(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = name.find(kNestSeparator, start);
    parts.push_back(name.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

// A nested tree of batch (or sample) values, rebuilt from field paths.
struct ValueTree {
  py::object leaf;
  char kind = 0;  // 't' or 'd' for a container
  std::vector<std::pair<std::string, std::unique_ptr<ValueTree>>> children;  // insertion order

  ValueTree& Child(const std::string& key) {
    for (auto& [k, child] : children) {
      if (k == key) return *child;
    }
    children.emplace_back(key, std::make_unique<ValueTree>());
    return *children.back().second;
  }

  // `name` without its object marker; parts after the first start with 't' or 'd'.
  void Insert(const std::string& name, py::object value) {
    const std::vector<std::string> parts = SplitPath(name);
    ValueTree* node = &Child(parts[0]);
    for (size_t i = 1; i < parts.size(); ++i) {
      node->kind = parts[i].empty() ? 'd' : parts[i][0];
      node = &node->Child(parts[i].empty() ? parts[i] : parts[i].substr(1));
    }
    node->leaf = std::move(value);
  }

  // A tuple's elements in index order; other entries (a padded element's
  // "<i>_lengths") follow, as extra arrays follow a flat tuple's elements.
  py::object ToPython() const {
    if (kind == 0) return leaf;
    if (kind == 'd') {
      py::dict out;
      for (const auto& [key, child] : children) out[py::str(key)] = child->ToPython();
      return out;
    }
    std::vector<std::pair<long long, const ValueTree*>> indexed;
    std::vector<const ValueTree*> others;
    for (const auto& [key, child] : children) {
      const bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
      if (digits) {
        indexed.emplace_back(std::stoll(key), child.get());
      } else {
        others.push_back(child.get());
      }
    }
    std::stable_sort(indexed.begin(), indexed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    py::tuple out(indexed.size() + others.size());
    size_t i = 0;
    for (const auto& entry : indexed) out[i++] = entry.second->ToPython();
    for (const ValueTree* other : others) out[i++] = other->ToPython();
    return out;
  }
};

// A stored field name as the user wrote it: without the marker of an object
// or bfloat16 field. A bfloat16 field's padding lengths ("<name><marker>
// _lengths", named by the collate) lose the marker too, as "<name>_lengths".
std::string PlainName(const std::string& name) {
  std::string plain = name;
  if (IsObjectFieldName(name, &plain)) return plain;
  const size_t marker = plain.find(kBFloat16Marker);
  if (marker != std::string::npos) plain.erase(marker, kBFloat16Marker.size());
  return plain;
}

// What a field holds, by its name's marker, for messages.
std::string_view FieldKind(const std::string& name) {
  if (IsObjectFieldName(name)) return "an object (not a numeric array)";
  return IsBFloat16FieldName(name) ? "a torch.bfloat16 tensor" : "a numeric array";
}

// The top-level parts of `names` in order, each once, without markers.
std::vector<std::string> TopLevelNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const std::string plain = PlainName(name);
    std::string top = plain.substr(0, plain.find(kNestSeparator));
    if (std::find(out.begin(), out.end(), top) == out.end()) out.push_back(std::move(top));
  }
  return out;
}

// How a field path reads in a message: meta[0]["k"].
std::string DisplayPath(const std::string& name) {
  const std::string plain = PlainName(name);
  const std::vector<std::string> parts = SplitPath(plain);
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string key = parts[i].empty() ? "" : parts[i].substr(1);
    out += !parts[i].empty() && parts[i][0] == 't' ? "[" + key + "]" : "[\"" + key + "\"]";
  }
  return out;
}

// Shapes `fields` (name, value) as `structure` says: a tuple of the top-level
// elements in the first sample's order (followed, when `extras`, by any other
// top-level field: lengths, the "replaced" mask), a dict, or the single value.
py::object Rebuild(const std::vector<std::pair<std::string, py::object>>& fields,
                   const Structure& structure, bool extras) {
  ValueTree root;
  for (const auto& [name, value] : fields) {
    root.Insert(PlainName(name), value);
  }
  const Structure::Kind kind = structure.kind();
  if (kind == Structure::kUnknown || kind == Structure::kDict) {
    py::dict out;
    for (const auto& [key, child] : root.children) out[py::str(key)] = child->ToPython();
    return out;
  }
  const std::vector<std::string> order = TopLevelNames(structure.names());
  py::list out;
  for (const std::string& name : order) {
    const ValueTree* node = nullptr;
    for (const auto& [key, child] : root.children) {
      if (key == name) node = child.get();
    }
    if (node == nullptr) throw Error("the batch has no field '" + DisplayPath(name) + "'");
    out.append(node->ToPython());
  }
  if (extras) {
    for (const auto& [key, child] : root.children) {
      if (std::find(order.begin(), order.end(), key) == order.end()) out.append(child->ToPython());
    }
  }
  if (kind == Structure::kSingle && out.size() == 1) return out[0];
  return py::tuple(out);
}

const char* KindName(Structure::Kind kind) {
  switch (kind) {
    case Structure::kSingle:
      return "single";
    case Structure::kTuple:
      return "tuple";
    case Structure::kDict:
      return "dict";
    default:
      return "unknown";
  }
}

}  // namespace

PyRef::~PyRef() {
  if (!Py_IsInitialized()) {
    object_.release();  // the interpreter is gone; nothing to give back
    return;
  }
  py::gil_scoped_acquire gil;
  object_ = py::object();
}

void GilRelease::SetMainThread() {
  main_thread.store(
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>());
}

GilRelease::~GilRelease() noexcept(false) {
  if (_Py_IsFinalizing() && PyThread_get_thread_ident() != main_thread.load()) {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  PyEval_RestoreThread(state_);
}

LoaderCodeScope::LoaderCodeScope(const void* key) : key_(key), previous_misuse_(misuse_seen) {
  running_loaders.push_back(key);
  misuse_seen = false;
}

LoaderCodeScope::~LoaderCodeScope() {
  running_loaders.pop_back();
  misuse_seen = previous_misuse_;
}

bool LoaderCodeScope::misuse() const { return misuse_seen; }

void CheckNotInsideLoader(const void* key, const char* what) {
  if (key == nullptr ||
      std::find(running_loaders.begin(), running_loaders.end(), key) == running_loaders.end()) {
    return;
  }
  misuse_seen = true;
  PyErr_Format(PyExc_RuntimeError,
               "DataLoader.%s was called from the loader's own dataset, collate_fn or "
               "worker_init_fn; a loader cannot be used from code it runs (it would wait for "
               "itself)",
               what);
  throw py::error_already_set();
}

void Structure::Declare(Kind kind, std::vector<std::string> names) {
  std::lock_guard<std::mutex> lock(mu_);
  names_ = std::move(names);
  kind_.store(kind, std::memory_order_release);
}

void Structure::SetSkeleton(const std::string& pickled) {
  if (pickled.empty() || has_skeleton()) return;
  std::lock_guard<std::mutex> lock(skeleton_mu_);
  if (has_skeleton_.load(std::memory_order_relaxed)) return;
  skeleton_ = pickled;
  has_skeleton_.store(true, std::memory_order_release);
}

std::string Structure::skeleton() const {
  std::lock_guard<std::mutex> lock(skeleton_mu_);
  return skeleton_;
}

std::string DescribeSample(const py::handle& item) {
  try {
    py::bytes pickled = py::module_::import("feedline._skeleton").attr("describe_pickled")(item);
    return std::string(pickled);
  } catch (py::error_already_set&) {
    return {};  // the sample's types are its own business; batches keep feedline's shape
  }
}

void Structure::Observe(Kind kind, const std::vector<std::string>& names) {
  if (!torch_bfloat16_) {
    for (const std::string& name : names) {
      if (IsBFloat16FieldName(name)) {
        throw SampleError(FailureKind::kType, "", BFloat16RefusedMessage(DisplayPath(name)));
      }
    }
  }
  Kind known = this->kind();
  if (known == kUnknown) {
    std::lock_guard<std::mutex> lock(mu_);
    known = kind_.load(std::memory_order_relaxed);
    if (known == kUnknown) {
      names_ = names;
      nested_ = std::any_of(names.begin(), names.end(), IsNested);
      kind_.store(kind, std::memory_order_release);
      return;
    }
  }
  const bool nested = nested_ || std::any_of(names.begin(), names.end(), IsNested);
  // The number of top-level elements (flat samples: one field each).
  auto elements = [&](const std::vector<std::string>& list) {
    return nested ? TopLevelNames(list).size() : list.size();
  };
  if (known != kind || (kind == kTuple && elements(names) != elements(names_))) {
    auto describe = [](Kind k, size_t n) {
      return k == kTuple ? "a tuple of " + std::to_string(n) : std::string(KindName(k));
    };
    throw SampleError(FailureKind::kType, "",
                      "the sample is " + describe(kind, elements(names)) +
                          " but the first sample was " + describe(known, elements(names_)));
  }
  // A field that is an object in one sample and an array (or a bfloat16
  // tensor) in another.
  auto what = [](const std::string& name) { return std::string(FieldKind(name)); };
  if (kind == kTuple && !nested) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (FieldKind(names[i]) != FieldKind(names_[i])) {
        throw SampleError(FailureKind::kType, "",
                          "element " + std::to_string(i) + " of the sample is " + what(names[i]) +
                              " but in the first sample it was " + what(names_[i]));
      }
    }
    return;
  }
  if (kind != kDict && !nested) return;
  for (const std::string& name : names) {
    const std::string plain = PlainName(name);
    for (const std::string& other : {plain, ObjectFieldName(plain), BFloat16FieldName(plain)}) {
      if (other == name || std::find(names_.begin(), names_.end(), other) == names_.end()) {
        continue;
      }
      const std::string where = kind == kTuple && !IsNested(plain)
                                    ? "element " + plain
                                    : (IsNested(plain) ? "'" + DisplayPath(plain) + "'"
                                                       : "key '" + plain + "'");
      throw SampleError(FailureKind::kType, "",
                        where + " of the sample is " + what(name) +
                            " but in the first sample it was " + what(other));
    }
  }
  if (!nested) return;
  // Nested tuples, lists and dicts must have the elements of the first
  // sample's, level by level (torch: "each element in list of batch should
  // be of equal size"); a top-level dict key may come and go as for flat dicts.
  const std::vector<std::string> tops = TopLevelNames(names);
  const std::vector<std::string> first_tops = TopLevelNames(names_);
  auto top_of = [](const std::string& name) {
    const std::string plain = PlainName(name);
    return plain.substr(0, plain.find(kNestSeparator));
  };
  auto present = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  // A leaf where the first sample had a container, or the reverse.
  auto contains_below = [](const std::vector<std::string>& list, const std::string& name) {
    const std::string plain = PlainName(name);
    const std::string prefix = plain + kNestSeparator;
    return std::any_of(list.begin(), list.end(),
                       [&](const std::string& n) { return n.compare(0, prefix.size(), prefix) == 0; });
  };
  for (const std::string& name : names) {
    if (!present(names_, name) && contains_below(names_, name)) {
      throw SampleError(FailureKind::kType, "",
                        "'" + DisplayPath(name) +
                            "' of the sample is not a tuple, list or dict, but in the first "
                            "sample it was one");
    }
  }
  for (const std::string& name : names_) {
    if (!present(names, name) && contains_below(names, name)) {
      throw SampleError(FailureKind::kType, "",
                        "'" + DisplayPath(name) +
                            "' of the sample is a tuple, list or dict, but in the first sample it "
                            "was not");
    }
  }
  for (const std::string& name : names) {
    if (present(first_tops, top_of(name)) && !present(names_, name)) {
      throw SampleError(FailureKind::kType, "",
                        "the sample has '" + DisplayPath(name) +
                            "', which the first sample did not have: nested tuples, lists and "
                            "dicts must have the same elements in every sample");
    }
  }
  for (const std::string& name : names_) {
    if (present(tops, top_of(name)) && !present(names, name)) {
      throw SampleError(FailureKind::kType, "",
                        "the sample lacks '" + DisplayPath(name) +
                            "', which the first sample had: nested tuples, lists and dicts must "
                            "have the same elements in every sample");
    }
  }
}

void FillFields(const py::handle& item, Structure& structure, const AllocateFn& allocate) {
  // An object field's name carries a marker (object_fields.h), so a field
  // that changes between an array and an object changes the layout. Nested
  // tuples, lists and dicts are flattened into one field per leaf, named by
  // their path (NestedFieldName), as torch's default_collate walks them.
  std::vector<std::string> names;
  std::vector<py::handle> values;
  Structure::Kind kind = Structure::kSingle;
  if (PyTuple_Check(item.ptr()) || PyList_Check(item.ptr())) {
    kind = Structure::kTuple;
    auto sequence = py::reinterpret_borrow<py::sequence>(item);
    const size_t n = sequence.size();
    for (size_t i = 0; i < n; ++i) {
      FlattenInto(std::to_string(i), PySequence_Fast_GET_ITEM(item.ptr(), i), &names, &values);
    }
  } else if (PyDict_Check(item.ptr())) {
    kind = Structure::kDict;
    for (auto entry : py::reinterpret_borrow<py::dict>(item)) {
      FlattenInto(KeyName(entry.first), entry.second, &names, &values);
    }
  } else {
    names.push_back("0");
    values.push_back(item);
  }
  std::vector<py::object> arrays(values.size());  // null for object fields
  for (size_t i = 0; i < values.size(); ++i) {
    if (!IsObjectValue(values[i], &arrays[i])) continue;
    // numpy could not take it: a torch.bfloat16 tensor travels as its bits.
    names[i] = TorchBFloat16Bits(values[i], &arrays[i]) ? BFloat16FieldName(names[i])
                                                       : ObjectFieldName(names[i]);
  }
  structure.Observe(kind, names);
  if (!structure.has_skeleton()) structure.SetSkeleton(DescribeSample(item));
  for (size_t i = 0; i < values.size(); ++i) {
    if (arrays[i]) {
      FillField(names[i], py::reinterpret_steal<py::array>(arrays[i].release()), allocate);
    } else {
      FillObjectField(names[i], values[i], allocate);
    }
  }
}

py::dtype NumpyDType(DType dtype) {
  switch (dtype) {
    case DType::kU8:
      return py::dtype::of<uint8_t>();
    case DType::kI32:
      return py::dtype::of<int32_t>();
    case DType::kI64:
      return py::dtype::of<int64_t>();
    case DType::kF16:
      return py::dtype("float16");
    case DType::kF32:
      return py::dtype::of<float>();
    case DType::kBool:
      return py::dtype::of<bool>();
    case DType::kF64:
      return py::dtype::of<double>();
    case DType::kI8:
      return py::dtype::of<int8_t>();
    case DType::kI16:
      return py::dtype::of<int16_t>();
    case DType::kU16:
      return py::dtype::of<uint16_t>();
  }
  throw Error("unknown dtype");
}

py::array CopyToArray(const Tensor& tensor) {
  py::array out(NumpyDType(tensor.dtype()), Dims(tensor));
  if (tensor.bytes() > 0) std::memcpy(out.mutable_data(), tensor.raw(), tensor.bytes());
  return out;
}

py::array ToArray(const std::vector<int64_t>& values) {
  py::array_t<int64_t> out(static_cast<py::ssize_t>(values.size()));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * 8);
  return out;
}

py::object SampleToPython(const Sample& sample, const Structure& structure) {
  std::vector<std::pair<std::string, py::object>> fields;
  fields.reserve(static_cast<size_t>(sample.num_fields()));
  for (int i = 0; i < sample.num_fields(); ++i) {
    const std::string& name = sample.field_name(i);
    const Tensor& tensor = sample.field(i);
    if (IsObjectFieldName(name)) {
      fields.emplace_back(name, DecodeObject(tensor));
      continue;
    }
    py::array array = CopyToArray(tensor);
    if (IsBFloat16FieldName(name)) {  // a torch tensor, as the dataset gave it
      fields.emplace_back(name, TorchBFloat16FromBits(array));
      continue;
    }
    // A scalar goes to Python as a numpy scalar, as the dataset gave it.
    fields.emplace_back(name, tensor.shape().rank() == 0 ? py::object(array[py::tuple()])
                                                         : py::object(array));
  }
  return Rebuild(fields, structure, /*extras=*/false);
}

py::object ShapeBatch(const Batch& batch, const Structure& structure) {
  // One capsule owns a copy of the handle; every array keeps it alive.
  py::capsule owner(new Batch(batch), [](void* p) { delete static_cast<Batch*>(p); });
  const int n = batch.num_fields();
  auto find = [&](const std::string& name) {
    int i = 0;
    while (i < n && batch.field_name(i) != name) ++i;
    return i;
  };
  // Object fields become lists of objects; their "_lengths" field is theirs
  // alone and is not shown.
  std::vector<bool> used(static_cast<size_t>(n), false);
  std::vector<int> lengths_of(static_cast<size_t>(n), n);  // an object field's lengths
  for (int i = 0; i < n; ++i) {
    if (!IsObjectFieldName(batch.field_name(i))) continue;
    lengths_of[static_cast<size_t>(i)] = find(batch.field_name(i) + "_lengths");
    if (lengths_of[static_cast<size_t>(i)] < n) used[static_cast<size_t>(lengths_of[i])] = true;
  }
  std::vector<std::pair<std::string, py::object>> fields;
  fields.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (used[static_cast<size_t>(i)]) continue;  // an object field's lengths
    const std::string& name = batch.field_name(i);
    if (!IsObjectFieldName(name)) {
      py::array array = ViewArray(batch.field(i), owner);
      fields.emplace_back(name, IsBFloat16FieldName(name) ? TorchBFloat16FromBits(array)
                                                          : py::object(array));
      continue;
    }
    const int lengths = lengths_of[static_cast<size_t>(i)];
    fields.emplace_back(name,
                        DecodeObjectField(batch.field(i), lengths < n ? &batch.field(lengths) : nullptr));
  }
  return Rebuild(fields, structure, /*extras=*/true);
}

py::object StructureToPython(const Structure& structure) {
  const Structure::Kind kind = structure.kind();
  py::list names;
  if (kind != Structure::kUnknown) {
    for (const std::string& name : structure.names()) names.append(name);
  }
  return py::make_tuple(KindName(kind), names);
}

namespace {

// "KeyError", "mypkg.errors.Outer.BadRecord"; empty for a type without the
// usual attributes.
std::string QualifiedTypeName(py::handle type) {
  try {
    const std::string module = py::str(type.attr("__module__"));
    const std::string qualname = py::str(type.attr("__qualname__"));
    return module == "builtins" ? qualname : module + "." + qualname;
  } catch (py::error_already_set&) {
    return std::string();
  }
}

}  // namespace

std::string PythonErrorText(py::error_already_set& e) {
  std::string text = e.what();
  try {
    const std::string name = py::str(e.type().attr("__name__"));
    const std::string qualified = QualifiedTypeName(e.type());
    if (!qualified.empty() && text.compare(0, name.size(), name) == 0) {
      text = qualified + text.substr(name.size());
    }
  } catch (py::error_already_set&) {
    // A type without the usual attributes: its text as pybind11 gave it.
  }
  return text;
}

FailureOrigin PythonErrorOrigin(py::error_already_set& e) {
  FailureOrigin origin;
  origin.exception_type = QualifiedTypeName(e.type());
  return origin;
}

WorkerInfoScope::WorkerInfoScope(int worker_id, int num_workers, uint64_t seed, int64_t epoch,
                                 std::shared_ptr<PyRef> dataset)
    : worker_id(num_workers == 0 ? -1 : worker_id),
      num_workers(num_workers),
      seed(seed),
      epoch(epoch),
      dataset(std::move(dataset)),
      previous_(current_worker) {
  current_worker = this;
}

WorkerInfoScope::~WorkerInfoScope() { current_worker = previous_; }

py::object CurrentWorkerInfo() {
  const WorkerInfoScope* info = current_worker;
  if (info == nullptr || info->worker_id < 0) return py::none();
  return py::dict(py::arg("id") = info->worker_id, py::arg("num_workers") = info->num_workers,
                  py::arg("seed") = info->seed, py::arg("epoch") = info->epoch,
                  py::arg("dataset") = info->dataset->get());
}

namespace {

// An engine message names fields as stored; show nested paths and object
// fields as the user wrote them ("field 'meta[0]['k']'").
std::string Readable(const std::string& message) {
  if (message.find_first_of("\x1e\x1f") == std::string::npos) return message;
  std::string out;
  for (size_t i = 0; i < message.size();) {
    if (message.compare(i, 7, "\x1fobject") == 0) {
      i += 7;
    } else if (message.compare(i, kBFloat16Marker.size(), kBFloat16Marker) == 0) {
      i += kBFloat16Marker.size();
    } else if (message[i] == kNestSeparator && i + 1 < message.size()) {
      const bool index = message[i + 1] == 't';
      size_t end = i + 2;
      while (end < message.size() && message[end] != kNestSeparator && message[end] != '\'' &&
             message[end] != '\x1f' && message[end] != ' ') {
        ++end;
      }
      const std::string key = message.substr(i + 2, end - i - 2);
      out += index ? "[" + key + "]" : "[\"" + key + "\"]";
      i = end;
    } else {
      out += message[i++];
    }
  }
  return out;
}

}  // namespace

void RegisterExceptions(py::module_& m) {
  // Leaked on purpose: the types must outlive every translation.
  static py::handle sample_error =
      py::exception<SampleError>(m, "SampleError", PyExc_RuntimeError).inc_ref();
  static py::handle worker_init_error =
      py::exception<WorkerInitError>(m, "WorkerInitError", PyExc_RuntimeError).inc_ref();
  // Both `except feedline.SampleError` and `except TimeoutError` catch it.
  static py::handle timeout_error = [&] {
    py::tuple bases = py::make_tuple(py::reinterpret_borrow<py::object>(sample_error),
                                     py::reinterpret_borrow<py::object>(PyExc_TimeoutError));
    PyObject* type = PyErr_NewException("feedline._feedline.TimeoutError", bases.ptr(), nullptr);
    if (type == nullptr) throw py::error_already_set();
    m.add_object("TimeoutError", py::handle(type));
    return py::handle(type);
  }();
  py::register_exception_translator([](std::exception_ptr p) {
    auto raise = [](py::handle type, const SampleError& e) {
      py::object error = py::reinterpret_borrow<py::object>(type)(Readable(e.what()));
      error.attr("index") = e.index();
      error.attr("source") = e.source();
      error.attr("reason") = e.reason();
      error.attr("message") = Readable(e.message());
      // The facts a front end needs, as data (FailureOrigin): the type of
      // the dataset's exception; the worker process that died, its signal.
      const FailureOrigin& origin = e.origin();
      error.attr("exception_type") =
          origin.exception_type.empty() ? py::none() : py::cast(origin.exception_type);
      error.attr("worker_pid") = origin.worker_pid >= 0 ? py::cast(origin.worker_pid) : py::none();
      error.attr("signal") = origin.signal > 0 ? py::cast(origin.signal) : py::none();
      PyErr_SetObject(type.ptr(), error.ptr());
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TimeoutError& e) {
      raise(timeout_error, e);
    } catch (const SampleError& e) {
      raise(sample_error, e);
    } catch (const WorkerInitError& e) {
      PyErr_SetString(worker_init_error.ptr(), Readable(e.what()).c_str());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const OsError& e) {
      // OSError(errno, message, filename): Python makes it the subclass
      // for the number (FileNotFoundError, PermissionError, ...).
      py::object error = py::reinterpret_borrow<py::object>(PyExc_OSError)(
          e.error_number(), Readable(e.what()), e.path());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_ValueError, Readable(e.what()).c_str());
    }
  });
}

}  // namespace feedline::python
