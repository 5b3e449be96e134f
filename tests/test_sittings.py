"""What a run's sittings record (each sitting's span, its device and the fit's CPU time) and what
the report says of the runs from them: the training time summed over sittings, the runs counted
by device, and the fits' CPU time where every sitting recorded it."""

from __future__ import annotations

import json
import subprocess
import sys

import torch

from experiments.engine import publish as reproduction
from experiments.engine import sittings
from storage import RunLayout


def test_the_reports_training_time_sums_each_runs_sittings():
    """A run with recorded sittings counts their seconds (1800 of its 3600-s span), one without
    its start to its end (600), and the report says how many runs lack them."""
    recorded = {"trained": {"started": 0.0, "finished": 3600.0, "seconds": 1800.0}}
    older = {"trained": {"started": 600.0, "finished": 1200.0}, "kept": True}
    note = reproduction.kept_note([recorded, older])
    assert note.startswith(" The runs were trained within 60.0 min (")
    assert (
        "; 0.7 h of fits summed over the runs and their sittings; 1 of them were trained " in note
    )
    assert "resumed one counts from its last sitting's start); 1 of the 2 were kept" in note
    assert "before sittings" not in reproduction.kept_note([recorded])


def test_each_sitting_names_its_device_and_the_report_counts_runs_by_device(tmp_path):
    """A sitting records the machine it ran on; a run resumed elsewhere names both devices in
    order, a file from before devices were recorded names none, and the report counts the runs
    trained on each device, those resumed on another and those without a record."""
    layout = RunLayout(tmp_path / "run")
    layout.path.mkdir()
    earlier = [{"started": 0.0, "until": 10.0, "device": "NVIDIA H200 (CUDA)"}]
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    assert sittings.timed_sitting(done, layout.sittings, earlier) == 0
    first, second = sittings.read_sittings(layout.sittings)
    assert first == earlier[0] and second["device"] == sittings.this_machine()
    assert sittings.this_machine().startswith("CPU ")  # the tests' machine has no GPU
    capability = torch.backends.cpu.get_cpu_capability()  # the kernels' vector instructions
    assert f" {capability}, " in sittings.this_machine()
    assert sittings.fit_time(layout)["devices"] == ["NVIDIA H200 (CUDA)", sittings.this_machine()]
    layout.sittings.write_text('[{"started": 0, "until": 60}]')  # before devices were recorded
    assert sittings.read_sittings(layout.sittings) == [{"started": 0.0, "until": 60.0}]
    assert "devices" not in sittings.fit_time(layout)

    def trained(*devices: str) -> dict:
        return {"trained": {"started": 0.0, "finished": 60.0, "seconds": 60.0,
                            **({"devices": list(devices)} if devices else {})}}  # fmt: skip

    note = reproduction.kept_note([trained("gpu"), trained("cpu"), trained("gpu"),
                             trained("gpu", "cpu"), trained()])  # fmt: skip
    assert note.endswith(" Trained: 1 on cpu, 2 on gpu, 1 resumed on another device than they "
                         "started on, 1 before devices were recorded.")  # fmt: skip
    assert "Trained:" not in reproduction.kept_note([trained()])


def test_a_sitting_records_the_fits_cpu_time_which_leaves_out_its_waits(tmp_path):
    """A fit that computes for 0.5 s of CPU and then waits 2 s: its sitting spans over 2.5 s and
    records about 0.5 s of CPU time (the last read at most a second before it ended); the run's
    time sums each sitting's, and the report gives it for the runs that recorded it."""
    layout = RunLayout(tmp_path / "run")
    layout.path.mkdir()
    busy_then_idle = "import time\nwhile time.process_time() < 0.5: pass\ntime.sleep(2)"
    fit = subprocess.Popen([sys.executable, "-c", busy_then_idle])
    assert sittings.timed_sitting(fit, layout.sittings, []) == 0
    (sitting,) = sittings.read_sittings(layout.sittings)
    assert sitting["until"] - sitting["started"] > 2.5
    assert 0.45 <= sitting["cpu_seconds"] < 1.2, sitting  # /proc counts in 10-ms ticks
    earlier = [{"started": 0.0, "until": 10.0, "device": "cpu", "cpu_seconds": 7.0}]
    layout.sittings.write_text(json.dumps(earlier + [sitting]))
    assert sittings.fit_time(layout)["cpu_seconds"] == 7.0 + sitting["cpu_seconds"]
    layout.sittings.write_text(json.dumps([{"started": 0.0, "until": 10.0}, sitting]))
    assert "cpu_seconds" not in sittings.fit_time(layout)  # not every sitting recorded it
    runs = [{"trained": {"started": 0.0, "finished": 7200.0, "seconds": 7200.0,
                         "cpu_seconds": 5400.0}},
            {"trained": {"started": 0.0, "finished": 60.0, "seconds": 60.0}}]  # fmt: skip
    note = reproduction.kept_note(runs)
    assert "; the fits' CPU time, recorded for 1 of the runs: 1.5 h)" in note
    assert "CPU time" not in reproduction.kept_note(runs[1:])
