// Ranking, agreement, Pareto fronts, budgets and projections, on hand-checked small cases.
// Reference values: scipy 1.16 (stats.mannwhitneyu, ttest_ind, spearmanr, kendalltau,
// permutation_test, linregress, theilslopes, t.ppf), noted next to each.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "edgeprof/edgeprof.hpp"
#include "sys/stats.hpp"

using namespace edgeprof;

TEST_CASE("two-sample tests match scipy", "[analysis]") {
  // Exact Mann-Whitney (no ties, a sample of at most 8).
  CHECK(mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}) == Approx(0.007936507936507936));
  CHECK(mann_whitney_p({1, 2, 3}, {4, 5, 6}) == Approx(0.1));  // 3 vs 3 cannot reach 0.05
  const std::vector<double> twenty = {3,  4,  6,  7,  8,  10, 11, 12, 14, 15,
                                      16, 17, 18, 19, 20, 21, 22, 23, 24, 25};
  CHECK(mann_whitney_p({1, 5, 9, 13, 2.5, 30, 31, 40}, twenty) ==
        Approx(0.8226922835618488).epsilon(1e-12));
  CHECK(mann_whitney_p({4, 5, 6, 7, 8, 9, 10}, {1, 2, 3}) == Approx(2.0 / 120));  // either side
  // 8 values against 50,000: the exact counts took 80 GB (a table over both sizes); the
  // p value, 2 / C(50008, 8), is kept to its precision.
  std::vector<double> many(50000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = double(i + 100);
  CHECK(mann_whitney_p({1, 2, 3, 4, 5, 6, 7, 8}, many) == Approx(2.0628982626390534e-33));
  // Normal approximation with ties and continuity correction.
  CHECK(mann_whitney_p({1, 2, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 12}) ==
        Approx(0.03411273712347272).epsilon(1e-9));
  CHECK(welch_p({1, 2, 3, 4}, {3, 4, 5, 6.5}) == Approx(0.07572247714213783).epsilon(1e-9));
  CHECK(welch_p({1, 1}, {1, 1}) == 1.0);
  // Spreads whose squares underflow: the degrees of freedom were 0/0, the p value NaN.
  CHECK(welch_p({1e-150, 2e-150}, {3e-150, 4e-150}) ==
        Approx(welch_p({1, 2}, {3, 4})).epsilon(1e-9));
  CHECK_THROWS_AS(welch_p({1}, {1, 2}), Error);
  // Spreads past a double's range: named, not a p value of 1 (std::min(1.0, NaN)).
  CHECK_THROWS_WITH(welch_p({1e200, 2e200}, {1, 2}), Catch::Contains("overflows a double"));
}

TEST_CASE("rank: medians first, ties where the test cannot separate", "[analysis][rank]") {
  std::vector<RankItem> items = {
      {"slow", {10, 11, 12, 10.5, 11.5}},
      {"fast", {1, 1.1, 0.9, 1.05, 0.95}},
      {"fast-too", {1.02, 0.97, 1.08, 0.92, 1.01}},  // indistinguishable from "fast"
      {"middle", {5, 5.2, 4.9, 5.1, 5.05}},
  };
  const auto copy = items;
  auto ranked = rank(items);
  CHECK(items.size() == copy.size());  // the input is not modified
  CHECK(items[0].samples == copy[0].samples);
  REQUIRE(ranked.size() == 4);
  CHECK(ranked[0].rank == 1);
  CHECK(ranked[1].rank == 1);
  CHECK(ranked[0].tied);
  CHECK(ranked[1].tied);
  CHECK((ranked[0].name == "fast" || ranked[0].name == "fast-too"));
  CHECK(ranked[2].name == "middle");
  CHECK(ranked[2].rank == 3);  // two items are significantly better
  CHECK_FALSE(ranked[2].tied);
  CHECK(ranked[3].name == "slow");
  CHECK(ranked[3].rank == 4);
  CHECK(ranked[3].index == 0);
  CHECK(ranked[3].value == Approx(11));

  // Higher is better (accuracy), and single measurements compared by value.
  auto acc = rank({{"a", {0.7}}, {"b", {0.9}}, {"c", {0.9}}}, {true});
  CHECK(acc[0].name == "b");  // stable among equals
  CHECK(acc[1].name == "c");
  CHECK(acc[0].rank == 1);
  CHECK(acc[1].rank == 1);
  CHECK(acc[2].rank == 3);

  // With 3 runs each, Mann-Whitney cannot separate anything; Welch can.
  std::vector<RankItem> three = {{"x", {1, 1.1, 1.2}}, {"y", {2, 2.1, 2.2}}};
  CHECK(rank(three)[1].rank == 1);
  RankOptions welch;
  welch.test = RankTest::welch;
  CHECK(rank(three, welch)[1].rank == 2);

  CHECK_THROWS_WITH(rank({{"empty", {}}}), Catch::Contains("'empty' has no measurements"));
  CHECK_THROWS_WITH(rank({{"nan", {std::nan("")}}}), Catch::Contains("finite"));
  RankOptions bad;
  bad.alpha = 1.5;
  CHECK_THROWS_WITH(rank(three, bad), Catch::Contains("alpha"));
}

