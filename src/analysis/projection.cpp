// Projections from emulation to device numbers: least squares (Eigen), Theil-Sen, log-log,
// ridge; exact leave-one-out; prediction intervals from the t distribution; calibrations.
#include "edgeprof/projection.hpp"

#include "edgeprof/catalog.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "edgeprof/catalog.hpp"
#include "edgeprof/error.hpp"
#include "analysis/figure_name.hpp"
#include "sys/stats.hpp"

namespace edgeprof {

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

using detail::median_of;

// How many coefficients a model has with k features.
size_t coefficient_count(FitModel m, size_t k) {
  switch (m) {
    case FitModel::origin:
      return 1;
    case FitModel::multi:
      return k + 1;
    default:
      return 2;
  }
}

// The design row of one input (in the model's space).
VectorXd design_row(FitModel m, const std::vector<double>& x) {
  switch (m) {
    case FitModel::origin: {
      VectorXd r(1);
      r << x[0];
      return r;
    }
    case FitModel::loglog: {
      VectorXd r(2);
      r << 1.0, std::log(x[0]);
      return r;
    }
    case FitModel::multi: {
      VectorXd r(static_cast<Eigen::Index>(x.size() + 1));
      r(0) = 1.0;
      for (size_t j = 0; j < x.size(); ++j) r(static_cast<Eigen::Index>(j + 1)) = x[j];
      return r;
    }
    default: {
      VectorXd r(2);
      r << 1.0, x[0];
      return r;
    }
  }
}

std::vector<double> to_vector(const VectorXd& v) { return {v.data(), v.data() + v.size()}; }

std::vector<double> to_row_major(const MatrixXd& m) {
  std::vector<double> out;
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    for (Eigen::Index j = 0; j < m.cols(); ++j) out.push_back(m(i, j));
  }
  return out;
}

MatrixXd from_row_major(const std::vector<double>& v, Eigen::Index p) {
  MatrixXd m(p, p);
  for (Eigen::Index i = 0; i < p; ++i) {
    for (Eigen::Index j = 0; j < p; ++j) m(i, j) = v[static_cast<size_t>(i * p + j)];
  }
  return m;
}

std::string percent(double v) { return fmt::format("{:.1f}%", v * 100); }

// A Projection that fit() made: a default-constructed one has no coefficients to project with.
void check_fitted(const Projection& p, const char* what) {
  if (p.coefficients().empty()) {
    throw Error(fmt::format("{}: this Projection was not fitted (a default-constructed one, or "
                            "a Calibration without one): make it with Projection::fit",
                            what));
  }
}

}  // namespace

const char* to_string(FitModel model) {
  switch (model) {
    case FitModel::linear:
      return "linear";
    case FitModel::origin:
      return "origin";
    case FitModel::loglog:
      return "loglog";
    case FitModel::theil_sen:
      return "theil_sen";
    case FitModel::multi:
      return "multi";
    case FitModel::automatic:
      return "auto";
  }
  return "unknown";
}

FitModel fit_model_from_string(std::string_view text) {
  for (FitModel m : {FitModel::linear, FitModel::origin, FitModel::loglog, FitModel::theil_sen,
                     FitModel::multi, FitModel::automatic}) {
    if (text == to_string(m)) return m;
  }
  throw Error(fmt::format("unknown projection model '{}': choose linear, origin, loglog, "
                          "theil_sen, multi or auto",
                          text));
}

Projection Projection::fit(const std::vector<double>& x, const std::vector<double>& y,
                           const FitOptions& options) {
  std::vector<std::vector<double>> rows;
  for (double v : x) rows.push_back({v});
  return fit(rows, y, options);
}

