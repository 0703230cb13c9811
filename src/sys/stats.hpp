// Order statistics shared by the analysis code.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace edgeprof::detail {

// Linear interpolation between order statistics (numpy's default), on a copy; q in [0, 1].
// The sample must not be empty.
inline double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q * double(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - double(lo));
}

inline double median_of(std::vector<double> values) { return percentile(std::move(values), 0.5); }

}  // namespace edgeprof::detail