TEST_CASE("rank agreement: Spearman and Kendall, exact and asymptotic", "[analysis][rank]") {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7}, y = {2, 1, 4, 3, 7, 5, 6};
  auto s = spearman(x, y);
  CHECK(s.coefficient == Approx(0.8214285714285715));
  CHECK(s.exact);
  CHECK(s.p_value == Approx(0.034126984126984124));  // permutation_test, all pairings
  auto k = kendall(x, y);
  CHECK(k.coefficient == Approx(0.6190476190476191));
  CHECK(k.p_value == Approx(0.06904761904761905));  // kendalltau exact
  std::vector<double> x12, y12 = {0, 2, 1, 3, 5, 4, 7, 6, 9, 8, 11, 10};
  for (int i = 0; i < 12; ++i) x12.push_back(i);
  auto s12 = spearman(x12, y12);
  CHECK_FALSE(s12.exact);
  CHECK(s12.coefficient == Approx(0.965034965034965));
  CHECK(s12.p_value == Approx(3.880985299627466e-07).epsilon(1e-6));
  auto k12 = kendall(x12, y12);
  CHECK(k12.exact);
  CHECK(k12.p_value == Approx(1.6342325370103148e-05).epsilon(1e-9));
  // Ties, 12 items: tau-b with the tie-corrected normal approximation.
  const std::vector<double> xt = {1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10},
                            yt = {1, 3, 2, 2, 5, 4, 6, 6, 8, 7, 10, 9};
  auto kt = kendall(xt, yt);
  CHECK(kt.coefficient == Approx(0.84375));
  CHECK(kt.p_value == Approx(0.00018571312946413703).epsilon(1e-6));
  CHECK(spearman(xt, yt).coefficient == Approx(0.9542253521126759));

  CHECK_THROWS_WITH(spearman({1, 2}, {1, 2}), Catch::Contains("at least 3"));
  CHECK_THROWS_WITH(kendall({1, 2, 3}, {1, 2}), Catch::Contains("same items"));
  CHECK_THROWS_WITH(kendall({1, 1, 1}, {1, 2, 3}), Catch::Contains("same value"));
}

TEST_CASE("Pareto front with mixed directions", "[analysis][rank]") {
  // time (lower better), memory (lower better), accuracy (higher better)
  std::vector<std::vector<double>> m = {{1, 2, 3, 2}, {10, 5, 1, 6}, {0.7, 0.8, 0.9, 0.75}};
  auto front = pareto_front(m, {false, false, true});
  CHECK(front == std::vector<bool>{true, true, true, false});  // 3 is dominated by 1
  CHECK_THROWS_AS(pareto_front({{1, 2}, {1}}, {false, false}), Error);
}

TEST_CASE("projection: OLS reproduces scipy's linregress, with an exact leave-one-out",
          "[analysis][projection]") {
  const std::vector<double> x = {1, 2, 3, 4, 5}, y = {2.1, 3.9, 6.2, 7.8, 10.1};
  FitOptions o;
  o.model = FitModel::linear;
  auto p = Projection::fit(x, y, o);
  REQUIRE(p.coefficients().size() == 2);
  CHECK(p.coefficients()[1] == Approx(1.99));
  CHECK(p.coefficients()[0] == Approx(0.05).margin(1e-12));
  CHECK(p.standard_errors()[1] == Approx(0.059721576223897795));
  CHECK(p.standard_errors()[0] == Approx(0.19807406022327906));
  CHECK(p.r_squared() == Approx(0.997305328900977));
  CHECK(p.residual_standard_error() == Approx(0.18885620632287128));
  CHECK(p.loo_ape_median() == Approx(0.03846153846153844));
  CHECK(p.loo_ape_max() == Approx(0.07142857142857223));
  CHECK(p.loo_within_10pct() == 1.0);
  auto pred = p.predict(6.0);
  CHECK(pred.estimate == Approx(11.99));
  CHECK(pred.low == Approx(11.11903241162346));
  CHECK(pred.high == Approx(12.86096758837654));
  CHECK(pred.provenance == "projected");

  o.model = FitModel::origin;
  auto q = Projection::fit(x, y, o);
  CHECK(q.coefficients()[0] == Approx(2.003636363636364));
  CHECK(q.standard_errors()[0] == Approx(0.022286637585693218));

  o.model = FitModel::loglog;
  auto l = Projection::fit(x, y, o);
  CHECK(std::exp(l.coefficients()[0]) == Approx(2.0645148177648722));
  CHECK(l.coefficients()[1] == Approx(0.9753846856975045));
  CHECK(l.r_squared() == Approx(0.9977128110264435));
  auto lp = l.predict(6.0);
  CHECK(lp.low < lp.estimate);
  CHECK(lp.estimate < lp.high);
}

