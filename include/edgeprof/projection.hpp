/// @file
/// Predicting device numbers: fit device ~ f(what edgeprof measured under emulation) on a few
/// calibration workloads measured once on the real device, and say how far to trust it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/export.hpp"
#include "edgeprof/rank.hpp"
#include "edgeprof/result.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// The form of a projection.
enum class FitModel {
  linear,      ///< y = a x + b, ordinary least squares
  origin,      ///< y = a x
  loglog,      ///< y = c x^k, least squares on log y = log c + k log x (x, y > 0)
  theil_sen,   ///< y = a x + b, median of pairwise slopes: robust to one outlier among few points
  multi,       ///< y = b + sum a_j x_j over several features, optionally ridge-regularised
  automatic,   ///< the model with the smallest leave-one-out error (see Projection::reason)
};
/// "linear", "origin", "loglog", "theil_sen", "multi" or "auto".
const char* to_string(FitModel model);
/// The model to_string() names: "linear", ..., "auto". Throws Error for any other text.
FitModel fit_model_from_string(std::string_view text);

/// What to fit, and the names of what goes in and comes out.
struct FitOptions {
  FitModel model = FitModel::automatic;  ///< the model to fit
  double ridge = 0;  ///< multi only: lambda of the ridge penalty on the slopes (0 = none)
  /// Feature names, one per column of x (for reports and for applying to results); default
  /// "x" or "x1", "x2", ...
  std::vector<std::string> features;
  std::string target = "y";  ///< name of the device figure, e.g. "device_wall_time_s"
};

/// The estimate for one input, with its prediction interval.
struct Prediction {
  double estimate = 0;  ///< the projected figure
  ///@{
  /// Prediction interval at `confidence` (infinite when the fit has no degrees of freedom left).
  double low = 0, high = 0;
  ///@}
  double confidence = 0.95;  ///< probability that the interval holds the true figure
  ///@{
  /// The t distribution of the estimate (in log space for loglog): for budget confidence.
  double center = 0, scale = 0, dof = 0;
  ///@}
  bool log_space = false;               ///< center and scale are in log space (loglog)
  std::string provenance = "projected";  ///< how the figure was obtained
};

struct Calibration;

/// A fitted projection. Every figure is computed from the points (leave-one-out refits them n
/// times, exactly).
class Projection {
 public:
  /// x: one row per calibration workload, one column per feature; y: the device's figures.
  /// Throws Error with fewer than 3 points (or not more points than coefficients), a degenerate
  /// x (all equal, or collinear features), NaN or infinite values, negative features,
  /// non-positive device figures, and for loglog non-positive features; also for rows of
  /// different lengths, feature names that do not match the columns in number, a negative
  /// ridge, a ridge with a model other than multi (or automatic with several features), or
  /// several features with a one-feature model.
  static Projection fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                        const FitOptions& options = {});
  /// One feature.
  static Projection fit(const std::vector<double>& x, const std::vector<double>& y,
                        const FitOptions& options = {});

  /// The model fitted: for "auto", the one picked.
  FitModel model() const { return model_; }
  /// Why this model: for "auto", the leave-one-out errors that decided.
  const std::string& reason() const { return reason_; }
  /// The feature names, one per column of x.
  const std::vector<std::string>& features() const { return options_.features; }
  /// The name of the device figure predicted.
  const std::string& target() const { return options_.target; }

  /// Coefficients: for linear/theil_sen/multi {intercept b, slopes a_j...}, for origin {a}, for
  /// loglog {log c, k}; named in coefficient_names().
  const std::vector<double>& coefficients() const { return coef_; }
  /// Standard errors of the coefficients (OLS formulas; for theil_sen the OLS formula with its
  /// residuals, an approximation).
  const std::vector<double>& standard_errors() const { return se_; }
  /// "b", "a", `a_<feature>`, "log_c" or "k", one per coefficient.
  const std::vector<std::string>& coefficient_names() const { return coef_names_; }
  /// R squared of the fit on its points (in log space for loglog).
  double r_squared() const { return r2_; }
  double residual_standard_error() const { return rse_; }  ///< in y units (log y for loglog)
  /// Residual degrees of freedom: points - coefficients (for ridge, points - the trace of the
  /// hat matrix).
  double dof() const { return dof_; }
  /// The number of calibration points.
  std::size_t points() const { return y_.size(); }

  /// Leave-one-out: absolute percentage errors of predicting each point from the others, as
  /// fractions (0.1 = 10%; infinite where the refit is impossible).
  const std::vector<double>& loo_ape() const { return loo_ape_; }
  /// The median of loo_ape().
  double loo_ape_median() const { return loo_median_; }
  /// The largest of loo_ape().
  double loo_ape_max() const { return loo_max_; }
  double loo_within_10pct() const { return loo_within_; }  ///< share of points within +-10%

  /// The estimate for one input (one value per feature) with its prediction interval at
  /// `confidence`. Throws Error for a confidence outside (0, 1), the wrong number of values, a
  /// value that is not finite, or for loglog a non-positive one.
  Prediction predict(const std::vector<double>& x, double confidence = 0.95) const;
  /// The same for one feature.
  Prediction predict(double x, double confidence = 0.95) const;

  /// The points it was fitted on.
  const std::vector<std::vector<double>>& x() const { return x_; }
  /// The device figures it was fitted on.
  const std::vector<double>& y() const { return y_; }
  /// The options it was fitted with, the feature names filled in.
  const FitOptions& options() const { return options_; }

  /// For people: the equation, coefficients with standard errors, the fit, leave-one-out
  /// errors and why this model.
  std::string to_text() const;

 private:
  // Gives a model auto picked its reason back (it is not fitted again to say why).
  friend std::vector<Calibration> calibrations_from_json(std::string_view json);

  FitModel model_ = FitModel::linear;
  std::string reason_;
  FitOptions options_;
  std::vector<std::vector<double>> x_;
  std::vector<double> y_;
  std::vector<double> coef_, se_;
  std::vector<std::string> coef_names_;
  /// (X'X + lambda)^-1 and X'X for intervals (row-major, p x p).
  std::vector<double> xtx_inv_, xtx_;
  double r2_ = 0, rse_ = 0, dof_ = 0;
  std::vector<double> loo_ape_;
  double loo_median_ = 0, loo_max_ = 0, loo_within_ = 0;

  /// `allow_exact`: as many points as coefficients (leave-one-out refits of small sets).
  static Projection fit_one(const std::vector<std::vector<double>>& x,
                            const std::vector<double>& y, FitModel model,
                            const FitOptions& options, bool with_loo, bool allow_exact = false);
  double point_estimate(const std::vector<double>& x) const;
};

