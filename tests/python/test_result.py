"""edgeprof.Result as Python sees it, without running a workload."""

import inspect
import json
import re

import numpy as np
import pytest

import edgeprof
from conftest import captured_report_text, cli


def _descriptions(function) -> list:
    """A bound function's docstring past its signature, one per overload (a Python function's,
    such as to_pandas, is all docstring)."""
    doc = function.__doc__ or ""
    if inspect.isfunction(function) or inspect.ismethod(function):
        return [doc.strip()]
    if "Overloaded function." in doc:
        parts = re.split(r"\n\d+\. ", doc)[1:]
    else:
        parts = [doc]
    return [part.split("\n", 1)[1].strip() if "\n" in part else "" for part in parts]


def test_every_public_member_of_the_core_has_a_docstring():
    # pybind11 makes each def_readonly / def_property_readonly a property of the class, whose
    # __doc__ is the docstring given in python/src/bind_*.cpp ("" when none was); a function's
    # __doc__ starts with its signature, then the docstring (each overload's, numbered).
    undocumented, repeated, members = [], [], set()
    for name, value in vars(edgeprof._core).items():
        if name.startswith("_"):
            continue
        if inspect.isclass(value):
            if not (value.__doc__ or "").strip():
                undocumented.append(name)
            for member, attr in vars(value).items():
                if member.startswith("_"):
                    continue
                members.add(f"{name}.{member}")
                if isinstance(attr, property):
                    docs = [(attr.__doc__ or "").strip()]
                elif callable(getattr(value, member)):
                    docs = _descriptions(getattr(value, member))
                else:
                    continue
                if not all(docs):
                    undocumented.append(f"{name}.{member}")
                if len(set(docs)) < len(docs):
                    repeated.append(f"{name}.{member}")
        elif callable(value):
            members.add(name)
            docs = _descriptions(value)
            if not all(docs):
                undocumented.append(name)
            if len(set(docs)) < len(docs):  # help() printed the same text once per overload
                repeated.append(name)
    assert {"Result.wall_time_s", "Summary.cpu_cores_avg", "score", "check_budget"} <= members
    assert undocumented == []
    assert repeated == []


def _edited(path: list, value) -> str:
    doc = json.loads(captured_report_text())
    at = doc
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return json.dumps(doc)


def test_to_pandas_columns_are_signed_so_freed_memory_is_negative():
    """The columns were the core's uint64: memory freed between two samples read as +16 EiB in
    diff() and in any difference of the column."""
    pytest.importorskip("pandas")
    frame = edgeprof.Result.from_json(captured_report_text()).to_pandas()
    memory = frame["memory_current_bytes"]
    assert memory.dtype == np.int64
    assert memory.diff().min() < -30 << 20  # the 40 MiB freed
    assert memory.diff().max() < 1 << 40


def test_a_projected_run_shows_as_one_core_of_the_board_with_each_figure_labelled():
    """Projected, the notebook table read "custom-1-thread: 1 cores", the repeated table gave
    no provenance, and the peak memory's source was left out."""
    doc = json.loads(captured_report_text())
    doc["plan"]["threads_projection"] = {
        "threads": 4, "speedup": 2.5, "table_threads": 4, "table_speedup": 2.5, "graphs": 14,
        "contention": 0.1, "loo_median_error": 0.05, "loo_worst_error": 0.1, "loo_log_sd": 0.05,
        "workload_factor": 1.0}
    r = edgeprof.Result.from_json(json.dumps(doc))
    page = r._repr_html_()
    assert "1 core of its 4 ran (projected to all)" in page and "1 cores" not in page, page
    assert f"measured ({r.peak_memory_source})" in page
    run = json.loads(r.to_json())
    rr = edgeprof.RepeatedResult.from_json(json.dumps({
        "schema": "edgeprof.repeated", "schema_version": 1, "edgeprof_version": "0.1.0",
        "repeat": 2, "warmup": 0, "all_ok": True, "stats": {}, "runs": [run, run],
        "warmups": []}))
    table = rr._repr_html_()
    assert "one core of the device&#x27;s 4 ran" in table, table
    assert "<td style='color:#777'>projected</td>" in table  # all_cores_wall_time_s
    assert "<td style='color:#777'>sampled</td>" in table  # cpu_cores_p95, memory_avg_bytes


def test_an_empty_scheduled_column_reads_as_every_sample_scheduled():
    """A report whose series.scheduled is [] (every sample scheduled, as to_csv and summarize
    read it) loaded, but to_pandas() raised on the columns' lengths and plot() lost its CPU
    line."""
    r = edgeprof.Result.from_json(_edited(["series", "scheduled"], []))
    assert list(r.series.scheduled) == [1] * len(r.series)
    pytest.importorskip("pandas")
    assert r.to_pandas()["scheduled"].all()