Projection Projection::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                           const FitOptions& options) {
  if (x.size() != y.size()) {
    throw Error(fmt::format("a projection needs one device figure per measured input: got {} "
                            "inputs and {} device figures",
                            x.size(), y.size()));
  }
  if (y.size() < 3) {
    throw Error(fmt::format("a projection needs at least 3 calibration points, got {}: measure "
                            "more workloads on the device",
                            y.size()));
  }
  const size_t k = x.front().size();
  if (k == 0) throw Error("a projection needs at least one feature per point");
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].size() != k) {
      throw Error(fmt::format("point {} has {} features, point 0 has {}", i, x[i].size(), k));
    }
    for (double v : x[i]) {
      if (!std::isfinite(v)) throw Error(fmt::format("point {} has a feature of {}", i, v));
      if (v < 0) {
        throw Error(fmt::format("point {} has a negative feature ({}): measured times and "
                                "sizes are never negative",
                                i, v));
      }
    }
    if (!std::isfinite(y[i])) throw Error(fmt::format("device figure {} is {}", i, y[i]));
    if (y[i] <= 0) {
      throw Error(fmt::format("device figure {} is {}: device times and sizes must be "
                              "positive",
                              i, y[i]));
    }
  }
  for (size_t j = 0; j < k; ++j) {
    const bool constant = std::all_of(x.begin(), x.end(), [&](const std::vector<double>& r) {
      return r[j] == x.front()[j];
    });
    if (constant) {
      throw Error(k == 1 ? std::string("all measured inputs are equal: the projection cannot "
                                       "tell how the device figure changes with them; "
                                       "calibrate with workloads of different sizes")
                         : fmt::format("feature {} has the same value at every point: drop it",
                                       j + 1));
    }
  }
  FitOptions opts = options;
  if (opts.features.empty()) {
    if (k == 1) {
      opts.features = {"x"};
    } else {
      for (size_t j = 0; j < k; ++j) opts.features.push_back(fmt::format("x{}", j + 1));
    }
  }
  if (opts.features.size() != k) {
    throw Error(fmt::format("{} feature names for {} features", opts.features.size(), k));
  }
  if (opts.ridge < 0 || !std::isfinite(opts.ridge)) {
    throw Error(fmt::format("ridge must be 0 or positive, got {}", opts.ridge));
  }
  if (k > 1 && opts.model != FitModel::multi && opts.model != FitModel::automatic) {
    throw Error(fmt::format("model '{}' takes one feature; with {} features use 'multi'",
                            to_string(opts.model), k));
  }
  if (opts.ridge > 0 && opts.model != FitModel::multi &&
      !(opts.model == FitModel::automatic && k > 1)) {
    // It would be dropped: only multi's slopes are penalised (auto fits multi with several
    // features only).
    throw Error(fmt::format("a ridge penalty ({}) applies to model 'multi' only (several "
                            "features), not '{}' with {}",
                            opts.ridge, to_string(opts.model), k == 1 ? "one feature" : "these"));
  }
  if (opts.model != FitModel::automatic) return fit_one(x, y, opts.model, opts, true);

  // auto: every applicable model, judged by its leave-one-out error.
  std::vector<FitModel> candidates;
  if (k > 1) {
    candidates = {FitModel::multi};
  } else {
    candidates = {FitModel::linear, FitModel::origin, FitModel::theil_sen};
    const bool positive =
        std::all_of(x.begin(), x.end(), [](const std::vector<double>& r) { return r[0] > 0; });
    if (positive) candidates.push_back(FitModel::loglog);
  }
  std::optional<Projection> best;
  std::vector<std::string> tried;
  std::string first_error;
  for (FitModel m : candidates) {
    try {
      Projection p = fit_one(x, y, m, opts, true);
      tried.push_back(fmt::format("{} {} (max {})", to_string(m), percent(p.loo_median_),
                                  percent(p.loo_max_)));
      const bool better =
          !best || p.loo_median_ < best->loo_median_ - 1e-12 ||
          (std::fabs(p.loo_median_ - best->loo_median_) <= 1e-12 && p.loo_max_ < best->loo_max_);
      if (better) best = std::move(p);
    } catch (const Error& e) {
      tried.push_back(fmt::format("{} not applicable ({})", to_string(m), e.what()));
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!best) throw Error(first_error);
  best->reason_ = fmt::format("picked {}: smallest median leave-one-out error; {}",
                              to_string(best->model_), fmt::join(tried, ", "));
  return *best;
}

