// Rankings with ties, rank agreement, Pareto fronts, budgets, and figures of results.
#include "edgeprof/rank.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "edgeprof/error.hpp"
#include "sys/stats.hpp"

namespace edgeprof {

namespace {

using detail::median_of;

void check_finite(const std::vector<double>& v, const std::string& what) {
  for (double x : v) {
    if (!std::isfinite(x)) throw Error(fmt::format("{} contains {}: give finite numbers", what, x));
  }
}

// Two-sided normal tail: P(|Z| >= z).
double normal_two_sided(double z) { return std::erfc(std::fabs(z) / std::sqrt(2.0)); }

// Average ranks (1-based), ties sharing the mean of their positions.
std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double r = 0.5 * double(i + j) + 1.0;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = r;
    i = j + 1;
  }
  return ranks;
}

// Sizes of the groups of equal values.
std::vector<double> tie_groups(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<double> groups;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[i]) ++j;
    if (j > i) groups.push_back(double(j - i + 1));
    i = j + 1;
  }
  return groups;
}

// The largest m * n the exact Mann-Whitney test counts arrangements for: two rows of counts
// of 160 MB each at the most.
constexpr double kExactMannWhitneyCells = 2e7;

// Number of arrangements of m x-values and n y-values with statistic U = u, for u = 0..m*n:
// the coefficients of the Gaussian binomial [m + n choose m]_q, the product over k = 1..m of
// (1 - q^(n+k)) / (1 - q^k), each step's quotient again a polynomial of degree k*n. O(m^2 n)
// time and O(m n) memory with m the smaller sample (a table over both sizes took O(m n^2)
// memory: 80 GB for 8 values against 50,000).
std::vector<double> mann_whitney_counts(size_t m, size_t n) {
  if (m > n) std::swap(m, n);  // U's distribution is symmetric in the two sizes
  std::vector<double> f{1.0};
  for (size_t k = 1; k <= m; ++k) {
    std::vector<double> g(k * n + 1, 0.0);
    for (size_t u = 0; u < g.size(); ++u) {
      // times (1 - q^(n+k)), then over (1 - q^k): g[u] = f[u] - f[u-n-k] + g[u-k]
      double h = u < f.size() ? f[u] : 0.0;
      if (u >= n + k && u - n - k < f.size()) h -= f[u - n - k];
      g[u] = h + (u >= k ? g[u - k] : 0.0);
    }
    f = std::move(g);
  }
  return f;
}

}  // namespace

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) throw Error("the Mann-Whitney test needs samples on both sides");
  check_finite(a, "the Mann-Whitney test's first sample");
  check_finite(b, "the Mann-Whitney test's second sample");
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  const auto ranks = average_ranks(all);
  const double n1 = double(a.size()), n2 = double(b.size()), n = n1 + n2;
  double r1 = 0;
  for (size_t i = 0; i < a.size(); ++i) r1 += ranks[i];
  const double u1 = r1 - n1 * (n1 + 1) / 2;
  const double u = std::max(u1, n1 * n2 - u1);
  const auto ties = tie_groups(all);
  // As scipy.stats.mannwhitneyu(method="auto"): exact when a sample has at most 8 values and
  // there are no ties, else the normal approximation with tie and continuity corrections.
  // Past kExactMannWhitneyCells the approximation too.
  if (ties.empty() && std::min(a.size(), b.size()) <= 8 &&
      double(a.size()) * double(b.size()) <= kExactMannWhitneyCells) {
    const auto counts = mann_whitney_counts(a.size(), b.size());
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    // P(U >= u) as P(U <= m n - u) (U is symmetric): the small coefficients are sums of
    // positive terms only, so a tiny p value keeps its precision.
    const auto lower_end = static_cast<size_t>(std::llround(n1 * n2 - u));
    double tail = 0;
    for (size_t k = 0; k <= lower_end && k < counts.size(); ++k) tail += counts[k];
    return std::min(1.0, 2.0 * tail / total);
  }
  double tie_term = 0;
  for (double t : ties) tie_term += t * t * t - t;
  const double sigma = std::sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))));
  if (sigma == 0) return 1.0;
  const double z = (u - n1 * n2 / 2 - 0.5) / sigma;
  return std::min(1.0, z <= 0 ? 1.0 : normal_two_sided(z));
}