TEST_CASE("projection: Theil-Sen shrugs off one outlier; auto says what it picked",
          "[analysis][projection]") {
  const std::vector<double> x = {1, 2, 3, 4, 20}, y = {3.1, 2.0, 5.5, 1.0, 4.2};
  FitOptions o;
  o.model = FitModel::theil_sen;
  auto t = Projection::fit(x, y, o);
  CHECK(t.coefficients()[1] == Approx(-0.00928792569659442));  // theilslopes
  CHECK(t.coefficients()[0] == Approx(3.1278637770897832));

  // A clean line with one outlier: Theil-Sen predicts the others better than OLS.
  const std::vector<double> xs = {1, 2, 3, 4, 5, 6}, ys = {2, 4, 6, 8, 30, 12};
  o.model = FitModel::automatic;
  auto a = Projection::fit(xs, ys, o);
  CHECK(a.model() == FitModel::theil_sen);
  CHECK(a.reason().find("picked theil_sen") != std::string::npos);
  CHECK(a.reason().find("linear") != std::string::npos);
  CHECK(a.coefficients()[1] == Approx(2.0));
}

TEST_CASE("projection: features in bytes fit as in gigabytes; a refit that fails makes the "
          "median error infinite, not NaN",
          "[analysis][projection]") {
  // Measured against the largest column, a feature of 1e9 made the intercept look like zero:
  // "all measured inputs are equal".
  FitOptions o;
  o.model = FitModel::linear;
  o.features = {"peak_memory_bytes"};
  const auto bytes = Projection::fit({4e9, 5e9, 6e9, 7e9}, {4.4e9, 5.6e9, 6.5e9, 7.9e9}, o);
  const auto gigabytes = Projection::fit({4, 5, 6, 7}, {4.4, 5.6, 6.5, 7.9}, o);
  CHECK(bytes.coefficients()[1] == Approx(1.14));
  CHECK(bytes.coefficients()[1] == Approx(gigabytes.coefficients()[1]));
  CHECK(bytes.coefficients()[0] == Approx(gigabytes.coefficients()[0] * 1e9));
  const Prediction pb = bytes.predict(5.5e9), pg = gigabytes.predict(5.5);
  CHECK(pb.estimate == Approx(pg.estimate * 1e9));
  CHECK(pb.high - pb.low == Approx((pg.high - pg.low) * 1e9));
  CHECK(bytes.loo_ape_median() == Approx(gigabytes.loo_ape_median()));
  o.model = FitModel::theil_sen;
  CHECK(Projection::fit({4e9, 5e9, 6e9, 7e9}, {4.4e9, 5.6e9, 6.5e9, 7.9e9}, o)
            .coefficients()[1] == Approx(Projection::fit({4, 5, 6, 7}, {4.4, 5.6, 6.5, 7.9}, o)
                                             .coefficients()[1]));
  // Seconds beside bytes: "the features are collinear", with or without a ridge.
  const std::vector<std::vector<double>> x = {
      {0.004, 3.0e8}, {0.006, 4.1e8}, {0.009, 3.6e8}, {0.012, 5.2e8}, {0.015, 4.5e8}};
  const std::vector<double> y = {0.02, 0.031, 0.041, 0.058, 0.066};
  FitOptions m;
  m.model = FitModel::multi;
  m.features = {"wall_time_s", "peak_memory_bytes"};
  const auto mixed = Projection::fit(x, y, m);
  std::vector<std::vector<double>> scaled = x;
  for (auto& r : scaled) r[1] /= 1e9;
  const auto same = Projection::fit(scaled, y, m);
  CHECK(mixed.coefficients()[1] == Approx(same.coefficients()[1]));
  CHECK(mixed.coefficients()[2] * 1e9 == Approx(same.coefficients()[2]));
  m.ridge = 1;
  CHECK_NOTHROW(Projection::fit(x, y, m));
  // Truly equal inputs are still refused, in any unit.
  o.model = FitModel::linear;
  CHECK_THROWS_WITH(Projection::fit({5e9, 5e9, 5e9}, {1, 2, 3}, o),
                    Catch::Contains("all measured inputs are equal"));
  // And equal up to rounding: not a slope of 1e16.
  for (FitModel model : {FitModel::linear, FitModel::theil_sen}) {
    o.model = model;
    CHECK_THROWS_WITH(Projection::fit({0.3, 0.3, 0.30000000000000004}, {1, 2, 3}, o),
                      Catch::Contains("all measured inputs are equal"));
  }

  // Without the point at 2, x is {1, 1}: that refit fails, an infinite error. Its median was
  // NaN (inf * 0), and auto kept linear over origin's finite one.
  CHECK(detail::median_of({0.2, 0.167, std::numeric_limits<double>::infinity()}) == 0.2);
  CHECK(std::isinf(detail::median_of({0.2, std::numeric_limits<double>::infinity()})));
  o.model = FitModel::automatic;
  const auto picked = Projection::fit({1, 1, 2}, {1.0, 1.2, 2.1}, o);
  CAPTURE(picked.reason());
  CHECK(picked.model() == FitModel::origin);
  CHECK(std::isfinite(picked.loo_ape_median()));
  CHECK_THAT(picked.reason(), !Catch::Contains("nan"));
}

