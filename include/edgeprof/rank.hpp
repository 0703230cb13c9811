/// @file
/// Deciding between models: rankings that admit ties when the data cannot tell two items apart,
/// agreement between two rankings, Pareto fronts, and budget checks for HPO scoring.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edgeprof/export.hpp"
#include "edgeprof/result.hpp"

EDGEPROF_API_BEGIN
namespace edgeprof {

/// One thing to rank: a name and the repeated measurements of the figure ranked on (one value
/// when measured once).
struct RankItem {
  std::string name;             ///< names the item in the ranking
  std::vector<double> samples;  ///< the measurements, finite, at least one
};

/// How two items' samples are compared.
enum class RankTest {
  /// Mann-Whitney U, two-sided: exact distribution for small samples without ties, normal
  /// approximation with tie correction otherwise. Needs no normality, but cannot separate
  /// anything with fewer than 4 runs per item at alpha = 0.05 (the smallest possible p-value
  /// with 3 vs 3 runs is 0.1): use 5 or more repeats.
  mann_whitney,
  /// Welch's t test, two-sided: works from 2 runs per item, assumes roughly normal figures.
  welch,
};

/// How rank() orders and separates items.
struct RankOptions {
  bool higher_is_better = false;           ///< e.g. accuracy; false for time and memory
  RankTest test = RankTest::mann_whitney;  ///< decides whether two items differ
  double alpha = 0.05;                     ///< significance level of each pairwise comparison
};

/// One item's place in a ranking.
struct RankedItem {
  std::string name;       ///< the item's name
  std::size_t index = 0;  ///< position in the input
  double value = 0;       ///< the median of the samples
  std::size_t n = 0;      ///< number of samples
  /// 1 + the number of items significantly better than this one (competition ranking), made
  /// non-decreasing along the median order (an item never ranks above one with a better
  /// median): items that the test cannot separate share a rank.
  int rank = 0;
  bool tied = false;  ///< shares its rank with another item
};

/// Ranks by median, best first; ties as above (items with one sample each are compared by value
/// alone: equal values tie; with Welch's test, one sample cannot be told from several). Items
/// of equal median keep their input order (stable). Throws Error for an empty sample, NaN or
/// infinite values, or an alpha outside (0, 1).
std::vector<RankedItem> rank(const std::vector<RankItem>& items, const RankOptions& options = {});

/// Two-sided p-value of the Mann-Whitney U test comparing two samples (as
/// scipy.stats.mannwhitneyu: exact when a sample has at most 8 values and there are no ties).
/// Throws Error when a sample is empty or holds NaN or an infinity.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);
/// Two-sided p-value of Welch's t test comparing two samples. Throws Error when a sample has
/// fewer than 2 values or holds NaN or an infinity.
double welch_p(const std::vector<double>& a, const std::vector<double>& b);

/// Agreement between two orderings of the same items (x[i] and y[i] describe item i).
struct Agreement {
  double coefficient = 0;  ///< Spearman rho or Kendall tau-b
  double p_value = 1;      ///< two-sided, against no association
  /// p from the exact distribution: Kendall without ties up to 49 items, either coefficient by
  /// enumerating all orderings up to 9 items; else asymptotic (t for Spearman, normal with the
  /// tie-corrected variance for Kendall), as scipy.stats does.
  bool exact = false;
  std::size_t n = 0;  ///< number of items
};
/// Spearman's rho (Pearson correlation of average ranks: ties handled). Throws Error for fewer
/// than 3 items, different lengths, NaN or infinite values, or a constant input.
Agreement spearman(const std::vector<double>& x, const std::vector<double>& y);
/// Kendall's tau-b (ties in either ordering handled). Throws Error as spearman() does.
Agreement kendall(const std::vector<double>& x, const std::vector<double>& y);

/// Pareto front: item i is on the front when no other item is at least as good in every metric
/// and better in one. metrics[m][i] is item i's value of metric m; maximize[m] says whether
/// higher is better. Returns one flag per item. Throws Error for no metrics, a `maximize` of
/// another length than `metrics`, metrics of different lengths, or values that are not finite.
std::vector<bool> pareto_front(const std::vector<std::vector<double>>& metrics,
                               const std::vector<bool>& maximize);

/// Whether a figure fits a budget (lower is better: latency, memory).
struct BudgetCheck {
  bool fits = false;           ///< value <= limit
  double value = 0;            ///< the figure (estimate when projected)
  double limit = 0;            ///< the budget
  double margin = 0;           ///< limit - value (negative: over budget)
  double margin_fraction = 0;  ///< margin / limit
  /// Probability that the true figure is within the limit: from the prediction's t
  /// distribution when a calibration projected the figure; unset otherwise (a measured figure,
  /// or one projected from one core, whose speed-up has no t distribution).
  std::optional<double> confidence;
  /// "projected" for a projection's check; for a figure's, "measured" here and, in a Score,
  /// as the figure was obtained ("measured", "sampled", "projected" or "estimated").
  std::string provenance;
};
/// A measured figure against a limit. Throws Error unless the figure is finite and the limit
/// finite and positive.
BudgetCheck check_budget(double value, double limit);

/// The value of a named figure of a result: "wall_time_s", "cpu_time_s", "cpu_user_s",
/// "cpu_system_s", "peak_memory_bytes", "throttled_s", "child_max_rss_bytes", the summary's
/// figures ("cpu_cores_avg", "memory_avg_bytes", ...) and "phase.<name>.wall_time_s" /
/// ".cpu_s" (summed over the phase's occurrences) / ".memory_net_peak_bytes" (the largest); see
/// figures(). Throws Error naming the figures available when it is missing.
double figure(const Result& result, const std::string& name);
/// The values of a figure over the counted runs, to rank or compare. Throws Error when a run
/// lacks it, and when a run failed (its figures would measure the failure: the time to a
/// crash, a kill or the timeout).
std::vector<double> figure_samples(const RepeatedResult& result, const std::string& name);
/// The same of one run: its figure, as one sample.
std::vector<double> figure_samples(const Result& result, const std::string& name);

}  // namespace edgeprof
EDGEPROF_API_END
