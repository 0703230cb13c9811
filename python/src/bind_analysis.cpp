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
      .def_readonly("name", &RankedItem::name, "The item's name.")
      .def_readonly("index", &RankedItem::index, "The item's position in the input.")
      .def_readonly("value", &RankedItem::value, "The median of the item's samples.")
      .def_readonly("n", &RankedItem::n, "The number of samples.")
      .def_readonly("rank", &RankedItem::rank,
                    "1 + the number of items significantly better than this one (competition "
                    "ranking), never above an item with a better median; items the test cannot "
                    "separate share a rank.")
      .def_readonly("tied", &RankedItem::tied, "True when it shares its rank with another item.")
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
  m.def("mann_whitney_p", &mann_whitney_p, py::arg("a"), py::arg("b"),
        "Two-sided p-value of the Mann-Whitney U test comparing two samples (as "
        "scipy.stats.mannwhitneyu: exact when a sample has at most 8 values and there are no "
        "ties). Raises edgeprof.Error when a sample is empty or holds NaN or an infinity.");
  m.def("welch_p", &welch_p, py::arg("a"), py::arg("b"),
        "Two-sided p-value of Welch's t test comparing two samples. Raises edgeprof.Error when "
        "a sample has fewer than 2 values or holds NaN or an infinity.");

  py::class_<Agreement>(m, "Agreement", "Agreement between two orderings of the same items.")
      .def_readonly("coefficient", &Agreement::coefficient, "Spearman's rho or Kendall's tau-b.")
      .def_readonly("p_value", &Agreement::p_value,
                    "Two-sided p-value against no association.")
      .def_readonly("exact", &Agreement::exact,
                    "True when p_value comes from the exact distribution (Kendall without ties "
                    "up to 49 items, either coefficient up to 9 items); False when asymptotic, "
                    "as scipy.stats does.")
      .def_readonly("n", &Agreement::n, "The number of items.")
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
      .def_readonly("fits", &BudgetCheck::fits, "True when value <= limit.")
      .def_readonly("value", &BudgetCheck::value,
                    "The figure (the estimate when projected), in the figure's unit.")
      .def_readonly("limit", &BudgetCheck::limit, "The budget, in the figure's unit.")
      .def_readonly("margin", &BudgetCheck::margin,
                    "limit - value (negative: over budget).")
      .def_readonly("margin_fraction", &BudgetCheck::margin_fraction,
                    "margin / limit, a fraction.")
      .def_readonly("confidence", &BudgetCheck::confidence,
                    "The probability that the true figure is within the limit, from the "
                    "prediction's t distribution when a calibration projected the figure; None "
                    "otherwise (a measured figure, one projected from one core), or when the "
                    "fit has no degrees of freedom left.")
      .def_readonly("provenance", &BudgetCheck::provenance,
                    "'projected' for a prediction's check; for a figure's, 'measured', and in a "
                    "Score as the figure was obtained ('measured', 'sampled', 'projected' or "
                    "'estimated').")
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
      .def_readonly("estimate", &Prediction::estimate, "The projected figure.")
      .def_readonly("low", &Prediction::low,
                    "The low end of the prediction interval at `confidence` (infinite when the "
                    "fit has no degrees of freedom left).")
      .def_readonly("high", &Prediction::high,
                    "The high end of the prediction interval at `confidence` (infinite when the "
                    "fit has no degrees of freedom left).")
      .def_readonly("confidence", &Prediction::confidence,
                    "The probability that the interval holds the true figure.")
      .def_readonly("dof", &Prediction::dof,
                    "The degrees of freedom of the estimate's t distribution (the fit's residual "
                    "degrees of freedom), used for a budget's confidence.")
      .def_readonly("provenance", &Prediction::provenance,
                    "How the figure was obtained: 'projected'.")
      .def("__repr__", [](const Prediction& p) {
        return "Prediction(estimate=" + py::repr(py::float_(p.estimate)).cast<std::string>() +
               ", interval=(" + py::repr(py::float_(p.low)).cast<std::string>() + ", " +
               py::repr(py::float_(p.high)).cast<std::string>() + ") at " +
               py::repr(py::float_(p.confidence)).cast<std::string>() + ", projected)";
      });
  m.def("check_budget", py::overload_cast<double, double>(&check_budget), py::arg("value"),
        py::arg("limit"),
        "Whether a measured figure fits a budget (lower is better), as a BudgetCheck. Raises "
        "edgeprof.Error unless the figure is finite and the limit finite and positive.");
  m.def("check_budget", py::overload_cast<const Prediction&, double>(&check_budget),
        py::arg("prediction"), py::arg("limit"),
        "As above, for a Prediction: fits when the estimate is within the limit; confidence is "
        "the probability, under its t distribution, that the true figure is.");

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
      .def_property_readonly(
          "model", [](const Projection& p) { return to_string(p.model()); },
          "The model fitted ('linear', 'origin', 'loglog', 'theil_sen' or 'multi'); for 'auto', "
          "the one picked.")
      .def_property_readonly("reason", &Projection::reason,
                             "Why this model: for 'auto', the leave-one-out errors that decided.")
      .def_property_readonly("features", &Projection::features,
                             "The feature names, one per column of x.")
      .def_property_readonly("target", &Projection::target,
                             "The name of the device figure predicted.")
      .def_property_readonly("coefficients", &Projection::coefficients,
                             "The coefficients, named in coefficient_names: for linear, "
                             "theil_sen and multi [b, a...], for origin [a], for loglog "
                             "[log_c, k].")
      .def_property_readonly("standard_errors", &Projection::standard_errors,
                             "Standard errors of the coefficients (OLS formulas; for theil_sen "
                             "an approximation).")
      .def_property_readonly("coefficient_names", &Projection::coefficient_names,
                             "'b', 'a', 'a_<feature>', 'log_c' or 'k', one per coefficient.")
      .def_property_readonly("r_squared", &Projection::r_squared,
                             "R squared of the fit on its points (in log space for loglog).")
      .def_property_readonly("residual_standard_error", &Projection::residual_standard_error,
                             "The residual standard error, in the target's unit (in log of "
                             "it for loglog).")
      .def_property_readonly("dof", &Projection::dof,
                             "Residual degrees of freedom: points - coefficients (for ridge, "
                             "points - the trace of the hat matrix).")
      .def_property_readonly("points", &Projection::points,
                             "The number of calibration points.")
      .def_property_readonly("loo_ape", &Projection::loo_ape,
                             "Leave-one-out: the absolute percentage error of predicting each "
                             "point from the others, as fractions (0.1 = 10%; infinite where "
                             "the refit is impossible).")
      .def_property_readonly("loo_ape_median", &Projection::loo_ape_median,
                             "The median of loo_ape, a fraction.")
      .def_property_readonly("loo_ape_max", &Projection::loo_ape_max,
                             "The largest of loo_ape, a fraction.")
      .def_property_readonly("loo_within_10pct", &Projection::loo_within_10pct,
                             "The fraction of points whose loo_ape is within 10%.")
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
      .def_readonly("device", &Calibration::device,
                    "The name of the device the figures were measured on.")
      .def_readonly("family", &Calibration::family, "The model family; '' = any.")
      .def_readonly("projection", &Calibration::projection,
                    "The fit (a Projection); its target names the figure it predicts.")
      .def_readonly("core_emulation", &Calibration::core_emulation,
                    "How the runs its features came from emulated the device's cores "
                    "('projected', 'pooled', 'per-core'); '' when not recorded.");
  m.def("calibrations_to_json", &calibrations_to_json, py::arg("calibrations"),
        "The calibrations as JSON (schema edgeprof.calibrations), each with its device, family, "
        "model, features, target, ridge and points. Raises edgeprof.Error for a core_emulation "
        "other than 'projected', 'pooled', 'per-core' or ''.");
  m.def("calibrations_from_json", &calibrations_from_json, py::arg("text"),
        "Reads what calibrations_to_json wrote (a list of Calibration), refitting each from its "
        "points. Raises edgeprof.Error for text that is not a calibration file, a newer schema "
        "version, a fit that fails, or coefficients the points no longer reproduce.");
  m.def("find_calibration", &find_calibration, py::arg("calibrations"), py::arg("device"),
        py::arg("target"), py::arg("family") = "", py::arg("core_emulation") = "",
        "The calibration for (device, target, family): an exact family match first, then one "
        "for any family; a device's alias matches its name. With core_emulation ('projected', "
        "'pooled', 'per-core'), one fitted under it comes first, then one that did not record "
        "it, then one fitted under another. None when there is none; raises edgeprof.Error for "
        "an unknown core_emulation.");
  m.def("project", &project, py::arg("calibration"), py::arg("result"),
        py::arg("confidence") = 0.95,
        "The device figure a calibration projects from a result's figures.");
}