TEST_CASE("projection: several features, ridge, and errors for bad input",
          "[analysis][projection]") {
  // y = 1 + 2 x1 + 3 x2 exactly.
  std::vector<std::vector<double>> x = {{1, 1}, {2, 1}, {1, 3}, {3, 2}, {4, 5}, {2, 4}};
  std::vector<double> y;
  for (const auto& r : x) y.push_back(1 + 2 * r[0] + 3 * r[1]);
  FitOptions o;
  o.model = FitModel::multi;
  o.features = {"wall_time_s", "peak_memory_bytes"};
  auto m = Projection::fit(x, y, o);
  CHECK(m.coefficients()[0] == Approx(1).margin(1e-9));
  CHECK(m.coefficients()[1] == Approx(2));
  CHECK(m.coefficients()[2] == Approx(3));
  CHECK(m.predict({5, 5}).estimate == Approx(26));
  CHECK(m.coefficient_names()[2] == "a_peak_memory_bytes");
  o.ridge = 10;
  auto r = Projection::fit(x, y, o);
  CHECK(std::fabs(r.coefficients()[1]) < 2);  // shrunk
  CHECK(r.dof() > 3);                         // effective degrees of freedom grow

  CHECK_THROWS_WITH(Projection::fit(std::vector<double>{1, 2}, {1, 2}),
                    Catch::Contains("at least 3 calibration points"));
  CHECK_THROWS_WITH(Projection::fit(std::vector<double>{2, 2, 2}, {1, 2, 3}),
                    Catch::Contains("all measured inputs are equal"));
  CHECK_THROWS_WITH(Projection::fit(std::vector<double>{1, 2, std::nan("")}, {1, 2, 3}),
                    Catch::Contains("nan"));
  CHECK_THROWS_WITH(Projection::fit(std::vector<double>{1, 2, 3}, {1, -2, 3}),
                    Catch::Contains("must be positive"));
  CHECK_THROWS_WITH(Projection::fit(std::vector<double>{1, -2, 3}, {1, 2, 3}),
                    Catch::Contains("negative"));
  std::vector<std::vector<double>> collinear = {{1, 2}, {2, 4}, {3, 6}, {4, 8}};
  CHECK_THROWS_WITH(Projection::fit(collinear, {1, 2, 3, 4}, o), Catch::Contains("collinear"));
  o.model = FitModel::linear;
  CHECK_THROWS_WITH(Projection::fit(x, y, o), Catch::Contains("use 'multi'"));
  // A ridge penalty that only multi applies: refused, not dropped (fit --ridge 5 gave a plain
  // fit without a word).
  o.features = {"x"};
  CHECK_THROWS_WITH(Projection::fit(std::vector<double>{1, 2, 3, 4}, {1, 2, 3, 5}, o),
                    Catch::Contains("applies to model 'multi' only (several features), not "
                                    "'linear' with one feature"));
  o.model = FitModel::automatic;  // auto fits multi with several features only
  CHECK_THROWS_WITH(Projection::fit(std::vector<double>{1, 2, 3, 4}, {1, 2, 3, 5}, o),
                    Catch::Contains("not 'auto' with one feature"));
  CHECK_THROWS_WITH(fit_model_from_string("quadratic"), Catch::Contains("theil_sen"));
}

TEST_CASE("budget checks: measured and projected", "[analysis][rank]") {
  auto m = check_budget(0.08, 0.1);
  CHECK(m.fits);
  CHECK(m.margin == Approx(0.02));
  CHECK(m.margin_fraction == Approx(0.2));
  CHECK_FALSE(m.confidence);
  CHECK(m.provenance == "measured");

  FitOptions o;
  o.model = FitModel::linear;
  auto p = Projection::fit(std::vector<double>{1, 2, 3, 4, 5}, {2.1, 3.9, 6.2, 7.8, 10.1}, o);
  auto pred = p.predict(6.0);  // 11.99, 95% interval 11.12 .. 12.86
  auto at_high = check_budget(pred, pred.high);
  CHECK(at_high.fits);
  CHECK(*at_high.confidence == Approx(0.975).epsilon(1e-6));
  auto at_estimate = check_budget(pred, pred.estimate);
  CHECK(*at_estimate.confidence == Approx(0.5));
  auto over = check_budget(pred, 11.0);
  CHECK_FALSE(over.fits);
  CHECK(*over.confidence < 0.05);
  CHECK(over.provenance == "projected");
  CHECK_THROWS_AS(check_budget(1.0, 0.0), Error);
}