Projection Projection::fit_one(const std::vector<std::vector<double>>& x,
                               const std::vector<double>& y, FitModel model,
                               const FitOptions& options, bool with_loo, bool allow_exact) {
  const size_t n = y.size(), k = x.front().size();
  const size_t p = coefficient_count(model, k);
  if (n < p || (n == p && !allow_exact)) {
    throw Error(fmt::format("model '{}' has {} coefficients and needs more points than that, "
                            "got {}",
                            to_string(model), p, n));
  }
  if (model == FitModel::loglog) {
    for (size_t i = 0; i < n; ++i) {
      if (x[i][0] <= 0) {
        throw Error(fmt::format("the log-log model needs positive inputs; point {} is {}", i,
                                x[i][0]));
      }
    }
  }
  Projection out;
  out.model_ = model;
  out.options_ = options;
  if (model != FitModel::multi) out.options_.ridge = 0;  // not applied: not saved as if it were
  out.x_ = x;
  out.y_ = y;
  out.reason_ = fmt::format("{} as asked", to_string(model));

  const auto rows = static_cast<Eigen::Index>(n), cols = static_cast<Eigen::Index>(p);
  MatrixXd X(rows, cols);
  VectorXd Y(rows);
  for (size_t i = 0; i < n; ++i) {
    X.row(static_cast<Eigen::Index>(i)) = design_row(model, x[i]).transpose();
    Y(static_cast<Eigen::Index>(i)) = model == FitModel::loglog ? std::log(y[i]) : y[i];
  }
  // The design standardised: every column but the intercept centred (where there is one) and
  // scaled to unit spread, beta = T gamma back in the raw units. On the raw design the rank
  // test and the solve measured every column against the largest: a feature in bytes (1e9)
  // made the intercept, or a feature in seconds, look like zero, and valid fits were refused
  // as "all inputs equal" or "collinear".
  const bool intercept = model != FitModel::origin;
  const Eigen::Index first = intercept ? 1 : 0;
  MatrixXd Z = X;
  MatrixXd T = MatrixXd::Identity(cols, cols);
  for (Eigen::Index j = first; j < cols; ++j) {
    // A feature equal at every point up to rounding (0.3 and 0.30000000000000004) tells
    // nothing: scaled to unit spread it was fitted, with a slope of 1e16.
    double least = std::numeric_limits<double>::infinity(), most = -least, largest = 0;
    for (const std::vector<double>& row : x) {
      const double v = row[static_cast<size_t>(j - first)];
      least = std::min(least, v);
      most = std::max(most, v);
      largest = std::max(largest, std::fabs(v));
    }
    const bool flat = intercept ? !(most - least > 1e-10 * largest) : largest == 0;
    const double mean = intercept ? X.col(j).mean() : 0.0;
    const double spread =
        std::sqrt((X.col(j).array() - mean).square().sum() / double(std::max<size_t>(n - 1, 1)));
    const double scale = spread > 0 ? spread : 1.0;
    if (flat) {
      Z.col(j).setZero();  // the rank test below refuses it
    } else {
      Z.col(j) = (X.col(j).array() - mean) / scale;
    }
    T(j, j) = 1.0 / scale;
    if (intercept) T(0, j) = -mean / scale;
  }
  // A degenerate design (all x equal, collinear features) cannot be fitted.
  Eigen::ColPivHouseholderQR<MatrixXd> qr(Z);
  qr.setThreshold(1e-10);
  if (qr.rank() < cols) {
    throw Error(k == 1 ? std::string("all measured inputs are equal: the projection cannot tell "
                                     "how the device figure changes with them; calibrate with "
                                     "workloads of different sizes")
                       : std::string("the features are collinear (one is a combination of the "
                                     "others): drop one"));
  }
  const MatrixXd xtx = X.transpose() * X;
  const MatrixXd ztz = Z.transpose() * Z;
  VectorXd beta;
  MatrixXd cov_unscaled;  // Cov(beta) / sigma^2
  double dof = double(n) - double(p);
  if (model == FitModel::theil_sen) {
    std::vector<double> slopes;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        if (x[j][0] != x[i][0]) slopes.push_back((y[j] - y[i]) / (x[j][0] - x[i][0]));
      }
    }
    const double slope = median_of(slopes);
    std::vector<double> xs, ys;
    for (size_t i = 0; i < n; ++i) {
      xs.push_back(x[i][0]);
      ys.push_back(y[i]);
    }
    beta = VectorXd(2);
    beta << median_of(ys) - slope * median_of(xs), slope;
    // The OLS formula, (X'X)^-1 through the standardised design: an approximation for
    // Theil-Sen.
    cov_unscaled = T * ztz.inverse() * T.transpose();
  } else if (model == FitModel::multi && options.ridge > 0) {
    // Ridge on the standardised slopes (the intercept is not penalised), mapped back.
    MatrixXd penalty = MatrixXd::Identity(cols, cols) * options.ridge;
    penalty(0, 0) = 0;
    const MatrixXd a_inv = (ztz + penalty).inverse();
    const VectorXd gamma = a_inv * Z.transpose() * Y;
    beta = T * gamma;
    const MatrixXd hat = Z * a_inv * Z.transpose();
    dof = double(n) - hat.trace();
    cov_unscaled = T * a_inv * ztz * a_inv * T.transpose();
  } else {
    beta = T * qr.solve(Y);
    cov_unscaled = T * ztz.inverse() * T.transpose();
  }
  const VectorXd fitted = X * beta;
  const VectorXd resid = Y - fitted;
  const double ss_res = resid.squaredNorm();
  const double ss_tot = (Y.array() - Y.mean()).square().sum();
  out.r2_ = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  out.dof_ = dof;
  out.rse_ = dof > 0 ? std::sqrt(ss_res / dof) : 0.0;
  out.coef_ = to_vector(beta);
  VectorXd se = (cov_unscaled.diagonal().array().max(0.0)).sqrt() * out.rse_;
  out.se_ = to_vector(se);
  out.xtx_inv_ = to_row_major(cov_unscaled);
  out.xtx_ = to_row_major(xtx);
  switch (model) {
    case FitModel::origin:
      out.coef_names_ = {"a"};
      break;
    case FitModel::loglog:
      out.coef_names_ = {"log_c", "k"};
      break;
    case FitModel::multi:
      out.coef_names_ = {"b"};
      for (const std::string& f : options.features) out.coef_names_.push_back("a_" + f);
      break;
    default:
      out.coef_names_ = {"b", "a"};
  }

  if (with_loo) {
    // Exact leave-one-out: refit without each point and predict it.
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::vector<double>> xi;
      std::vector<double> yi;
      for (size_t j = 0; j < n; ++j) {
        if (j == i) continue;
        xi.push_back(x[j]);
        yi.push_back(y[j]);
      }
      double ape;
      try {
        // Without point i the model may need more points than remain: then fit what is there
        // exactly (n - 1 == p leaves zero residual degrees of freedom, which is fine for an
        // estimate).
        Projection sub = fit_one(xi, yi, model, options, false, true);
        ape = std::fabs(sub.point_estimate(x[i]) - y[i]) / y[i];
      } catch (const Error&) {
        ape = std::numeric_limits<double>::infinity();
      }
      out.loo_ape_.push_back(ape);
    }
    out.loo_median_ = median_of(out.loo_ape_);
    out.loo_max_ = *std::max_element(out.loo_ape_.begin(), out.loo_ape_.end());
    out.loo_within_ =
        double(std::count_if(out.loo_ape_.begin(), out.loo_ape_.end(),
                             [](double e) { return e <= 0.10; })) /
        double(n);
  }
  return out;
}

