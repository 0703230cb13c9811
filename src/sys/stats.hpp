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
  const double a = values[lo], b = values[hi], fraction = pos - double(lo);
  // An infinity at either end (a leave-one-out error of a refit that failed) is the answer,
  // not inf * 0 = NaN: a NaN median made auto keep the model whose refits failed.
  if (fraction == 0 || a == b) return a;
  if (std::isinf(a) != std::isinf(b)) return std::isinf(a) ? a : b;
  return a + (b - a) * fraction;  // -inf and inf: NaN
}

inline double median_of(std::vector<double> values) { return percentile(std::move(values), 0.5); }

}  // namespace edgeprof::detail
