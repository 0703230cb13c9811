// A device's CNN inference time as a multiple of this host's plus a cost per MB of activations
// (NnMemoryFit): what one speed misses on boards whose memory is slow beside their arithmetic.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "sys/stats.hpp"

namespace edgeprof {
namespace {

struct Row {
  std::string name;
  double device = 0, host = 0, mb = 0;
};

// Least squares on relative errors, both terms >= 0: minimise sum((a h + b m) / d - 1)^2. The
// two-term solution where it is non-negative, else the better of the one-term ones.
std::pair<double, double> fit(const std::vector<const Row*>& rows) {
  double xx = 0, xy = 0, yy = 0, x1 = 0, y1 = 0;
  for (const Row* r : rows) {
    const double x = r->host / r->device, y = r->mb / r->device;
    xx += x * x, xy += x * y, yy += y * y, x1 += x, y1 += y;
  }
  const double det = xx * yy - xy * xy;
  if (det > 1e-12 * xx * yy) {
    const double a = (x1 * yy - y1 * xy) / det, b = (y1 * xx - x1 * xy) / det;
    if (a >= 0 && b >= 0) return {a, b};
  }
  // One term: a = x1 / xx leaves sum(1) - x1^2 / xx; the smaller residual wins.
  if (x1 * x1 / xx >= y1 * y1 / yy) return {x1 / xx, 0.0};
  return {0.0, y1 / yy};
}

}  // namespace

double nn_memory_predict(const NnMemoryFit& f, double host_ms, double activation_mb) {
  if (!(std::isfinite(host_ms) && host_ms > 0)) {
    throw Error(fmt::format("nn_memory_predict: the host time is {} ms; give this host's "
                            "one-thread time of the model, a positive number of ms",
                            host_ms));
  }
  if (!(std::isfinite(activation_mb) && activation_mb >= 0)) {
    throw Error(fmt::format("nn_memory_predict: the activations are {} MB; give the MB the model "
                            "writes (NnRating.activation_mb), 0 or more",
                            activation_mb));
  }
  return f.per_host_ms * host_ms + f.ms_per_mb * activation_mb;
}

NnMemoryFit nn_memory_fit(const std::map<std::string, double>& device_ms,
                          const std::map<std::string, double>& host_ms,
                          const std::map<std::string, double>& activation_mb) {
  std::vector<Row> rows;
  for (const auto& [name, d] : device_ms) {
    const auto h = host_ms.find(name);
    const auto m = activation_mb.find(name);
    if (h == host_ms.end() || m == activation_mb.end()) continue;
    for (const auto& [what, v] : {std::pair<const char*, double>{"device time", d},
                                  {"host time", h->second},
                                  {"activation MB", m->second}}) {
      if (!std::isfinite(v) || v <= 0) {
        throw Error(fmt::format("memory fit: the {} of {} is {}; give a positive number", what,
                                name, v));
      }
    }
    rows.push_back({name, d, h->second, m->second});
  }
  if (rows.size() < 4) {
    throw Error(fmt::format(
        "memory fit: {} model{} with a device time, a host time and activation MB; it needs at "
        "least 4 (two terms, each model held out): measure the rating with a runner that "
        "reports activations (PyTorch's, ONNX Runtime's)",
        rows.size(), rows.size() == 1 ? "" : "s"));
  }
  std::vector<const Row*> all;
  for (const Row& r : rows) all.push_back(&r);
  NnMemoryFit out;
  std::tie(out.per_host_ms, out.ms_per_mb) = fit(all);
  std::vector<double> errors, logs;
  for (const Row& held : rows) {
    std::vector<const Row*> others;
    for (const Row& r : rows) {
      if (&r != &held) others.push_back(&r);
    }
    const auto [a, b] = fit(others);
    const double predicted = a * held.host + b * held.mb;
    out.held_out_ms[held.name] = predicted;
    errors.push_back(std::abs(predicted / held.device - 1));
    logs.push_back(std::log(held.device / predicted));
  }
  out.loo_median_error = detail::median_of(errors);
  out.loo_worst_error = *std::max_element(errors.begin(), errors.end());
  // About 0, as NnSpeed's: least squares on relative errors predicts low, and an interval
  // about the prediction must take that bias in.
  double squares = 0;
  for (double l : logs) squares += l * l;
  out.loo_log_sd = std::sqrt(squares / double(logs.size() - 1));
  return out;
}

}  // namespace edgeprof