/// A projected figure against a budget: fits when the estimate is within the limit; confidence
/// is the probability, under the prediction's t distribution, that the true figure is (unset
/// when the fit has no degrees of freedom left). Throws Error as check_budget(double, double).
BudgetCheck check_budget(const Prediction& prediction, double limit);

/// A projection for one device (and optionally one model family), saved with its points.
struct Calibration {
  std::string device;     ///< name of the device the figures were measured on
  std::string family;     ///< "" = any
  Projection projection;  ///< the fit; its target names the figure it predicts
  /// How the emulated runs its features came from emulated the device's cores: "projected",
  /// "pooled" or "per-core" (to_string(CoreEmulation)); "" when not recorded. project()
  /// refuses a result emulated otherwise unless every feature is the device's all-core figure
  /// or a memory figure: a one-core time under projection is not a pooled run's time.
  std::string core_emulation = {};
};

/// JSON: {"schema": "edgeprof.calibrations", "schema_version": 1, "calibrations": [...]},
/// each with its device, family, model, features, target, ridge and points; loading refits them
/// (the fit is a deterministic function of the points) and checks the coefficients.
std::string calibrations_to_json(const std::vector<Calibration>& calibrations);
/// Reads what calibrations_to_json wrote. Throws Error for text that is not a calibration file,
/// a newer schema version, a fit that fails, or coefficients the points no longer reproduce
/// (an edited file).
std::vector<Calibration> calibrations_from_json(std::string_view json);

/// The calibration for (device, family, target): an exact family match first, then one for any
/// family. A catalog device's alias matches its name ("raspberry-pi-4" and
/// "raspberry-pi-4b-4gb" are one device). With core_emulation (how the runs to project were
/// emulated: "projected", "pooled", "per-core"), one fitted under it is taken before one that
/// did not record it, and either before one fitted under another (which project() refuses
/// unless its features mean the same under both); within each, the family order above.
/// nullopt when there is none. Throws Error for an unknown core_emulation.
std::optional<Calibration> find_calibration(const std::vector<Calibration>& calibrations,
                                            const std::string& device, const std::string& target,
                                            const std::string& family = "",
                                            const std::string& core_emulation = "");

/// Applies a calibration to a result: its features are the result's figures (figure()), and the
/// projected figure is labelled "projected". Throws Error when the result lacks a feature, or
/// when the calibration recorded a core emulation other than the result's and a feature is
/// neither an all_cores_* figure nor a memory figure (peak_memory_bytes, memory_*_bytes,
/// child_max_rss_bytes, a phase's memory_net_peak_bytes).
Prediction project(const Calibration& calibration, const Result& result,
                   double confidence = 0.95);

}  // namespace edgeprof
EDGEPROF_API_END