double Projection::point_estimate(const std::vector<double>& x) const {
  check_fitted(*this, "predict");
  if (x.size() != options_.features.size()) {
    throw Error(fmt::format("this projection takes {} feature{} ({}), got {}",
                            options_.features.size(), options_.features.size() == 1 ? "" : "s",
                            fmt::join(options_.features, ", "), x.size()));
  }
  for (double v : x) {
    if (!std::isfinite(v)) throw Error(fmt::format("cannot project an input of {}", v));
  }
  if (model_ == FitModel::loglog && x[0] <= 0) {
    throw Error(fmt::format("the log-log projection needs a positive input, got {}", x[0]));
  }
  const VectorXd row = design_row(model_, x);
  double v = 0;
  for (Eigen::Index j = 0; j < row.size(); ++j) v += row(j) * coef_[static_cast<size_t>(j)];
  return model_ == FitModel::loglog ? std::exp(v) : v;
}

Prediction Projection::predict(double x, double confidence) const {
  return predict(std::vector<double>{x}, confidence);
}

Prediction Projection::predict(const std::vector<double>& x, double confidence) const {
  if (!(confidence > 0 && confidence < 1)) {
    throw Error(fmt::format("confidence must be between 0 and 1, got {}", confidence));
  }
  Prediction p;
  p.estimate = point_estimate(x);
  p.confidence = confidence;
  const VectorXd row = design_row(model_, x);
  const MatrixXd cov = from_row_major(xtx_inv_, row.size());
  const double leverage = row.dot(cov * row);
  p.scale = rse_ * std::sqrt(1.0 + std::max(0.0, leverage));
  p.dof = dof_;
  p.log_space = model_ == FitModel::loglog;
  p.center = p.log_space ? std::log(p.estimate) : p.estimate;
  if (dof_ <= 0) {
    p.low = -std::numeric_limits<double>::infinity();
    p.high = std::numeric_limits<double>::infinity();
    return p;
  }
  const double t = student_t_quantile(0.5 + confidence / 2, dof_);
  const double lo = p.center - t * p.scale, hi = p.center + t * p.scale;
  p.low = p.log_space ? std::exp(lo) : lo;
  p.high = p.log_space ? std::exp(hi) : hi;
  return p;
}