TEST_CASE("calibrations survive JSON and project results", "[analysis][projection]") {
  FitOptions o;
  o.model = FitModel::linear;
  o.features = {"wall_time_s"};
  o.target = "device_wall_time_s";
  Calibration c{"lg-g6", "mobilenet",
                Projection::fit(std::vector<double>{1, 2, 3, 4, 5}, {2.1, 3.9, 6.2, 7.8, 10.1},
                                o)};
  const std::string text = calibrations_to_json({c});
  auto back = calibrations_from_json(text);
  REQUIRE(back.size() == 1);
  CHECK(back[0].device == "lg-g6");
  CHECK(back[0].projection.coefficients() == c.projection.coefficients());
  CHECK(back[0].projection.loo_ape() == c.projection.loo_ape());
  CHECK(back[0].projection.reason() == "linear as asked");
  {
    // A model auto picked keeps why once read back (it read "theil_sen as asked").
    FitOptions a = o;
    a.model = FitModel::automatic;
    const Calibration picked{"lg-g6", "", Projection::fit(std::vector<double>{1, 2, 3, 4, 5},
                                                          {2.1, 3.9, 6.2, 7.8, 10.1}, a)};
    REQUIRE_THAT(picked.projection.reason(), Catch::StartsWith("picked "));
    const auto read = calibrations_from_json(calibrations_to_json({picked}));
    REQUIRE(read.size() == 1);
    CHECK(read[0].projection.model() == picked.projection.model());
    CHECK(read[0].projection.reason() == picked.projection.reason());
    CHECK(read[0].projection.coefficients() == picked.projection.coefficients());
  }
  {
    // Points that no longer fit (equal up to rounding: fitted by an older edgeprof) are named,
    // with what to do, not one anonymous error for the whole file.
    nlohmann::json flat = nlohmann::json::parse(text);
    flat["calibrations"][0]["x"] = {{0.3}, {0.3}, {0.30000000000000004}};
    flat["calibrations"][0]["y"] = {1.0, 2.0, 3.0};
    CHECK_THROWS_WITH(calibrations_from_json(flat.dump()),
                      Catch::Contains("the calibration for lg-g6 (device_wall_time_s) cannot be "
                                      "fitted again from its points") &&
                          Catch::Contains("remove it from the file"));
  }
  {
    // A file written when a ridge with another model than multi was accepted (and dropped)
    // loads as it did, now that fit() refuses one.
    nlohmann::json old = nlohmann::json::parse(text);
    old["calibrations"][0]["ridge"] = 5.0;
    const auto again = calibrations_from_json(old.dump());
    REQUIRE(again.size() == 1);
    CHECK(again[0].projection.coefficients() == c.projection.coefficients());
  }

  CHECK(find_calibration(back, "lg-g6", "device_wall_time_s", "mobilenet"));
  CHECK_FALSE(find_calibration(back, "lg-g6", "device_wall_time_s", "resnet"));
  CHECK_FALSE(find_calibration(back, "pixel-4", "device_wall_time_s"));
  // A calibration saved under a catalog alias applies to runs that record the device's name.
  Calibration alias{"raspberry-pi-4", "", c.projection};
  CHECK(find_calibration({alias}, "raspberry-pi-4b-4gb", "device_wall_time_s"));
  CHECK(find_calibration({alias}, "raspberry-pi-4", "device_wall_time_s"));
  CHECK_FALSE(find_calibration({alias}, "raspberry-pi-4b-8gb", "device_wall_time_s"));
  // The runs' core emulation first: one fitted under it, then one that did not record it, then
  // one fitted under another (which project() refuses); the family within each.
  Calibration pooled{"lg-g6", "mobilenet", c.projection, "pooled"};
  Calibration projected_any{"lg-g6", "", c.projection, "projected"};
  Calibration unrecorded{"lg-g6", "mobilenet", c.projection};
  const std::vector<Calibration> three{pooled, unrecorded, projected_any};
  const auto pick = [&](const std::vector<Calibration>& from, const std::string& emulation) {
    auto found = find_calibration(from, "lg-g6", "device_wall_time_s", "mobilenet", emulation);
    REQUIRE(found);
    return found->core_emulation + "/" + found->family;
  };
  CHECK(pick(three, "projected") == "projected/");
  CHECK(pick(three, "pooled") == "pooled/mobilenet");
  CHECK(pick(three, "per-core") == "/mobilenet");
  CHECK(pick(three, "") == "pooled/mobilenet");  // no emulation asked: the file's first
  CHECK(pick({pooled, projected_any}, "per-core") == "pooled/mobilenet");
  CHECK_THROWS_WITH(find_calibration(three, "lg-g6", "device_wall_time_s", "", "pool"),
                    Catch::Contains("pool"));

  Result r;
  r.wall_time_s = 6.0;
  auto projected = project(back[0], r);
  CHECK(projected.estimate == Approx(11.99));
  CHECK(projected.provenance == "projected");
  r.phases.clear();
  Calibration by_phase = c;
  FitOptions op = o;
  op.features = {"phase.inference.wall_time_s"};
  by_phase.projection = Projection::fit(std::vector<double>{1, 2, 3}, {2, 4, 6.5}, op);
  CHECK_THROWS_WITH(project(by_phase, r), Catch::Contains("no figure 'phase.inference"));

  std::string edited = text;
  edited.replace(edited.find("10.1"), 4, "12.1");
  CHECK_THROWS_WITH(calibrations_from_json(edited), Catch::Contains("edited"));
  CHECK_THROWS_WITH(calibrations_from_json("{}"), Catch::Contains("not an edgeprof calibration"));
}

