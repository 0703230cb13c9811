// Bindings of include/edgeprof/rank.hpp and projection.hpp: type conversion only.
#include "bind_analysis.hpp"

#include <pybind11/stl.h>

#include <edgeprof/projection.hpp>
#include <edgeprof/rank.hpp>
#include <edgeprof/result.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace edgeprof;

void bind_analysis(py::module_& m) {
  // Ranking and projection (issue 4).
  m.def("figure", &figure, py::arg("result"), py::arg("name"),
        "The value of a named figure of a result (wall_time_s, peak_memory_bytes, "
        "phase.<name>.wall_time_s, ...).");
  m.def("figures", &figures, py::arg("result"), "Every named figure of a result.");
  m.def("is_figure_name", &is_figure_name, py::arg("name"),
        "Whether figures() gives a figure of this name for some result.");
  m.def("check_figure_name", &check_figure_name, py::arg("name"), py::arg("what"),
        "Error unless is_figure_name(name), naming `what` and the names there are.");
  m.def("is_size_figure", &is_size_figure, py::arg("name"),
        "Whether a figure of this name is a number of bytes (its name ends in _bytes).");
  m.def("figure_samples",
        py::overload_cast<const RepeatedResult&, const std::string&>(&figure_samples),
        py::arg("result"), py::arg("name"),
        "The values of a figure over the counted runs of a RepeatedResult; Error when a run "
        "failed (its figures would measure the failure).");
  m.def("figure_samples", py::overload_cast<const Result&, const std::string&>(&figure_samples),
        py::arg("result"), py::arg("name"),
        "A run's figure as one sample; Error when the run failed.");

  py::class_<RankedItem>(m, "RankedItem", "One item of a ranking.")
      .def_readonly("name", &RankedItem::name)
      .def_readonly("index", &RankedItem::index)
      .def_readonly("value", &RankedItem::value)
      .def_readonly("n", &RankedItem::n)
      .def_readonly("rank", &RankedItem::rank)
      .def_readonly("tied", &RankedItem::tied)
      .def("__repr__", [](const RankedItem& r) {
        return "RankedItem(rank=" + std::to_string(r.rank) + (r.tied ? " tied" : "") +
               ", name=" + py::repr(py::str(r.name)).cast<std::string>() +
               ", value=" + py::repr(py::float_(r.value)).cast<std::string>() + ")";
      });
  m.def(
      "_rank",
      [](const std::vector<std::string>& names, const std::vector<std::vector<double>>& samples,
         bool higher_is_better, const std::string& test, double alpha) {
        if (names.size() != samples.size()) throw py::value_error("names and samples differ");
        std::vector<RankItem> items;
        for (size_t i = 0; i < names.size(); ++i) items.push_back({names[i], samples[i]});
        RankOptions o;
        o.higher_is_better = higher_is_better;
        o.alpha = alpha;
        if (test == "mann-whitney") {
          o.test = RankTest::mann_whitney;
        } else if (test == "welch") {
          o.test = RankTest::welch;
        } else {
          throw py::value_error("test must be 'mann-whitney' or 'welch', not '" + test + "'");
        }
        return rank(items, o);
      },
      py::arg("names"), py::arg("samples"), py::arg("higher_is_better"), py::arg("test"),
      py::arg("alpha"));
  m.def("mann_whitney_p", &mann_whitney_p, py::arg("a"), py::arg("b"));
  m.def("welch_p", &welch_p, py::arg("a"), py::arg("b"));

  py::class_<Agreement>(m, "Agreement", "Agreement between two orderings of the same items.")
      .def_readonly("coefficient", &Agreement::coefficient)
      .def_readonly("p_value", &Agreement::p_value)
      .def_readonly("exact", &Agreement::exact)
      .def_readonly("n", &Agreement::n)
      .def("__repr__", [](const Agreement& a) {
        return "Agreement(coefficient=" + py::repr(py::float_(a.coefficient)).cast<std::string>() +
               ", p_value=" + py::repr(py::float_(a.p_value)).cast<std::string>() +
               (a.exact ? ", exact" : ", asymptotic") + ", n=" + std::to_string(a.n) + ")";
      });
  m.def("spearman", &spearman, py::arg("x"), py::arg("y"),
        "Spearman's rho (ties: average ranks) with a two-sided p-value.");
  m.def("kendall", &kendall, py::arg("x"), py::arg("y"),
        "Kendall's tau-b (ties handled) with a two-sided p-value.");
  m.def("pareto_front", &pareto_front, py::arg("metrics"), py::arg("maximize"),
        "metrics[m][i] = item i's value of metric m; returns one flag per item: on the front.");

  py::class_<BudgetCheck>(m, "BudgetCheck", "Whether a figure fits a budget, and by how much.")
      .def_readonly("fits", &BudgetCheck::fits)
      .def_readonly("value", &BudgetCheck::value)
      .def_readonly("limit", &BudgetCheck::limit)
      .def_readonly("margin", &BudgetCheck::margin)
      .def_readonly("margin_fraction", &BudgetCheck::margin_fraction)
      .def_readonly("confidence", &BudgetCheck::confidence)
      .def_readonly("provenance", &BudgetCheck::provenance)
      .def("__repr__", [](const BudgetCheck& c) {
        std::string conf = c.confidence
                               ? py::repr(py::float_(*c.confidence)).cast<std::string>()
                               : std::string("None");
        return std::string("BudgetCheck(fits=") + (c.fits ? "True" : "False") +
               ", value=" + py::repr(py::float_(c.value)).cast<std::string>() +
               ", limit=" + py::repr(py::float_(c.limit)).cast<std::string>() +
               ", confidence=" + conf + ", provenance='" + c.provenance + "')";
      });

  py::class_<Prediction>(m, "Prediction", "A projected figure with its prediction interval.")
      .def_readonly("estimate", &Prediction::estimate)
      .def_readonly("low", &Prediction::low)
      .def_readonly("high", &Prediction::high)
      .def_readonly("confidence", &Prediction::confidence)
      .def_readonly("dof", &Prediction::dof)
      .def_readonly("provenance", &Prediction::provenance)
      .def("__repr__", [](const Prediction& p) {
        return "Prediction(estimate=" + py::repr(py::float_(p.estimate)).cast<std::string>() +
               ", interval=(" + py::repr(py::float_(p.low)).cast<std::string>() + ", " +
               py::repr(py::float_(p.high)).cast<std::string>() + ") at " +
               py::repr(py::float_(p.confidence)).cast<std::string>() + ", projected)";
      });
  m.def("check_budget", py::overload_cast<double, double>(&check_budget), py::arg("value"),
        py::arg("limit"));
  m.def("check_budget", py::overload_cast<const Prediction&, double>(&check_budget),
        py::arg("prediction"), py::arg("limit"));

  py::class_<Projection>(m, "Projection",
                         "device figure ~ f(what edgeprof measured), fitted on calibration "
                         "workloads measured once on the real device.")
      .def_static(
          "fit",
          [](const py::object& x, const std::vector<double>& y, const std::string& model,
             double ridge, const std::optional<std::vector<std::string>>& features,
             const std::string& target) {
            FitOptions o;
            o.model = fit_model_from_string(model);
            o.ridge = ridge;
            if (features) o.features = *features;
            o.target = target;
            // One feature (a flat sequence) or several (one row per point).
            std::vector<std::vector<double>> rows;
            for (const py::handle& item : x) {
              if (py::isinstance<py::sequence>(item) || py::hasattr(item, "__len__")) {
                rows.push_back(item.cast<std::vector<double>>());
              } else {
                rows.push_back({item.cast<double>()});
              }
            }
            return Projection::fit(rows, y, o);
          },
          py::arg("x"), py::arg("y"), py::arg("model") = "auto", py::arg("ridge") = 0.0,
          py::arg("features") = py::none(), py::arg("target") = "y",
          "x: measured under emulation (one value per point, or one row of features per "
          "point); y: the device's figures. model: linear, origin, loglog, theil_sen, multi or "
          "auto (smallest leave-one-out error).")
      .def_property_readonly("model", [](const Projection& p) { return to_string(p.model()); })
      .def_property_readonly("reason", &Projection::reason)
      .def_property_readonly("features", &Projection::features)
      .def_property_readonly("target", &Projection::target)
      .def_property_readonly("coefficients", &Projection::coefficients)
      .def_property_readonly("standard_errors", &Projection::standard_errors)
      .def_property_readonly("coefficient_names", &Projection::coefficient_names)
      .def_property_readonly("r_squared", &Projection::r_squared)
      .def_property_readonly("residual_standard_error", &Projection::residual_standard_error)
      .def_property_readonly("dof", &Projection::dof)
      .def_property_readonly("points", &Projection::points)
      .def_property_readonly("loo_ape", &Projection::loo_ape)
      .def_property_readonly("loo_ape_median", &Projection::loo_ape_median)
      .def_property_readonly("loo_ape_max", &Projection::loo_ape_max)
      .def_property_readonly("loo_within_10pct", &Projection::loo_within_10pct)
      .def(
          "predict",
          [](const Projection& p, const py::object& x, double confidence) {
            if (py::isinstance<py::sequence>(x)) {
              return p.predict(x.cast<std::vector<double>>(), confidence);
            }
            return p.predict(x.cast<double>(), confidence);
          },
          py::arg("x"), py::arg("confidence") = 0.95,
          "The projected figure with its prediction interval (Student t).")
      .def("__str__", &Projection::to_text);

  py::class_<Calibration>(m, "Calibration", "A projection for one device (and model family).")
      .def(py::init([](std::string device, const Projection& projection, std::string family,
                       std::string core_emulation) {
             return Calibration{std::move(device), std::move(family), projection,
                                std::move(core_emulation)};
           }),
           py::arg("device"), py::arg("projection"), py::arg("family") = "",
           py::arg("core_emulation") = "")
      .def_readonly("device", &Calibration::device)
      .def_readonly("family", &Calibration::family)
      .def_readonly("projection", &Calibration::projection)
      .def_readonly("core_emulation", &Calibration::core_emulation,
                    "How the runs its features came from emulated the device's cores "
                    "('projected', 'pooled', 'per-core'); '' when not recorded.");
  m.def("calibrations_to_json", &calibrations_to_json, py::arg("calibrations"));
  m.def("calibrations_from_json", &calibrations_from_json, py::arg("text"));
  m.def("find_calibration", &find_calibration, py::arg("calibrations"), py::arg("device"),
        py::arg("target"), py::arg("family") = "", py::arg("core_emulation") = "");
  m.def("project", &project, py::arg("calibration"), py::arg("result"),
        py::arg("confidence") = 0.95,
        "The device figure a calibration projects from a result's figures.");
}