std::string Projection::to_text() const {
  check_fitted(*this, "to_text");
  std::string out = fmt::format("{} = ", options_.target);
  switch (model_) {
    case FitModel::origin:
      out += fmt::format("{:.6g} * {}", coef_[0], options_.features[0]);
      break;
    case FitModel::loglog:
      out += fmt::format("{:.6g} * {}^{:.6g}", std::exp(coef_[0]), options_.features[0], coef_[1]);
      break;
    case FitModel::multi:
      out += fmt::format("{:.6g}", coef_[0]);
      for (size_t j = 0; j < options_.features.size(); ++j) {
        out += fmt::format(" + {:.6g} * {}", coef_[j + 1], options_.features[j]);
      }
      if (options_.ridge > 0) out += fmt::format("   (ridge {:g})", options_.ridge);
      break;
    default:
      out += fmt::format("{:.6g} * {} + {:.6g}", coef_[1], options_.features[0], coef_[0]);
  }
  out += fmt::format("   [{}]\n", to_string(model_));
  out += "coefficients  ";
  for (size_t j = 0; j < coef_.size(); ++j) {
    out += fmt::format("{}{} = {:.6g} +- {:.3g}", j ? ", " : "", coef_names_[j], coef_[j], se_[j]);
  }
  out += fmt::format("\nfit           R^2 {:.4f}{}, residual standard error {:.4g}{}, {} points, "
                     "{:g} degrees of freedom\n",
                     r2_, model_ == FitModel::loglog ? " (log space)" : "", rse_,
                     model_ == FitModel::loglog ? " (log space)" : "", y_.size(), dof_);
  out += fmt::format("leave-one-out absolute error: median {}, max {}, {} of points within "
                     "+-10%\n",
                     percent(loo_median_), percent(loo_max_), percent(loo_within_));
  out += fmt::format("model         {}\n", reason_);
  return out;
}

BudgetCheck check_budget(const Prediction& prediction, double limit) {
  BudgetCheck c = check_budget(prediction.estimate, limit);
  c.provenance = "projected";
  if (prediction.dof > 0 && prediction.scale > 0) {
    const double bound = prediction.log_space ? std::log(limit) : limit;
    c.confidence = student_t_cdf((bound - prediction.center) / prediction.scale, prediction.dof);
  } else if (prediction.dof > 0) {
    c.confidence = c.fits ? 1.0 : 0.0;  // a perfect fit: no spread
  }
  return c;
}

