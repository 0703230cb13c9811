"""Ranking and projection from Python: agreement with scipy/numpy, errors, calibrations, and
the Auptimizer Profiler's published fits reproduced from real data."""

import json
import math
import random

import numpy as np
import pytest

import edgeprof
import auptimizer

scipy_stats = pytest.importorskip("scipy.stats")


def test_ols_and_intervals_agree_with_scipy_on_random_data():
    rng = random.Random(7)
    for trial in range(20):
        n = rng.randint(3, 15)
        x = [rng.uniform(0.01, 5) for _ in range(n)]
        y = [2.5 * v + 0.3 + rng.gauss(0, 0.2) + 1.0 for v in x]
        p = edgeprof.analysis.Projection.fit(x, y, model="linear")
        ref = scipy_stats.linregress(x, y)
        b, a = p.coefficients
        assert a == pytest.approx(ref.slope, rel=1e-9)
        assert b == pytest.approx(ref.intercept, rel=1e-9, abs=1e-12)
        assert p.standard_errors[1] == pytest.approx(ref.stderr, rel=1e-9)
        assert p.r_squared == pytest.approx(ref.rvalue ** 2, rel=1e-9)
        # The prediction interval, from the textbook formula with scipy's t quantile.
        x0 = 6.0
        resid = np.array(y) - (ref.intercept + ref.slope * np.array(x))
        s = math.sqrt(resid @ resid / (n - 2))
        sxx = sum((v - np.mean(x)) ** 2 for v in x)
        half = scipy_stats.t.ppf(0.95, n - 2) * s * math.sqrt(1 + 1 / n + (x0 - np.mean(x)) ** 2 / sxx)
        pred = p.predict(x0, confidence=0.9)
        assert pred.high - pred.estimate == pytest.approx(half, rel=1e-7)
        assert pred.provenance == "projected"


def test_t_quantiles_and_rank_tests_agree_with_scipy():
    from edgeprof import _core
    for p in (0.6, 0.9, 0.975, 0.999):
        for dof in (1, 2, 3, 7.5, 30, 200):
            assert _core.student_t_quantile(p, dof) == pytest.approx(
                scipy_stats.t.ppf(p, dof), rel=1e-9)
    rng = random.Random(3)
    for _ in range(20):
        a = [rng.gauss(0, 1) for _ in range(rng.randint(2, 12))]
        b = [rng.gauss(0.5, 1) for _ in range(rng.randint(2, 12))]
        assert _core.mann_whitney_p(a, b) == pytest.approx(
            scipy_stats.mannwhitneyu(a, b).pvalue, rel=1e-9)
        assert _core.welch_p(a, b) == pytest.approx(
            scipy_stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-7)
        x = [rng.randint(0, 5) for _ in range(15)]  # ties
        y = [v + rng.randint(-2, 2) for v in x]
        if len(set(x)) > 1 and len(set(y)) > 1:
            assert edgeprof.analysis.kendall(x, y).coefficient == pytest.approx(
                scipy_stats.kendalltau(x, y).statistic, rel=1e-9)
            assert edgeprof.analysis.kendall(x, y).p_value == pytest.approx(
                scipy_stats.kendalltau(x, y).pvalue, rel=1e-6)
            assert edgeprof.analysis.spearman(x, y).coefficient == pytest.approx(
                scipy_stats.spearmanr(x, y).statistic, rel=1e-9)
            assert edgeprof.analysis.spearman(x, y).p_value == pytest.approx(
                scipy_stats.spearmanr(x, y).pvalue, rel=1e-6)


def test_rank_and_score_refuse_a_failed_runs_figures():
    """A run killed early (out of memory at a tenth of the time) was ranked as the fastest, and
    scored as a finite objective: its figures measure the failure, not the workload."""
    from conftest import captured_report_text
    doc = json.loads(captured_report_text())
    ok = edgeprof.Result.from_json(json.dumps(doc))
    doc.update(exit_code=None, signal=9, oom_killed=True, wall_time_s=doc["wall_time_s"] / 10)
    killed = edgeprof.Result.from_json(json.dumps(doc))
    assert not killed.ok
    with pytest.raises(edgeprof.Error, match="'crashed': run 1 of 1 was killed out of memory"):
        edgeprof.analysis.rank({"ok": ok, "crashed": killed}, metric="wall_time_s")
    assert [r.name for r in edgeprof.analysis.rank({"ok": ok}, metric="wall_time_s")] == ["ok"]
    s = edgeprof.score(killed)
    assert not s.ok and math.isnan(s.latency) and math.isnan(s.memory)