def test_in_tells_whether_a_series_has_a_metric():
    """`'tasks' in r.series` raised pybind11's "incompatible function arguments" (no
    __contains__: Python tried the rows 0, 1, ... through __getitem__)."""
    series = edgeprof.Result.from_json(captured_report_text()).series
    assert "memory_current_bytes" in series and "memory_current_bytes" in series.available
    missing = [m for m in edgeprof.results.METRICS if m not in series.available]
    assert missing and all(m not in series for m in missing)
    assert "no_such_metric" not in series and 3 not in series and None not in series


def test_results_pickle_as_themselves():
    """A result comes back from a process pool's worker (joblib, concurrent.futures): it was
    "cannot pickle 'edgeprof._core.Result' object"."""
    import pickle
    r = edgeprof.Result.from_json(captured_report_text())
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.to_json() == r.to_json()
    assert [p.name for p in back.phases] == [p.name for p in r.phases]
    run = json.loads(captured_report_text())
    doc = {"schema": "edgeprof.repeated", "schema_version": run["schema_version"],
           "runs": [run, run], "warmups": [run], "stats": {}}
    repeated = edgeprof.RepeatedResult.from_json(json.dumps(doc))
    again = pickle.loads(pickle.dumps(repeated))
    assert again == repeated and len(again.runs) == 2 and len(again.warmups) == 1
    with pytest.raises(edgeprof.Error, match="pickled by another edgeprof release"):
        edgeprof.Result.__new__(edgeprof.Result).__setstate__((1, 2))


def test_a_repeated_report_without_runs_is_refused_when_read():
    """run_repeated makes at least one run; a report without (hand-made or cut) was read, and
    `edgeprof project` raised IndexError on it."""
    runs = json.loads(captured_report_text())
    doc = {"schema": "edgeprof.repeated", "schema_version": runs["schema_version"],
           "runs": [], "warmups": [], "stats": {}}
    with pytest.raises(edgeprof.Error, match=r"field 'runs'.*at least one run"):
        edgeprof.RepeatedResult.from_json(json.dumps(doc))


def test_the_summary_shows_control_characters_of_names_and_warnings_escaped():
    """A report's phase names and warnings reached the terminal as written: an escape
    sequence in one cleared the screen of `edgeprof show`."""
    doc = json.loads(captured_report_text())
    doc["phases"][0]["name"] = "load\x1b[2J"
    doc["warnings"] = ["w\x1b[31m\x9b"]
    text = str(edgeprof.Result.from_json(json.dumps(doc)))
    assert "\x1b" not in text and "\x9b" not in text
    assert "load\\u001b[2J" in text and "w\\u001b[31m\\u009b" in text
    assert text.count("\n") > 10  # the lines themselves are kept


def test_the_net_peak_of_the_lowest_int64_prints_without_overflow():
    doc = json.loads(captured_report_text())
    doc["phases"][0]["memory_net_peak_bytes"] = -2**63
    assert "(net -8388608 TiB)" in str(edgeprof.Result.from_json(json.dumps(doc)))


def test_format_size_refuses_what_it_cannot_show():
    assert edgeprof.devices.format_size(2**64 - 1).endswith("TiB")  # arrives as 2^64
    with pytest.raises(edgeprof.Error, match="0 to 2\\^64"):
        edgeprof.devices.format_size(1e30)  # was shown as 8388608 TiB


def test_show_with_the_csv_on_stdout_writes_only_the_csv(tmp_path):
    report = tmp_path / "r.json"
    report.write_text(captured_report_text())
    out = cli("show", str(report), "--csv", "-")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("# edgeprof.series") and lines[1].startswith("t_s,scheduled")
    assert len(lines) == 2 + len(edgeprof.Result.from_json(captured_report_text()).series)
    assert "wall time" in out.stderr


