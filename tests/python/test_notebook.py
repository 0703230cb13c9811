"""The notebook tutorial (examples/notebooks/choose-a-model.ipynb) runs from top to bottom in a
real Jupyter kernel, and shows what it says it shows."""

import glob
import json
import os
from pathlib import Path

import pytest

from conftest import requires_cgroups

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebooks" / "choose-a-model.ipynb"


def test_the_committed_notebook_has_no_outputs():
    # Outputs are machine-specific numbers and megabytes of PNG: they are made by running it.
    nb = json.loads(NOTEBOOK.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"]


def _dead_owner_slices() -> list[str]:
    """edgeprof slices whose creating process (edgeprof-<pid>-...) no longer exists."""
    left = []
    for path in glob.glob("/sys/fs/cgroup/**/edgeprof-*", recursive=True):
        pid = os.path.basename(path).split("-")[1]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            left.append(path)
    return left


@requires_cgroups
def test_the_tutorial_notebook_runs(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("cloudpickle")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, if a cell fails

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    data = [o["data"] for o in outputs if "data" in o]
    # The single run displays as an HTML table with labelled figures.
    assert any("text/html" in d and "measured" in d["text/html"] for d in data)
    # Two plots: the run's CPU and memory over time, and the comparison's time against memory.
    assert sum("image/png" in d for d in data) == 2
    # The comparison ranked all three workloads on both devices.
    # The notebook asks for raspberry-pi-4, an alias: the table names the device it resolves to.
    for device in ("raspberry-pi-4b-4gb", "jetson-nano"):
        assert f"{device} (emulated), 5 runs each" in text
    assert text.count("  ok\n") >= 6
    # The profiled notebook function returned its value; the exception came back as KeyError.
    assert "final mean squared error:" in text
    assert "KeyError 'b' | from the worker: RemoteTraceback" in text
    assert "ok=True fits=True" in text
    assert _dead_owner_slices() == []