def test_theil_sen_matches_scipy():
    rng = random.Random(11)
    x = [rng.uniform(0, 10) for _ in range(9)]
    y = [3 * v + 1 + rng.gauss(0, 0.5) for v in x]
    y[4] += 40  # an outlier
    p = edgeprof.analysis.Projection.fit(x, y, model="theil_sen")
    ref = scipy_stats.theilslopes(y, x)
    assert p.coefficients[1] == pytest.approx(ref.slope, rel=1e-12)
    assert p.coefficients[0] == pytest.approx(ref.intercept, rel=1e-12)


def test_rank_over_numbers_and_results():
    ranked = edgeprof.analysis.rank({"b": [2.0, 2.1, 1.9, 2.05, 1.95],
                                     "a": [1.0, 1.1, 0.9, 1.05, 0.95], "c": 3.0})
    assert [r.name for r in ranked] == ["a", "b", "c"]
    assert [r.rank for r in ranked] == [1, 2, 2]  # c (one run) cannot be separated from b
    assert ranked[1].tied and ranked[2].tied and not ranked[0].tied
    accuracy = edgeprof.analysis.rank([("m1", 0.7), ("m2", 0.9)], higher_is_better=True)
    assert accuracy[0].name == "m2"
    with pytest.raises(ValueError, match="mann-whitney"):
        edgeprof.analysis.rank({"a": 1.0}, test="anova")
    with pytest.raises(TypeError, match="'a'"):
        edgeprof.analysis.rank({"a": object()})
    # A str is iterable: "12" was ranked as the samples 1 and 2; a mapping raised ValueError.
    import numpy as np
    for bad in ("12", b"12", {"x": 1}, [1.0, "a"], np.ones((2, 2))):  # a table: its labels
        with pytest.raises(TypeError, match="'a': expected a Result"):
            edgeprof.analysis.rank({"a": bad, "b": 1.0})
    # numpy's scalars and 0-d arrays are numbers (a DataFrame column's max() is one).
    ranked = edgeprof.analysis.rank({"a": np.int64(3), "b": np.float32(1.5), "c": np.array(2.0)})
    assert [(r.name, r.value) for r in ranked] == [("b", 1.5), ("c", 2.0), ("a", 3.0)]


def test_pareto_and_budget():
    items = {"tiny": {"time": 0.01, "memory": 5e6, "accuracy": 0.60},
             "small": {"time": 0.02, "memory": 8e6, "accuracy": 0.70},
             "bloated": {"time": 0.03, "memory": 9e6, "accuracy": 0.69},
             "big": {"time": 0.10, "memory": 40e6, "accuracy": 0.76}}
    assert edgeprof.analysis.pareto(items, {"time": "min", "memory": "min", "accuracy": "max"}) == [
        "tiny", "small", "big"]
    with pytest.raises(ValueError, match="'min' or 'max'"):
        edgeprof.analysis.pareto(items, {"time": "lowest"})
    fit = edgeprof.analysis.Projection.fit([1, 2, 3, 4, 5], [2.1, 3.9, 6.2, 7.8, 10.1],
                                           model="linear")
    check = edgeprof.analysis.check_budget(fit.predict(6.0), 12.5)
    assert check.fits and check.provenance == "projected" and 0.9 < check.confidence < 1
    assert edgeprof.analysis.check_budget(0.2, 0.1).fits is False


def test_degenerate_input_is_refused_with_a_reason():
    with pytest.raises(edgeprof.Error, match="at least 3 calibration points"):
        edgeprof.analysis.Projection.fit([1, 2], [1, 2])
    with pytest.raises(edgeprof.Error, match="all measured inputs are equal"):
        edgeprof.analysis.Projection.fit([2, 2, 2], [1, 2, 3])
    with pytest.raises(edgeprof.Error, match="nan"):
        edgeprof.analysis.Projection.fit([1, float("nan"), 3], [1, 2, 3])
    with pytest.raises(edgeprof.Error, match="must be positive"):
        edgeprof.analysis.Projection.fit([1, 2, 3], [1, -2, 3])
    with pytest.raises(edgeprof.Error, match="unknown projection model"):
        edgeprof.analysis.Projection.fit([1, 2, 3], [1, 2, 3], model="cubic")


