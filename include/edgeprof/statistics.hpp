/// @file
/// Statistics of repeated figures: median, mean, spread and a Student t interval.
#pragma once

#include <cstddef>
#include <vector>

#include "edgeprof/export.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// Statistics of one figure over repeated runs.
struct Statistic {
  std::size_t n = 0;  ///< number of values
  ///@{
  /// Median, mean and sample standard deviation (n - 1; 0 for one value).
  double median = 0, mean = 0, stddev = 0;
  ///@}
  ///@{
  /// Student t 95% interval of the mean (n >= 2; the mean itself for one value).
  double ci95_low = 0, ci95_high = 0;
  ///@}
  ///@{
  /// The smallest and the largest value.
  double min = 0, max = 0;
  ///@}
};
/// Every field equal.
bool operator==(const Statistic& a, const Statistic& b);
/// Describes a sample. Throws Error for an empty sample or one holding NaN or an infinity.
Statistic statistics(const std::vector<double>& values);

/// Student t quantile: the t with P(T <= t) = p for `dof` degrees of freedom (infinite: the
/// normal distribution's). Throws Error unless 0 < p < 1 and dof > 0.
double student_t_quantile(double p, double dof);
/// P(T <= t) for Student's t with `dof` degrees of freedom (infinite: the normal
/// distribution). Throws Error for a NaN t or unless dof > 0.
double student_t_cdf(double t, double dof);

}  // namespace edgeprof
EDGEPROF_API_END
