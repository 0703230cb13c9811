// The part of calibrate_speed() that tests reach directly: the calibration at one candidate
// period, with the measuring of a workload at a speed passed in (calibrate_speed's runs it
// under emulation; a test gives figures of its own, to reach an edge no real run reaches on
// purpose).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "edgeprof/calibrate.hpp"

namespace edgeprof::detail {

// The share of a workload's figure, at the slowest speed measured, that must scale with 1 /
// speed for the workload to take part in solving for the speed.
inline constexpr double kSensitiveShare = 0.05;

// One workload measured at one core speed: its figure (the median of its runs) and the CFS
// period those runs had.
struct SpeedSample {
  double value = 0;
  std::uint64_t period_us = 0;
};

// Measures `workload` at core speed `speed`.
using MeasureAtSpeed = std::function<SpeedSample(const DeviceMeasurement& workload, double speed)>;

// The calibration at one period: every workload measured at `speeds`, solved, measured at the
// solution, solved again with those points, and measured once more at the second solution
// when it moved by more than 2%. What it returns describes one solution, the one whose speed it
// reports: each workload's model and speed_sensitive flag are those the speed was solved with
// (fitted to every point but the last speed's), its notes that speed's and those flags', the
// residuals the runs at that speed.
class PeriodRun {
 public:
  // `cores` is the device's (the cap's note names them); [lo, hi] the speeds solved over;
  // `on_round` is called before each round of measurements (every workload at one speed).
  PeriodRun(const std::vector<DeviceMeasurement>& workloads, int cores, double lo, double hi,
            MeasureAtSpeed measure, std::function<void()> on_round = {},
            std::string figure = "figure");

  PeriodSpeedFit operator()(const std::vector<double>& speeds);

 private:
  // A solution and what it was solved with, per workload.
  struct Solution {
    double speed = 0;
    std::vector<SpeedModel> models;
    std::vector<bool> sensitive;
  };

  void measure_all(double speed, PeriodSpeedFit& fit);
  Solution solve(const PeriodSpeedFit& fit) const;

  const std::vector<DeviceMeasurement>& workloads_;
  int cores_;
  double lo_, hi_;
  MeasureAtSpeed measure_;
  std::function<void()> on_round_;
  std::string figure_;  // its name, for the errors
  std::uint64_t period_us_ = 0;
  std::set<std::uint64_t> periods_seen_;  // the plan may lengthen a period at a low quota
};

}  // namespace edgeprof::detail