// Calibrations.

namespace {

using nlohmann::json;

// A calibration's core emulation: one that runs resolve to ("projected", "pooled",
// "per-core"); throws Error naming `what` otherwise.
void check_core_emulation(const std::string& text, const std::string& what) {
  for (const CoreEmulation c :
       {CoreEmulation::projected, CoreEmulation::pooled, CoreEmulation::per_core}) {
    if (text == to_string(c)) return;
  }
  throw Error(fmt::format("{} has core_emulation '{}': expected projected, pooled or per-core "
                          "(how its runs emulated the device's cores), or none",
                          what, text));
}

json calibration_json(const Calibration& c) {
  const Projection& p = c.projection;
  // Written, it would make the whole file unreadable (read back, it is fitted again).
  check_fitted(p, "calibrations_to_json");
  return {{"device", c.device},
          {"family", c.family},
          {"model", to_string(p.model())},
          {"reason", p.reason()},
          {"features", p.features()},
          {"target", p.target()},
          {"ridge", p.options().ridge},
          {"x", p.x()},
          {"y", p.y()},
          {"coefficients", p.coefficients()},
          {"standard_errors", p.standard_errors()},
          {"r_squared", p.r_squared()},
          {"loo_ape_median", p.loo_ape_median()},
          {"loo_ape_max", p.loo_ape_max()},
          {"loo_within_10pct", p.loo_within_10pct()},
          {"core_emulation", c.core_emulation}};
}

}  // namespace

std::string calibrations_to_json(const std::vector<Calibration>& calibrations) {
  json list = json::array();
  for (const Calibration& c : calibrations) {
    // Refused here, not when the file is read back (a file that cannot be read loses them all).
    if (!c.core_emulation.empty()) {
      check_core_emulation(c.core_emulation, fmt::format("the calibration for {} ({})", c.device,
                                                         c.projection.target()));
    }
    list.push_back(calibration_json(c));
  }
  return json{{"schema", "edgeprof.calibrations"},
              {"schema_version", 1},
              {"calibrations", list}}
      .dump(2);
}

std::vector<Calibration> calibrations_from_json(std::string_view text) {
  try {
    const json j = json::parse(text);
    if (!j.is_object() || j.value("schema", "") != "edgeprof.calibrations") {
      throw Error("this JSON is not an edgeprof calibration file: expected \"schema\": "
                  "\"edgeprof.calibrations\"");
    }
    if (j.at("schema_version").get<int>() > 1) {
      throw Error(fmt::format("this calibration file has schema version {}, newer than this "
                              "edgeprof reads (1): upgrade edgeprof",
                              j.at("schema_version").get<int>()));
    }
    std::vector<Calibration> out;
    for (const json& c : j.at("calibrations")) {
      FitOptions o;
      o.model = fit_model_from_string(c.at("model").get<std::string>());
      o.features = c.at("features").get<std::vector<std::string>>();
      o.target = c.at("target").get<std::string>();
      // Only multi applies a ridge: files written before the ridge was refused with another
      // model (it was dropped then) load as they did.
      o.ridge = o.model == FitModel::multi ? c.at("ridge").get<double>() : 0.0;
      const std::string device = c.at("device").get<std::string>();
      Projection fitted;
      try {
        fitted = Projection::fit(c.at("x").get<std::vector<std::vector<double>>>(),
                                 c.at("y").get<std::vector<double>>(), o);
      } catch (const Error& e) {
        // Named, not one anonymous error for the whole file (fit -o, which reads the file
        // first, could not even replace the entry).
        throw Error(fmt::format("the calibration for {} ({}) cannot be fitted again from its "
                                "points: {}; fit it again, or remove it from the file",
                                device, o.target, e.what()));
      }
      Calibration cal{device, c.at("family").get<std::string>(), std::move(fitted),
                      c.value("core_emulation", std::string())};  // older files lack it
      // Why auto picked the model (it read "as asked" once loaded).
      if (const auto reason = c.find("reason");
          reason != c.end() && reason->is_string() &&
          reason->get<std::string>().rfind(std::string("picked ") + to_string(o.model) + ":", 0) ==
              0) {
        cal.projection.reason_ = reason->get<std::string>();
      }
      if (!cal.core_emulation.empty()) {
        check_core_emulation(cal.core_emulation,
                             fmt::format("the calibration for {} ({})", cal.device,
                                         cal.projection.target()));
      }
      // The fit is a function of the points: the stored coefficients must come out again.
      const auto stored = c.at("coefficients").get<std::vector<double>>();
      const auto& now = cal.projection.coefficients();
      bool same = stored.size() == now.size();
      for (size_t i = 0; same && i < now.size(); ++i) {
        same = std::fabs(stored[i] - now[i]) <= 1e-9 * std::max(1.0, std::fabs(now[i]));
      }
      if (!same) {
        throw Error(fmt::format("the calibration for {} ({}) does not reproduce its stored "
                                "coefficients from its points: the file was edited; refit it",
                                cal.device, cal.projection.target()));
      }
      out.push_back(std::move(cal));
    }
    return out;
  } catch (const json::exception& e) {
    throw Error(fmt::format("cannot read calibrations from JSON: {}", e.what()));
  }
}