def test_calibrations_round_trip_through_a_file(tmp_path):
    fit = edgeprof.analysis.Projection.fit([[1.0], [2.0], [3.0], [4.0]], [2.2, 3.9, 6.1, 8.0],
                                           model="auto", features=["wall_time_s"],
                                           target="device_wall_time_s")
    cal = edgeprof.analysis.Calibration("jetson-nano", fit, family="cnn",
                                        core_emulation="projected")
    path = tmp_path / "cal.json"
    edgeprof.analysis.save_calibrations(path, [cal])
    data = json.loads(path.read_text())
    assert data["schema"] == "edgeprof.calibrations" and data["calibrations"][0]["model"] == fit.model
    back = edgeprof.analysis.load_calibrations(path)
    assert back[0].projection.coefficients == fit.coefficients
    assert back[0].core_emulation == "projected"
    assert edgeprof.analysis.find_calibration(back, "jetson-nano", "device_wall_time_s",
                                              "cnn") is not None
    with pytest.raises(edgeprof.Error, match="cannot read calibrations"):
        edgeprof.analysis.load_calibrations(tmp_path / "missing.json")


# The published data.

DATA = auptimizer.dataset_dir()
needs_data = pytest.mark.skipif(
    DATA is None, reason="the auptimizer-figures dataset is not in ../shared/datasets (set "
    "EDGEPROF_DATASETS to the folder holding it)")


@needs_data
def test_edgeprof_reproduces_every_published_fit():
    panels = auptimizer.panels(DATA)
    assert len(panels) == 14
    for p in panels:
        assert len(p.x) == p.n_models, p.label
        fit = edgeprof.analysis.Projection.fit(p.x, p.y, model="linear")
        b, a = fit.coefficients
        y_range = max(p.y) - min(p.y)
        # The digitization is good to about 1% (README); one printed sign is a typo.
        printed_b = -p.b if "printed sign is probably a typo" in p.note else p.b
        assert a == pytest.approx(p.a, rel=0.01), p.label
        assert abs(b - printed_b) <= 0.01 * y_range, p.label
        if "digitized points give R2" in p.note:
            assert fit.r_squared == pytest.approx(0.972, abs=0.002), p.label
        else:
            assert fit.r_squared == pytest.approx(p.r2, abs=0.005), p.label
        # What the papers did not print: the held-out error, always worse than the fit looks.
        assert fit.loo_ape_max >= fit.loo_ape_median > 0
        assert 0 <= fit.loo_within_10pct <= 1


@needs_data
def test_rank_agreement_on_published_panels():
    # On the phones, the profiler's ordering of the 6 models is the device's (rho = 1).
    g6 = [p for p in auptimizer.panels(DATA) if p.device == "LG G6" and p.cpus == "1"
          and p.metric.startswith("avg_inference")][0]
    rho = edgeprof.analysis.spearman(g6.x, g6.y)
    assert rho.coefficient == pytest.approx(1.0) and rho.exact and rho.p_value < 0.01
    assert "| LG G6" in auptimizer.markdown(DATA)


def test_compare_names_a_wrong_type_and_takes_commands_as_bytes_and_paths():
    # pybind11's "incompatible function arguments" listed every positional value of the core's
    # call; a bytes command became its numbers' argv, a path raised "not iterable".
    with pytest.raises(TypeError, match=r"^compare\(\): repeat='5' \(str\) is not an int"):
        edgeprof.compare({"a": "true"}, "jetson-nano", repeat="5")
    conftest = pytest.importorskip("conftest")
    if not conftest.CAN_CREATE:
        pytest.skip(f"cannot create cgroups: {conftest.WHY_NOT}")
    import pathlib
    board = edgeprof.Device(name="board", cores=1, core_speed=1.0, memory="128MiB")
    c = edgeprof.compare({"bytes": b"sh -c true", "path": pathlib.Path("/bin/true")}, board,
                         repeat=1, progress=False)
    assert {r.workload: r.result.ok for r in c.rows} == {"bytes": True, "path": True}
    assert {r.workload: r.result.runs[0].command for r in c.rows} == {
        "bytes": ["sh", "-c", "true"], "path": ["/bin/true"]}


