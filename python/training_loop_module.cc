// feedline._feedline: what the training loop and the loader tell each other:
// HardExampleSampler (hard_example_sampler.h) and LoopReport (loop_report.h)
// for feedline.io. Arguments arrive as numpy arrays checked in Python.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "feedline/hard_example_sampler.h"
#include "feedline/loop_report.h"

namespace py = pybind11;

namespace feedline::python {
namespace {

template <typename T>
std::vector<T> ListOf(const py::dict& state, const char* key) {
  if (!state.contains(key)) {
    throw py::value_error(std::string("HardExampleSampler.load_state_dict: the state has no '") +
                          key + "'");
  }
  return state[key].cast<std::vector<T>>();
}

}  // namespace

py::dict LoopReportToPython(const LoopReport& r) {
  py::dict d;
  d["epoch"] = r.epoch;
  d["batch"] = r.batch;
  d["batches_per_epoch"] = r.batches_per_epoch;
  d["end_of_epoch"] = r.end_of_epoch;
  d["steps"] = r.steps;
  d["batches"] = r.batches;
  d["samples"] = r.samples;
  d["seconds"] = r.seconds;
  d["step_s"] = r.step_s;
  d["wait_s"] = r.wait_s;
  d["wait_share"] = r.wait_share;
  d["start_wait_s"] = r.start_wait_s;
  d["samples_per_s"] = r.samples_per_s;
  d["workers"] = r.workers;
  d["worker_busy"] = r.worker_busy < 0 ? py::object(py::none()) : py::object(py::float_(r.worker_busy));
  d["top_stage"] = r.top_stage.empty() ? py::object(py::none()) : py::object(py::str(r.top_stage));
  d["top_stage_share"] = r.top_stage_share;
  d["bound"] = LoopBoundName(r.bound);
  d["verdict"] = r.verdict;
  d["text"] = FormatReportLine(r);
  return d;
}

void BindHardExample(py::module_& m) {
  py::class_<HardExampleSampler, Sampler, std::shared_ptr<HardExampleSampler>>(
      m, "_HardExampleSampler")
      .def(py::init([](int64_t n, uint64_t seed, std::optional<int64_t> num_samples, double decay,
                       double floor) {
             return std::make_shared<HardExampleSampler>(
                 n, seed, HardExampleOptions{num_samples, decay, floor});
           }),
           py::arg("n"), py::arg("seed"), py::arg("num_samples"), py::arg("decay"),
           py::arg("floor"))
      .def(
          "update",
          [](HardExampleSampler& s, py::array_t<int64_t, py::array::c_style> indices,
             py::array_t<double, py::array::c_style> losses) {
            std::span<const int64_t> i(indices.data(), static_cast<size_t>(indices.size()));
            std::span<const double> l(losses.data(), static_cast<size_t>(losses.size()));
            py::gil_scoped_release nogil;  // the loader's thread may be planning
            s.Update(i, l);
          },
          py::arg("indices"), py::arg("losses"))
      .def("probabilities",
           [](const HardExampleSampler& s) {
             std::vector<double> p;
             {
               py::gil_scoped_release nogil;
               p = s.Probabilities();
             }
             return py::array_t<double>(static_cast<py::ssize_t>(p.size()), p.data());
           })
      .def("state",
           [](const HardExampleSampler& s) {
             HardExampleSampler::State st;
             {
               py::gil_scoped_release nogil;
               st = s.state();
             }
             py::dict d;
             d["scores"] = st.scores;
             d["seen"] = std::vector<int>(st.seen.begin(), st.seen.end());
             d["planned_epoch"] = st.planned_epoch;
             d["planned"] = st.planned;
             return d;
           })
      .def("restore", [](HardExampleSampler& s, const py::dict& d) {
        HardExampleSampler::State st;
        st.scores = ListOf<double>(d, "scores");
        for (int v : ListOf<int>(d, "seen")) st.seen.push_back(v != 0 ? 1 : 0);
        if (!d.contains("planned_epoch")) {
          throw py::value_error("HardExampleSampler.load_state_dict: the state has no 'planned_epoch'");
        }
        st.planned_epoch = d["planned_epoch"].cast<int64_t>();
        st.planned = ListOf<double>(d, "planned");
        py::gil_scoped_release nogil;
        s.Restore(st);
      });

  m.def("_loop_bound_wait", [] { return kLoaderBoundWait; });
}

}  // namespace feedline::python
