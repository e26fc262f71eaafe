"""Machines: catalogue names, inline numbers, overrides, user files, refusals."""

from __future__ import annotations

import pytest

from tokenwalk.errors import InputError, UnknownNameError
from tokenwalk.machine import compose_efficiency, fit_keys, resolve_machine, timing_defaults


def test_named_machine_has_its_calibrated_fit():
    m = resolve_machine("radeon-860m")
    assert m.bandwidth_gbs == 128 and m.tflops == 12.3 and m.kind == "igpu"
    assert m.fit.source.startswith("machine radeon-860m")
    assert m.balance_flop_per_byte == pytest.approx(96.1, abs=0.1)


def test_override_a_named_machine():
    m = resolve_machine("radeon-860m", memory=96, bandwidth=136.5)
    assert m.memory_bytes == 96e9 and m.bandwidth_gbs == 136.5
    assert m.fit == resolve_machine("radeon-860m").fit


def test_inline_machine_gets_its_group_fit():
    m = resolve_machine(None, bandwidth=400, tflops=10, kind="apple", backend="metal")
    assert m.slug == "custom"
    d = timing_defaults()
    assert m.fit == compose_efficiency(fit_keys("apple", "apple", "metal"))
    assert "apple/metal" in m.fit.source
    assert m.fit.eff_bw == pytest.approx(
        d.global_fit.eff_bw
        * d.factors["vendor"]["apple"]["eff_bw"]
        * d.factors["backend"]["metal"]["eff_bw"]
        * d.factors["kind"]["apple"]["eff_bw"]
        * d.factors["kind/backend"]["apple/metal"]["eff_bw"]
    )
    # an unseen combination borrows from the groups it has: cpu backend, no sbc group
    m2 = resolve_machine(None, bandwidth=50, tflops=1, kind="sbc", backend="cpu")
    assert "sbc" not in m2.fit.source and "backend cpu" in m2.fit.source


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(name=None),
        dict(name=None, bandwidth=100),
        dict(name=None, bandwidth=0, tflops=1),
        dict(name=None, bandwidth=200_000, tflops=1),
        dict(name=None, bandwidth=100, tflops=-1),
        dict(name="radeon-860m", memory=-4),
    ],
)
def test_refusals(kwargs):
    name = kwargs.pop("name")
    with pytest.raises(InputError):
        resolve_machine(name, **kwargs)


def test_unknown_machine_suggests():
    with pytest.raises(UnknownNameError, match="did you mean radeon-8"):
        resolve_machine("radeon-86m")


def test_user_files(tmp_path, monkeypatch):
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "- slug: my-box\n  name: My box\n  kind: gpu\n  backend: cuda\n  bandwidth_gbs: 500\n"
        "  fp16_tflops: 50\n  fp16_kind: matrix\n  source: me\n"
        "  fit: {eff_bw: 0.5, eff_compute: 0.25, overhead_s: 0.0001}\n"
        "- slug: radeon-860m\n  memory_gb: 32\n"
    )
    m = resolve_machine("my-box", machines_file=mine)
    assert m.fit.eff_bw == 0.5 and m.fit.overhead_s == 1e-4
    assert resolve_machine("radeon-860m", machines_file=mine).memory_bytes == 32e9
    monkeypatch.setenv("TOKENWALK_MACHINES", str(mine))
    assert resolve_machine("my-box").bandwidth_gbs == 500
    monkeypatch.setenv("TOKENWALK_MACHINES", str(tmp_path / "missing.yaml"))
    with pytest.raises(InputError, match="TOKENWALK_MACHINES"):
        resolve_machine("radeon-860m")