TEST_CASE("a calibration records the core emulation of its runs, and project() holds to it",
          "[analysis][projection]") {
  FitOptions o;
  o.model = FitModel::linear;
  o.features = {"wall_time_s"};
  o.target = "device_wall_time_s";
  const Projection fit =
      Projection::fit(std::vector<double>{1, 2, 3, 4, 5}, {2.1, 3.9, 6.2, 7.8, 10.1}, o);
  const Calibration pooled{"lg-g6", "", fit, "pooled"};
  // Kept in the file; a file without it (older) has none.
  const auto back = calibrations_from_json(calibrations_to_json({pooled}));
  REQUIRE(back.size() == 1);
  CHECK(back[0].core_emulation == "pooled");
  std::string old = calibrations_to_json({Calibration{"lg-g6", "", fit}});
  const std::string key = "\"core_emulation\": \"\",";
  REQUIRE(old.find(key) != std::string::npos);
  old.erase(old.find(key), key.size());
  REQUIRE(old.find("core_emulation") == std::string::npos);
  CHECK(calibrations_from_json(old)[0].core_emulation.empty());
  std::string bad = calibrations_to_json({pooled});
  bad.replace(bad.find("\"pooled\""), 8, "\"spread\"");
  CHECK_THROWS_WITH(calibrations_from_json(bad), Catch::Contains("core_emulation 'spread'"));
  // Refused when written, before a file that could not be read back exists.
  CHECK_THROWS_WITH(calibrations_to_json({Calibration{"lg-g6", "", fit, "per_core"}}),
                    Catch::Contains("core_emulation 'per_core'"));

  Result r;
  r.wall_time_s = 6.0;
  // A pooled result: the calibration applies.
  CHECK(project(pooled, r).estimate == Approx(11.99));
  // A projected result: its wall_time_s is one core's; refused, with what to do.
  ThreadsProjection projection;
  projection.threads = 4;
  projection.speedup = 2;
  r.plan.threads_projection = projection;
  CHECK_THROWS_WITH(project(pooled, r),
                    Catch::Contains("core emulation pooled") &&
                        Catch::Contains("this result's was projected") &&
                        Catch::Contains("wall_time_s"));
  // Not recorded: any result.
  CHECK(project(Calibration{"lg-g6", "", fit}, r).estimate == Approx(11.99));
  // All-core and memory features mean the same under any core emulation; I/O is not memory.
  FitOptions io = o;
  io.features = {"io_read_bytes"};
  const Calibration on_io{"lg-g6", "", Projection::fit(std::vector<double>{1, 2, 3, 4, 5},
                                                        {2.1, 3.9, 6.2, 7.8, 10.1}, io),
                          "pooled"};
  CHECK_THROWS_WITH(project(on_io, r),
                    Catch::Contains("core emulation pooled") && Catch::Contains("io_read_bytes"));
  FitOptions all = o;
  all.features = {"all_cores_wall_time_s", "peak_memory_bytes"};
  all.model = FitModel::multi;
  const Calibration on_all{
      "lg-g6", "", Projection::fit(std::vector<std::vector<double>>{{1, 5}, {2, 3}, {3, 9},
                                                                    {4, 2}, {5, 7}},
                                   {2.1, 3.9, 6.2, 7.8, 10.1}, all),
      "pooled"};
  r.peak_memory_bytes = 4;
  CHECK(project(on_all, r).estimate > 0);
}

TEST_CASE("estimate_energy_j: idle power for the wall time, the rest in proportion to CPU use",
          "[analysis][energy]") {
  PowerDescription p;
  CHECK_FALSE(estimate_energy_j(p, 10, 5, 1).has_value());
  p.idle_watts = 2;
  p.loaded_watts = 6;
  CHECK(*estimate_energy_j(p, 10, 0, 1) == Approx(20));        // idle throughout
  CHECK(*estimate_energy_j(p, 10, 10, 1) == Approx(60));       // fully loaded
  CHECK(*estimate_energy_j(p, 10, 10, 2) == Approx(40));       // half of a 2-core capacity
  CHECK(*estimate_energy_j(p, 10, 30, 2) == Approx(60));       // capped at fully loaded
  CHECK_FALSE(estimate_energy_j(p, 10, 5, 0).has_value());
}