double welch_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) throw Error("Welch's t test needs 2 or more values per side");
  check_finite(a, "Welch's t test's first sample");
  check_finite(b, "Welch's t test's second sample");
  auto moments = [](const std::vector<double>& v) {
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    return std::pair<double, double>{mean, ss / double(v.size() - 1)};
  };
  auto [m1, v1] = moments(a);
  auto [m2, v2] = moments(b);
  const double s1 = v1 / double(a.size()), s2 = v2 / double(b.size());
  if (!std::isfinite(s1 + s2) || !std::isfinite(m1 - m2)) {
    throw Error("Welch's t test: the samples' spread or difference overflows a double (values "
                "near 1e154 or more); rescale them (seconds to kiloseconds)");
  }
  if (s1 + s2 == 0) return m1 == m2 ? 1.0 : 0.0;
  const double t = (m1 - m2) / std::sqrt(s1 + s2);
  // Welch-Satterthwaite, in shares of s1 + s2 (their squares underflowed for tiny spreads).
  const double r1 = s1 / (s1 + s2), r2 = s2 / (s1 + s2);
  const double dof = 1.0 / (r1 * r1 / double(a.size() - 1) + r2 * r2 / double(b.size() - 1));
  return std::min(1.0, 2.0 * (1.0 - student_t_cdf(std::fabs(t), dof)));
}

std::vector<RankedItem> rank(const std::vector<RankItem>& items, const RankOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1)) {
    throw Error(fmt::format("alpha must be between 0 and 1, got {}", options.alpha));
  }
  std::vector<RankedItem> out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].samples.empty()) {
      throw Error(fmt::format("'{}' has no measurements to rank", items[i].name));
    }
    check_finite(items[i].samples, fmt::format("the measurements of '{}'", items[i].name));
    out.push_back({items[i].name, i, median_of(items[i].samples), items[i].samples.size(), 0,
                   false});
  }
  const double sign = options.higher_is_better ? -1.0 : 1.0;  // lower key = better
  // better[i][j]: item j is significantly better than item i.
  auto separated = [&](size_t i, size_t j) {
    const auto& a = items[i].samples;
    const auto& b = items[j].samples;
    if (a.size() == 1 && b.size() == 1) return a[0] != b[0];
    if (options.test == RankTest::welch && (a.size() < 2 || b.size() < 2)) return false;
    const double p = options.test == RankTest::welch ? welch_p(a, b) : mann_whitney_p(a, b);
    return p < options.alpha;
  };
  for (size_t i = 0; i < out.size(); ++i) {
    int better = 0;
    for (size_t j = 0; j < out.size(); ++j) {
      if (j != i && sign * out[j].value < sign * out[i].value && separated(i, j)) ++better;
    }
    out[i].rank = 1 + better;
  }
  // Best median first (input order among equal medians); a rank never goes down along it.
  std::stable_sort(out.begin(), out.end(), [&](const RankedItem& a, const RankedItem& b) {
    return sign * a.value < sign * b.value;
  });
  for (size_t i = 1; i < out.size(); ++i) out[i].rank = std::max(out[i].rank, out[i - 1].rank);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].tied = (i > 0 && out[i - 1].rank == out[i].rank) ||
                  (i + 1 < out.size() && out[i + 1].rank == out[i].rank);
  }
  return out;
}

