#include "python/held_objects.h"

#include <cstring>
#include <utility>

namespace feedline::python {
namespace {

// The ticket's field; the check value tells a ticket from other int64
// fields of that name.
constexpr const char* kTicketField = "held_object";
constexpr int64_t kCheck = 0x6665656474696b74;  // "feedtikt"

}  // namespace

void HeldObjects::Hold(const py::handle& item, Sample& out) {
  auto object = std::make_unique<PyRef>(py::reinterpret_borrow<py::object>(item));
  int64_t ticket[2] = {0, kCheck};
  std::unique_ptr<PyRef> replaced;  // dropped after the lock: its decref may run Python
  {
    std::lock_guard<std::mutex> lock(mu_);
    ticket[0] = next_serial_++;
    Held& held = held_[&out];
    replaced = std::move(held.object);
    held.serial = ticket[0];
    held.object = std::move(object);
  }
  std::memcpy(out.Allocate(kTicketField, DType::kI64, Shape({2})).raw(), ticket, sizeof(ticket));
}

py::object HeldObjects::Take(const Sample& sample) {
  if (sample.num_fields() != 1) return py::object();
  const Tensor* field = sample.Find(kTicketField);
  if (field == nullptr || field->dtype() != DType::kI64 || field->shape() != Shape({2})) {
    return py::object();
  }
  int64_t ticket[2];
  std::memcpy(ticket, field->raw(), sizeof(ticket));
  if (ticket[1] != kCheck) return py::object();
  std::unique_ptr<PyRef> object;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(&sample);
    if (it == held_.end() || it->second.serial != ticket[0]) return py::object();
    object = std::move(it->second.object);
    held_.erase(it);
  }
  return object->get();
}

}  // namespace feedline::python