def test_compare_and_score_from_python(tmp_path):
    conftest = pytest.importorskip("conftest")
    if not conftest.CAN_CREATE:
        pytest.skip(f"cannot create cgroups: {conftest.WHY_NOT}")
    board = edgeprof.Device(name="board", cores=1, core_speed=1.0, memory="128MiB")
    c = edgeprof.compare({"fast": "sleep 0.01", "slow": ["sleep", "0.05"]}, board, repeat=3,
                         progress=False)
    # Best median first, in whichever order the timed runs came out (that is the machine's);
    # three runs each cannot be told apart at 0.05 (the smallest Mann-Whitney p is 0.1), so
    # they tie whatever the timings. (Separated ranks: test_rank_over_numbers_and_results.)
    assert sorted(r.workload for r in c.rows) == ["fast", "slow"]
    assert c.rows[0].value <= c.rows[1].value
    assert [(r.rank, r.tied) for r in c.rows] == [(1, True), (1, True)]
    assert all(len(r.result.runs) == 3 and r.result.ok for r in c.rows)
    assert "ranked by median all_cores_wall_time_s" in str(c)
    # A readable repr and a notebook table (issue 36, item 12), not <...Comparison object at>.
    assert repr(c).startswith("<edgeprof.analysis.Comparison of 2 workload(s) on 1 device(s)")
    assert "best: board: " in repr(c)
    page = c._repr_html_()
    assert page.startswith("<table") and "Pareto" in page and page.count("<tr>") == 3
    assert "<script" not in page
    pd = pytest.importorskip("pandas")
    frame = c.to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame["rank"]) == [1, 1]
    run = next(r for r in c.rows if r.workload == "fast").result.runs[0]
    # Over budget by at least 9 times: the sleep alone takes 0.01 s (load only adds time).
    s = edgeprof.score(run, latency=0.001)
    assert s.ok and not s.fits and s.penalty > 1 and s.latency_provenance == "measured"
    assert s.latency == pytest.approx(run.wall_time_s)
    assert s.penalty == pytest.approx(run.wall_time_s / 0.001 - 1)
    # A latency limit twice the run's own, and memory above the device's 128 MiB (the kernel's
    # limit): it fits, whatever the run took.
    assert edgeprof.score(run, latency=2 * run.wall_time_s, memory=1e9).fits
    # Repeated runs are scored by their medians (a RepeatedResult was a TypeError).
    repeated = next(r for r in c.rows if r.workload == "fast").result
    s = edgeprof.score(repeated, latency=1e6)
    assert s.ok and s.fits
    assert s.latency == pytest.approx(repeated.stat("all_cores_wall_time_s").median)
    # A memory figure that is not bytes is shown as a number (cpu_user_s as "0 B", a negative
    # net peak raised), in the table and the notebook's alike.
    c = edgeprof.compare({"a": "true"}, board, repeat=1, progress=False,
                         memory_metric="cpu_user_s")
    cell = f"<td style='text-align:left'>{c.rows[0].memory:.4g}</td>"
    assert cell in c._repr_html_() and " B<" not in c._repr_html_()
    # Nothing succeeded: no workload is the best (a failed one was ranked 1), none has a rank.
    c = edgeprof.compare({"a": "false", "b": "false"}, board, repeat=1, progress=False)
    assert [r.rank for r in c.rows] == [0, 0]
    assert repr(c).endswith("best: none ranked>")
    assert c._repr_html_().count("<td style='text-align:left'>-</td>") == 2
    frame = c.to_pandas()
    assert frame["rank"].isna().all() and str(frame["rank"].dtype) == "Int64"
    # An unclosed quote names the workload, before any run.
    with pytest.raises(edgeprof.Error, match="workload 'q': its command"):
        edgeprof.compare({"q": 'python3 -c "print(1)'}, board, progress=False)