namespace {

void check_pair(const std::vector<double>& x, const std::vector<double>& y, const char* what) {
  if (x.size() != y.size()) {
    throw Error(fmt::format("{} needs two orderings of the same items: got {} and {} values",
                            what, x.size(), y.size()));
  }
  if (x.size() < 3) throw Error(fmt::format("{} needs at least 3 items, got {}", what, x.size()));
  check_finite(x, "the first ordering");
  check_finite(y, "the second ordering");
  auto constant = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [&](double a) { return a == v.front(); });
  };
  if (constant(x) || constant(y)) {
    throw Error(fmt::format("{} is undefined when all items have the same value", what));
  }
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = double(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

double tau_b(const std::vector<double>& x, const std::vector<double>& y, double* s_out = nullptr) {
  double concordant = 0, discordant = 0, tx = 0, ty = 0;
  const size_t n = x.size();
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx == 0 && dy == 0) continue;
      if (dx == 0) {
        ++tx;
      } else if (dy == 0) {
        ++ty;
      } else if ((dx > 0) == (dy > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  }
  if (s_out) *s_out = concordant - discordant;
  return (concordant - discordant) /
         std::sqrt((concordant + discordant + tx) * (concordant + discordant + ty));
}

// Exact two-sided permutation p-value: the share of orderings of y at least as extreme.
template <class Stat>
double permutation_p(const std::vector<double>& x, std::vector<double> y, double observed,
                     Stat stat) {
  std::sort(y.begin(), y.end());
  double extreme = 0, total = 0;
  do {
    ++total;
    if (std::fabs(stat(x, y)) >= std::fabs(observed) - 1e-12) ++extreme;
  } while (std::next_permutation(y.begin(), y.end()));
  return extreme / total;
}

constexpr size_t kExactUpTo = 9;  // 9! = 362880 orderings

// Without ties: P(discordant pairs <= c) over all n! orderings, from the number of permutations
// of n with k inversions (Mahonian numbers), two-sided as scipy's exact Kendall test.
double kendall_exact_p(size_t n, double concordant, double discordant) {
  const size_t max_inv = n * (n - 1) / 2;
  std::vector<double> counts(max_inv + 1, 0.0);
  counts[0] = 1.0;
  for (size_t m = 2; m <= n; ++m) {  // insert element m: adds 0..m-1 inversions
    std::vector<double> next(max_inv + 1, 0.0);
    double window = 0;
    for (size_t k = 0; k <= max_inv; ++k) {
      window += counts[k];
      if (k >= m) window -= counts[k - m];
      next[k] = window;
    }
    counts = std::move(next);
  }
  double total = 0;
  for (double c : counts) total += c;
  const size_t c = static_cast<size_t>(std::llround(std::min(concordant, discordant)));
  double lower = 0;
  for (size_t k = 0; k <= c && k <= max_inv; ++k) lower += counts[k];
  return std::min(1.0, 2.0 * lower / total);
}

}  // namespace

Agreement spearman(const std::vector<double>& x, const std::vector<double>& y) {
  check_pair(x, y, "Spearman's rho");
  Agreement a;
  a.n = x.size();
  const auto rx = average_ranks(x), ry = average_ranks(y);
  a.coefficient = pearson(rx, ry);
  if (a.n <= kExactUpTo) {
    a.exact = true;
    a.p_value = permutation_p(rx, ry, a.coefficient, pearson);
  } else if (std::fabs(a.coefficient) >= 1.0) {
    a.p_value = 0;
  } else {
    const double dof = double(a.n) - 2;
    const double t = a.coefficient * std::sqrt(dof / (1 - a.coefficient * a.coefficient));
    a.p_value = std::min(1.0, 2.0 * (1.0 - student_t_cdf(std::fabs(t), dof)));
  }
  return a;
}

Agreement kendall(const std::vector<double>& x, const std::vector<double>& y) {
  check_pair(x, y, "Kendall's tau");
  Agreement a;
  a.n = x.size();
  double s = 0;
  a.coefficient = tau_b(x, y, &s);
  const bool ties = !tie_groups(x).empty() || !tie_groups(y).empty();
  if (!ties && a.n < 50) {
    a.exact = true;
    const double pairs = double(a.n) * double(a.n - 1) / 2;
    a.p_value = kendall_exact_p(a.n, (pairs + s) / 2, (pairs - s) / 2);
    return a;
  }
  if (a.n <= kExactUpTo) {
    a.exact = true;
    a.p_value = permutation_p(x, y, a.coefficient,
                              [](const auto& u, const auto& v) { return tau_b(u, v); });
    return a;
  }
  // The normal approximation of S with the tie-corrected variance (as scipy.stats.kendalltau).
  const double n = double(a.n);
  double x0 = 0, x1 = 0, x2 = 0, y0 = 0, y1 = 0, y2 = 0;
  for (double t : tie_groups(x)) {
    x0 += t * (t - 1) * (2 * t + 5);
    x1 += t * (t - 1) * (t - 2);
    x2 += t * (t - 1);
  }
  for (double t : tie_groups(y)) {
    y0 += t * (t - 1) * (2 * t + 5);
    y1 += t * (t - 1) * (t - 2);
    y2 += t * (t - 1);
  }
  const double var = (n * (n - 1) * (2 * n + 5) - x0 - y0) / 18.0 +
                     x1 * y1 / (9.0 * n * (n - 1) * (n - 2)) + x2 * y2 / (2.0 * n * (n - 1));
  a.p_value = var > 0 ? std::min(1.0, normal_two_sided(s / std::sqrt(var))) : 1.0;
  return a;
}