def test_show_names_what_it_cannot_read(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' + "[" * 100000)
    comparison = tmp_path / "c.json"
    comparison.write_text(json.dumps({"schema": "edgeprof.comparison", "schema_version": 1,
                                      "rows": []}))
    bom = tmp_path / "bom.json"
    runs = json.loads(captured_report_text())
    bom.write_text("\ufeff" + json.dumps({
        "schema": "edgeprof.repeated", "schema_version": runs["schema_version"],
        "runs": [runs], "warmups": [], "stats": {}}), encoding="utf-8")
    out = cli("show", str(deep))
    assert out.returncode == 2 and "nested too deeply" in out.stderr, out.stderr
    out = cli("show", str(comparison))
    assert out.returncode == 2 and "is a comparison" in out.stderr, out.stderr
    # A byte order mark: read as the repeated report it is (was taken for a single run's).
    out = cli("show", str(bom))
    assert out.returncode == 0 and "1 runs (+0 warm-up)" in out.stdout, out.stderr


def test_a_result_plan_and_repeated_result_show_what_they_are():
    """repr() was <edgeprof._core.Result object at 0x...> (a list of results, the IPython
    terminal), and a plan had no text at all."""
    r = edgeprof.Result.from_json(captured_report_text())
    assert repr(r) == ("<edgeprof.Result 'python3 fall.py' on custom: ok, 0.4296 s wall, peak "
                       "50.50 MiB>")
    runs = json.loads(captured_report_text())
    rr = edgeprof.RepeatedResult.from_json(json.dumps({
        "schema": "edgeprof.repeated", "schema_version": runs["schema_version"],
        "runs": [runs], "warmups": [], "stats": {}}))
    assert repr(rr).startswith("<edgeprof.RepeatedResult 1 runs (+0 warm-up) of 'python3 "
                               "fall.py' on custom: all succeeded, median 0.4296 s wall")
    plan = edgeprof.plan_emulation(edgeprof.Device(name="b", cores=2, core_speed=0.5,
                                                   memory="1GiB"), keep_warm=False)
    assert repr(plan).startswith("<edgeprof.EmulationPlan pooled, 1 cores")
    assert str(plan).startswith("core emulation pooled: 1 cores of capacity, quota ")
    assert all(f"note: {n}" in str(plan) for n in plan.notes)


def test_the_notebook_table_shows_a_phase_that_freed_memory_with_its_sign():
    doc = json.loads(captured_report_text())
    doc["phases"][1]["memory_net_peak_bytes"] = -41943040
    page = edgeprof.Result.from_json(json.dumps(doc))._repr_html_()
    assert "memory -40 MiB" in page  # was "+0 B" where the text summary says -40 MiB


def test_plot_shows_names_as_written_and_refuses_one_axes(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    doc = json.loads(captured_report_text())
    doc["command"] = ["python3", "-c", "a = x / 3; print('$HOME')"]
    doc["phases"][0]["name"] = "$\\frac$"  # mathematics matplotlib cannot draw: it raised
    r = edgeprof.Result.from_json(json.dumps(doc))
    fig = r.plot()
    fig.savefig(tmp_path / "p.png")
    # The code given with -c is not a path: it was cut to " 3; print(...)"; $ is kept as text.
    assert fig._suptitle.get_text() == r"python3 -c a = x / 3; print('\$HOME') on custom"
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert r"\$\frac\$" in texts
    plt.close(fig)
    _, one = plt.subplots()
    with pytest.raises(edgeprof.Error, match="two axes"):
        r.plot(ax=one)
    plt.close("all")


def _with_phases(count: int) -> edgeprof.Result:
    """The captured run with `count` consecutive phases p0, p1, ... over its own time span
    (marks made in a loop)."""
    doc = json.loads(captured_report_text())
    template = doc["phases"][0]
    start, end = template["start_s"], doc["phases"][-1]["end_s"]
    step = (end - start) / count
    doc["phases"] = [dict(template, name=f"p{i}", start_s=start + i * step,
                          end_s=start + (i + 1) * step, wall_time_s=step,
                          all_cores_wall_time_s=step) for i in range(count)]
    return edgeprof.Result.from_json(json.dumps(doc))


@pytest.mark.parametrize("count, labelled, said", [
    (20, 20, ""),  # all fit: nothing to say
    (25, 20, " (25 phases, the first 20 labelled)"),
])
def test_plot_labels_at_most_20_phases_and_says_how_many_there_are(count, labelled, said):
    """Marks made in a loop labelled every phase above the plot, burying it; the others are
    shaded only, and the title gives the count."""
    plt = pytest.importorskip("matplotlib.pyplot")
    r = _with_phases(count)
    fig = r.plot()
    try:
        names = {p.name for p in r.phases}
        labels = [t.get_text() for t in fig.axes[0].texts if t.get_text() in names]
        assert labels == [f"p{i}" for i in range(labelled)]  # the first ones, in order
        assert fig._suptitle.get_text() == f"python3 fall.py on custom{said}"
        assert len(fig.axes[0].patches) == count  # every phase still shaded
    finally:
        plt.close(fig)
