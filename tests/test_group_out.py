"""Classes of hardware: a maker's segment, leave-one-group-out cross-validation, the error
quoted for a class the data has no runs of, and the engine a run went through."""

from __future__ import annotations

import numpy as np
import pytest

from tokenwalk.accuracy import accuracy_data, expected_error
from tokenwalk.calibrate import GROUP_LEVELS, benchmark_observations, cross_validate_groups
from tokenwalk.errors import InputError
from tokenwalk.fit import Design, Observation
from tokenwalk.machine import (
    compose_efficiency,
    fit_keys,
    machine_segment,
    resolve_machine,
    timing_defaults,
)


@pytest.mark.parametrize(
    ("kind", "vendor", "name", "unified", "segment"),
    [
        ("gpu", "nvidia", "GeForce RTX 4090", False, "nvidia GeForce"),
        ("gpu", "nvidia", "RTX A5000", False, "nvidia pro/data-center"),
        ("gpu", "nvidia", "RTX 4000 Ada Generation", False, "nvidia pro/data-center"),
        ("datacenter", "nvidia", "H200 SXM 141GB", False, "nvidia pro/data-center"),
        ("gpu", "nvidia", "DGX Spark (GB10)", True, "nvidia APU/iGPU"),
        ("igpu", "amd", "Radeon 760M", False, "amd APU/iGPU"),
        ("gpu", "amd", "Radeon RX 7900 XTX", False, "amd consumer"),
        ("gpu", "amd", "Radeon PRO W7900", False, "amd pro/data-center"),
        ("apple", "apple", "Apple M4 Max", False, "Apple"),
        ("cpu", "amd", "Ryzen AI 9 HX PRO 370, CPU cores only", False, "amd CPU"),
    ],
)
def test_a_machines_segment(kind, vendor, name, unified, segment):
    assert machine_segment(kind, vendor, name, unified) == segment


def _obs(machine: str, segment: str, bw: float, measured: float) -> Observation:
    keys = fit_keys("nvidia", "gpu", "cuda", machine, peak="matrix", segment=segment)
    # one pass reading 1 GB, no compute term, 10 layers of fixed cost
    return Observation(
        label=f"{machine} decode",
        machine=machine,
        phase="decode",
        bandwidth_gbs=bw,
        tflops=0.0,
        tokens=1.0,
        passes=((1e9, 0.0, 0.0, 10.0, 0.0, 0.0, 0.0),),
        measured_tok_s=measured,
        keys=keys,
        meta={"kind": "gpu", "segment": segment, "backend": "cuda", "source": machine},
    )


def test_leaving_out_a_group_predicts_it_without_its_own_rows():
    obs = [
        _obs(f"{seg}-{i}", seg, bw, bw * share)
        for seg, share in (("a", 0.8), ("b", 0.5), ("c", 0.6))
        for i, bw in enumerate((100.0, 200.0, 400.0))
    ]
    design = Design(obs)
    pred = cross_validate_groups(design, "segment")
    assert np.all(np.isfinite(pred)) and np.all(pred > 0)
    # the held-out group's own speeds do not move its predictions
    moved = Design(obs)
    moved.measured = design.measured * np.where([o.meta["segment"] == "b" for o in obs], 3, 1)
    again = cross_validate_groups(moved, "segment")
    b = np.array([o.meta["segment"] == "b" for o in obs])
    assert again[b] == pytest.approx(pred[b], rel=1e-3)
    assert not np.allclose(again[~b], pred[~b], rtol=1e-3)  # the others saw group b
    with pytest.raises(InputError, match="unknown group level"):
        cross_validate_groups(design, "colour")


def test_every_row_has_a_group_at_each_level():
    obs, _ = benchmark_observations()
    for o in obs:
        assert all(o.meta[level] for level in GROUP_LEVELS), o.label


def test_a_machine_of_a_class_without_runs_quotes_the_group_out_error():
    data = accuracy_data()
    inline = resolve_machine(None, bandwidth=100.0, tflops=10.0)  # vendor not known: 'other'
    for phase in ("decode", "prefill"):
        e = expected_error(inline, phase)
        assert e is not None and e.left_out == "class"
        assert e.cross_validated == data.group_out[phase]["segment"]
    # a class with runs: the device-out figure, as before
    e = expected_error(resolve_machine("rtx-5090"), "decode")
    assert e is not None and e.left_out == "device"


def test_a_wrappers_runs_are_fitted_with_an_engine_factor():
    """The seed laptop's Ollama runs and other wrappers' carry their engine in the fit; a
    machine composed from its groups is priced as llama.cpp runs it."""
    obs, _ = benchmark_observations()
    for o in obs:
        engine = o.meta["engine"]
        assert o.keys["engine"] == ("" if engine == "llama.cpp" else engine), o.label
    assert {o.keys["engine"] for o in obs if o.machine == "radeon-860m"} == {"ollama"}
    assert "ollama" in timing_defaults().factors["engine"]
    keys = fit_keys("amd", "igpu", "vulkan", peak="matrix", segment="amd APU/iGPU")
    assert compose_efficiency({**keys, "engine": "ollama"}) == compose_efficiency(keys)