std::vector<bool> pareto_front(const std::vector<std::vector<double>>& metrics,
                               const std::vector<bool>& maximize) {
  if (metrics.size() != maximize.size()) {
    throw Error(fmt::format("pareto_front: {} metrics but {} directions", metrics.size(),
                            maximize.size()));
  }
  if (metrics.empty()) throw Error("pareto_front needs at least one metric");
  const size_t n = metrics.front().size();
  for (size_t m = 0; m < metrics.size(); ++m) {
    if (metrics[m].size() != n) {
      throw Error(fmt::format("pareto_front: metric {} has {} values, metric 0 has {}", m,
                              metrics[m].size(), n));
    }
    check_finite(metrics[m], fmt::format("metric {}", m));
  }
  std::vector<bool> front(n, true);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n && front[i]; ++j) {
      if (i == j) continue;
      bool all_at_least = true, one_better = false;
      for (size_t m = 0; m < metrics.size(); ++m) {
        const double a = maximize[m] ? -metrics[m][j] : metrics[m][j];  // j's, lower = better
        const double b = maximize[m] ? -metrics[m][i] : metrics[m][i];
        if (a > b) all_at_least = false;
        if (a < b) one_better = true;
      }
      if (all_at_least && one_better) front[i] = false;  // j dominates i
    }
  }
  return front;
}

BudgetCheck check_budget(double value, double limit) {
  if (!std::isfinite(value) || !std::isfinite(limit) || limit <= 0) {
    throw Error(fmt::format("a budget check needs a finite figure and a positive limit, got "
                            "{} against {}",
                            value, limit));
  }
  BudgetCheck c;
  c.value = value;
  c.limit = limit;
  c.margin = limit - value;
  c.margin_fraction = c.margin / limit;
  c.fits = value <= limit;
  c.provenance = "measured";
  return c;
}

double figure(const Result& result, const std::string& name) {
  const auto f = figures(result);
  auto it = f.find(name);
  if (it == f.end()) {
    std::vector<std::string> names;
    for (const auto& [n, v] : f) names.push_back(n);
    throw Error(fmt::format("this result has no figure '{}'; it has: {}", name,
                            fmt::join(names, ", ")));
  }
  return it->second;
}

namespace {

// A failed run's figures measure the failure (the time to a crash, an OOM kill or the
// timeout), not the workload: ranked, a model killed early came out fastest.
void refuse_failed(const Result& r, std::size_t index, std::size_t count) {
  if (r.ok()) return;
  const std::string how = r.timed_out     ? "timed out"
                          : r.oom_killed  ? "was killed out of memory"
                          : r.signal      ? fmt::format("was ended by signal {}", *r.signal)
                          : r.exit_code   ? fmt::format("exited with code {}", *r.exit_code)
                                          : std::string("has no exit status");
  throw Error(fmt::format("run {} of {} {}: a failed run's figures measure the failure (the time "
                          "to a crash, a kill or the timeout), not the workload; rank the figures "
                          "of the runs that succeeded (as numbers), or run it again",
                          index + 1, count, how));
}

}  // namespace

std::vector<double> figure_samples(const RepeatedResult& result, const std::string& name) {
  std::vector<double> out;
  for (std::size_t i = 0; i < result.runs.size(); ++i) {
    refuse_failed(result.runs[i], i, result.runs.size());
    out.push_back(figure(result.runs[i], name));
  }
  return out;
}

std::vector<double> figure_samples(const Result& result, const std::string& name) {
  refuse_failed(result, 0, 1);
  return {figure(result, name)};
}

}  // namespace edgeprof