namespace {

// A catalog device's name for one of its aliases ("raspberry-pi-4" -> "raspberry-pi-4b-4gb");
// any other name unchanged.
std::string canonical_device_name(const std::string& name) {
  for (const Device& d : catalog_devices()) {
    if (d.answers_to(name)) return d.name;
  }
  return name;
}

}  // namespace

std::optional<Calibration> find_calibration(const std::vector<Calibration>& calibrations,
                                            const std::string& device, const std::string& target,
                                            const std::string& family,
                                            const std::string& core_emulation) {
  if (!core_emulation.empty()) check_core_emulation(core_emulation, "find_calibration");
  // Preferred: the runs' core emulation (recorded, then not recorded, then another), and
  // within each the exact family before one for any family; the file's first of equals.
  const Calibration* best = nullptr;
  int best_score = -1;
  const std::string wanted = canonical_device_name(device);
  for (const Calibration& c : calibrations) {
    if (canonical_device_name(c.device) != wanted || c.projection.target() != target) continue;
    int family_score = 0;
    if (!family.empty() && c.family == family) {
      family_score = 2;
    } else if (c.family.empty()) {
      family_score = 1;
    } else {
      continue;
    }
    int emulation_score = 2;
    if (!core_emulation.empty()) {
      emulation_score = c.core_emulation == core_emulation ? 2 : c.core_emulation.empty() ? 1 : 0;
    }
    const int score = emulation_score * 3 + family_score;
    if (score > best_score) {
      best = &c;
      best_score = score;
    }
  }
  if (best) return *best;
  return std::nullopt;
}

Prediction project(const Calibration& calibration, const Result& result, double confidence) {
  if (!calibration.core_emulation.empty()) {
    check_core_emulation(calibration.core_emulation,
                         fmt::format("the calibration for {}", calibration.device));
  }
  const std::string ran = to_string(result.plan.core_emulation());
  if (!calibration.core_emulation.empty() && calibration.core_emulation != ran) {
    for (const std::string& f : calibration.projection.features()) {
      const std::string own = detail::figure_own_name(f);
      const bool all_cores = own.rfind("all_cores_", 0) == 0;
      const bool memory = is_size_figure(own) && (own.find("memory") != std::string::npos ||
                                    own.find("rss") != std::string::npos);
      if (!all_cores && !memory) {
        throw Error(fmt::format(
            "the calibration of {} for {} was fitted on runs with core emulation {}, and this "
            "result's was {}: its feature {} is not the same figure under both (a projected "
            "run's times are one core's); run with --core-emulation {}, or fit the calibration "
            "on all_cores_* figures, which mean the device's time with all its cores under any",
            calibration.projection.target(), calibration.device, calibration.core_emulation,
            ran, f, calibration.core_emulation));
      }
    }
  }
  std::vector<double> x;
  for (const std::string& f : calibration.projection.features()) x.push_back(figure(result, f));
  return calibration.projection.predict(x, confidence);
}

}  // namespace edgeprof