TEST_CASE("energy with all the device's cores from a run on one of them", "[analysis][energy]") {
  // A board of four cores, idle 2 W, loaded 6 W: one core's power is idle 2 W, loaded 3 W.
  PowerDescription board;
  board.idle_watts = 2;
  board.loaded_watts = 6;
  const PowerDescription core = for_threads([&] {
    Device d;
    d.name = "board";
    d.cores = 4;
    d.core_speed = 0.5;
    d.memory_bytes = 1 << 30;
    d.power = board;
    return d;
  }(), 1).power;
  REQUIRE(*core.loaded_watts == Approx(3));
  // The core ran 4 s, busy 2 s of them (1 s of CPU at a capacity of 0.5): 8 + 2 = 10 J.
  CHECK(*estimate_energy_j(core, 4, 1, 0.5) == Approx(10));
  // The board with a speed-up of 2: 2 s, each core busy 1 s of them: 2 x 2 + (6 - 2) x 1 = 8 J.
  CHECK(*estimate_projected_energy_j(core, 4, 2, 4, 1, 0.5) == Approx(8));
  // A perfect speed-up of 4: 1 s, all four busy half of it: 2 + 4 x 0.5 = 4 J.
  CHECK(*estimate_projected_energy_j(core, 4, 4, 4, 1, 0.5) == Approx(4));
  // One thread: the one core's own estimate.
  CHECK(*estimate_projected_energy_j(core, 1, 1, 4, 1, 0.5) == Approx(10));
  CHECK_FALSE(estimate_projected_energy_j(core, 4, 0, 4, 1, 0.5));
  CHECK_FALSE(estimate_projected_energy_j(core, 0, 2, 4, 1, 0.5));
  CHECK_FALSE(estimate_projected_energy_j(PowerDescription{}, 4, 2, 4, 1, 0.5));

  // Result::all_cores_energy_j: the projection where the plan has one, energy_j's otherwise.
  Result r;
  r.device.power = core;
  r.plan.cpu_period_us = 100000;
  r.plan.cpu_quota_us = 50000;
  r.wall_time_s = 4;
  r.cpu_user_s = 1;
  r.energy_j = estimate_energy_j(core, 4, 1, 0.5);
  CHECK(*r.all_cores_energy_j(4, 1) == Approx(10));
  CHECK(figures(r).at("energy_j") == Approx(10));
  CHECK(figures(r).at("all_cores_energy_j") == Approx(10));
  CHECK(std::string(figure_provenance(r, "all_cores_energy_j")) == "estimated");
  CHECK(std::string(figure_provenance(r, "energy_j")) == "estimated");
  ThreadsProjection projection;
  projection.threads = 4;
  projection.speedup = 2;
  r.plan.threads_projection = projection;
  CHECK(*r.all_cores_energy_j(4, 1) == Approx(8));
  Phase ph;
  ph.name = "infer";
  ph.start_s = 1;
  ph.end_s = 3;
  ph.cpu_s = 0.5;
  ph.energy_j = estimate_energy_j(core, 2, 0.5, 0.5);
  r.phases = {ph, ph};  // a phase marked twice: summed
  const auto f = figures(r);
  CHECK(f.at("all_cores_energy_j") == Approx(8));
  CHECK(f.at("phase.infer.energy_j") == Approx(2 * *ph.energy_j));
  CHECK(f.at("phase.infer.all_cores_energy_j") == Approx(2 * 4.0));  // each: 2 x 1 + 4 x 0.5
  CHECK(std::string(figure_provenance(r, "all_cores_energy_j")) == "projected");
  CHECK(std::string(figure_provenance(r, "phase.infer.energy_j")) == "estimated");
  // Read from the samples, as the report's provenance table says (they were "measured").
  for (const char* sampled : {"cpu_cores_p95", "cpu_cores_peak", "memory_avg_bytes",
                              "memory_sampled_peak_bytes", "tasks_peak", "phase.infer.cpu_s",
                              "phase.infer.memory_net_peak_bytes"}) {
    CAPTURE(sampled);
    CHECK(std::string(figure_provenance(r, sampled)) == "sampled");
  }
  for (const char* measured : {"wall_time_s", "cpu_user_s", "peak_memory_bytes",
                               "cpu_cores_avg", "phase.infer.wall_time_s"}) {
    CAPTURE(measured);
    CHECK(std::string(figure_provenance(r, measured)) == "measured");
  }
  // In the report, derived and labelled.
  const std::string json = to_json(r);
  CHECK(json.find("\"all_cores_energy_j\":8.0") != std::string::npos);
  CHECK(to_text(r).find("with all 4 cores over the projected time") != std::string::npos);
}

TEST_CASE("is_figure_name takes every name figures() gives, and nothing else",
          "[analysis][figures]") {
  // A result with every figure: summary figures, a measured peak, energy, a projection and a
  // phase named with dots.
  Result r;
  r.device.power.idle_watts = 2;
  r.device.power.loaded_watts = 6;
  r.plan.cpu_period_us = 100000;
  r.plan.cpu_quota_us = 50000;
  ThreadsProjection projection;
  projection.threads = 4;
  projection.speedup = 2;
  r.plan.threads_projection = projection;
  r.wall_time_s = 4;
  r.cpu_user_s = 1;
  r.peak_memory_bytes = 1 << 20;
  r.energy_j = 10;
  Summary& s = r.summary;
  s.cpu_cores_avg = s.cpu_cores_p95 = s.cpu_cores_peak = s.cpu_capacity_avg = 0.5;
  s.throttled_fraction = 0.1;
  s.memory_avg_bytes = s.memory_sampled_peak_bytes = 1 << 20;
  s.io_read_bytes = s.io_write_bytes = s.net_rx_bytes = s.net_tx_bytes = s.tasks_peak = 1;
  Phase ph;
  ph.name = "load.model";
  ph.start_s = 1;
  ph.end_s = 3;
  ph.cpu_s = 0.5;
  ph.memory_net_peak_bytes = 100;
  ph.energy_j = 1;
  r.phases = {ph};
  const auto f = figures(r);
  std::set<std::string> own_run, own_phase;
  for (const auto& [name, value] : f) {
    INFO(name);
    CHECK(is_figure_name(name));
    CHECK_NOTHROW(check_figure_name(name, "the metric"));
    (name.rfind("phase.", 0) == 0 ? own_phase : own_run).insert(name);
  }
  // All of them: 23 run figures and 7 of the phase.
  CHECK(own_run.size() == 23);
  CHECK(own_phase.size() == 7);

  for (const char* bad : {"nope", "", "phase.", "phase.x", "phase..wall_time_s", "wall_time",
                          "phase.x.nope", "Wall_time_s", "cpu_s", "x.wall_time_s"}) {
    INFO(bad);
    CHECK_FALSE(is_figure_name(bad));
  }
  CHECK(is_figure_name("phase.a.b.wall_time_s"));
  // A size is a figure of bytes: shown as one by compare and the reports.
  CHECK(is_size_figure("peak_memory_bytes"));
  CHECK(is_size_figure("phase.load.memory_net_peak_bytes"));
  CHECK_FALSE(is_size_figure("wall_time_s"));
  CHECK_FALSE(is_size_figure("bytes"));
  CHECK_THROWS_WITH(check_figure_name("nope", "compare's metric"),
                    Catch::Contains("compare's metric 'nope' is not a figure") &&
                        Catch::Contains("all_cores_wall_time_s") &&
                        Catch::Contains("phase.<phase name>"));
}

TEST_CASE("numbers that are not finite, and a Projection never fitted, are Errors",
          "[analysis]") {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  // NaN broke the median's sort (no strict weak order), inf every spread.
  CHECK_THROWS_WITH(statistics({1.0, nan, 2.0}), Catch::Contains("holding nan"));
  CHECK_THROWS_AS(statistics({1.0, inf}), Error);
  CHECK_THROWS_AS(mann_whitney_p({nan, 1}, {2, 3}), Error);
  CHECK_THROWS_AS(welch_p({1, inf}, {1, 2}), Error);
  // A figure that is NaN in a run has no statistics; the others do.
  Result a, b;
  a.wall_time_s = 1;
  b.wall_time_s = 2;
  a.energy_j = nan;
  b.energy_j = 3;
  const auto stats = describe_runs({a, b});
  CHECK(stats.count("wall_time_s") == 1);
  CHECK(stats.count("energy_j") == 0);
  // A default Projection read coefficients it does not have.
  CHECK_THROWS_WITH(Projection{}.predict(std::vector<double>{}),
                    Catch::Contains("predict: this Projection was not fitted"));
  CHECK_THROWS_AS(Projection{}.to_text(), Error);
  CHECK_THROWS_AS(project(Calibration{}, a), Error);
  // Saved, it made the whole file unreadable.
  CHECK_THROWS_AS(calibrations_to_json({Calibration{}}), Error);
}

TEST_CASE("run_repeated refuses more runs than an int counts, before any slice", "[analysis]") {
  // warmup + repeat overflowed.
  Command command;
  command.argv = {"true"};
  CHECK_THROWS_WITH(run_repeated(command, make_device("d", 1, 0.5, "64MiB"),
                                 std::numeric_limits<int>::max(), 1),
                    Catch::Contains("more runs than an int counts"));
}

TEST_CASE("compare refuses a bad alpha, repeat or warmup before any run", "[analysis]") {
  // Once checked by rank() after the first device's runs, which were then lost.
  Workload w;
  w.name = "w";
  w.command.argv = {"true"};
  int runs = 0;
  const CompareProgress count = [&](int, int, const std::string&, const std::string&,
                                    const Result&) { ++runs; };
  const Device device = make_device("d", 1, 0.5, "64MiB");
  CompareOptions o;
  o.rank.alpha = 0;
  CHECK_THROWS_WITH(compare({w}, {device}, o, count), Catch::Contains("rank.alpha"));
  o.rank.alpha = 0.05;
  o.repeat = 0;
  CHECK_THROWS_WITH(compare({w}, {device}, o, count), Catch::Contains("repeat >= 1"));
  o.repeat = std::numeric_limits<int>::max();
  o.warmup = 1;
  CHECK_THROWS_WITH(compare({w}, {device}, o, count), Catch::Contains("more than an int"));
  CHECK(runs == 0);
}

TEST_CASE("compare refuses a command it cannot run or a device larger than the host before any "
          "run",
          "[analysis]") {
  // Once found at the pair's first run, after every pair before it had run, and the
  // comparison was lost.
  int runs = 0;
  const CompareProgress count = [&](int, int, const std::string&, const std::string&,
                                    const Result&) { ++runs; };
  Workload ok{"ok", {}};
  ok.command.argv = {"true"};
  const Device device = make_device("d", 1, 0.5, "64MiB");
  const auto refused = [&](const std::string& program) {
    Workload w{"w", {}};
    w.command.argv = {program};
    try {
      compare({ok, w}, {device}, {}, count);
    } catch (const SpawnError& e) {
      CHECK(e.sys_errno() != 0);
      return std::string(e.what());
    }
    return std::string("not refused");
  };
  CHECK_THAT(refused("edgeprof-no-such-program"), Catch::Contains("not found in PATH"));
  CHECK_THAT(refused("/nonexistent/edgeprof-program"),
             Catch::Contains("'/nonexistent/edgeprof-program'") &&
                 Catch::Contains("No such file"));
  CHECK_THAT(refused("/tmp"), Catch::Contains("is a directory"));
  Workload relative{"relative", {}};
  relative.command.argv = {"./true"};
  relative.command.cwd = "/bin";  // found where the workload starts, not here
  const auto host = host_facts().memory_bytes;
  REQUIRE(host > 0);
  Device huge = make_device("huge", 1, 0.5, "64MiB");
  huge.memory_bytes = host + (std::uint64_t{1} << 30);
  CHECK_THROWS_WITH(compare({ok, relative}, {device, huge}, {}, count),
                    Catch::Contains("device 'huge' has") && Catch::Contains("this host has only"));
  Device invalid = make_device("invalid", 1, 0.5, "64MiB");
  invalid.core_speed = -1;
  CHECK_THROWS_AS(compare({ok}, {device, invalid}, {}, count), DeviceError);
  CHECK(runs == 0);
}
