"""Machines: catalogue names, inline numbers, overrides, user files, refusals."""

from __future__ import annotations

import pytest

from tokenwalk.catalog import load_machines
from tokenwalk.errors import InputError, SpecError, UnknownNameError
from tokenwalk.machine import GIB, metal_working_set_bytes, resolve_machine
from tokenwalk.timing.efficiency import (
    compose_efficiency,
    fit_keys,
    machine_segment,
    timing_defaults,
)


def test_named_machine_has_its_calibrated_fit():
    m = resolve_machine("radeon-860m")
    assert m.bandwidth_gbs == 128 and m.tflops == 12.3 and m.kind == "igpu"
    assert m.fit.source.startswith("machine radeon-860m")
    assert m.balance_flop_per_byte == pytest.approx(96.1, abs=0.1)


def test_override_a_named_machine():
    m = resolve_machine("radeon-860m", memory=96, bandwidth=136.5)
    assert m.memory_bytes == 96 * GIB and m.bandwidth_gbs == 136.5  # --memory is GiB
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


def test_what_the_compute_rate_is_the_peak_of_is_a_group():
    """A matrix-unit peak (tensor cores, XMX) and a vector-ALU peak are reached in different
    shares: the peak level moves eff_compute only, and a cpu backend's rate is its SIMD peak."""
    d = timing_defaults()
    peaks = d.factors["peak"]
    assert {"matrix", "vector", "simd"} <= set(peaks)
    assert peaks["matrix"]["eff_compute"] < peaks["vector"]["eff_compute"]
    for f in peaks.values():
        assert f["eff_bw"] == f["overhead_per_layer_s"] == 1.0
    # a tensor core's tile needs more rows than a vector ALU to reach its rate
    assert peaks["matrix"]["rows_half"] > peaks["vector"]["rows_half"]
    kw = dict(bandwidth=1000, tflops=100, kind="gpu", backend="cuda")
    plain = resolve_machine(None, **kw)
    matrix = resolve_machine(None, tflops_kind="matrix", **kw)
    vector = resolve_machine(None, tflops_kind="Vector", **kw)
    assert plain.peak is None and matrix.peak == "matrix" and vector.peak == "vector"
    assert "peak" not in plain.fit.source and "peak matrix" in matrix.fit.source
    assert matrix.fit.eff_compute == pytest.approx(
        plain.fit.eff_compute * peaks["matrix"]["eff_compute"]
    )
    assert vector.fit.eff_compute > matrix.fit.eff_compute
    assert resolve_machine(None, bandwidth=50, tflops=1, backend="cpu").peak == "simd"
    # a named machine: its catalogue fp16_kind, unless --tflops-kind says otherwise
    assert resolve_machine("rtx-4090").peak == "matrix"
    assert resolve_machine("mi60").peak == "vector"
    # another peak than the catalogue's is another machine for the fit: its own fit gives way
    matrix_mi60 = resolve_machine("mi60", tflops_kind="matrix")
    assert matrix_mi60.peak == "matrix" and "peak matrix" in matrix_mi60.fit.source
    assert resolve_machine("mi60", tflops_kind="vector").fit == resolve_machine("mi60").fit
    with pytest.raises(InputError, match="cpu backend"):
        resolve_machine(None, bandwidth=50, tflops=1, backend="cpu", tflops_kind="matrix")
    # the machines list shows what the commands use
    from tokenwalk.cli.machines_cmd import machine_rows

    row = next(r for r in machine_rows("radeon-880m") if r.slug == "radeon-880m")
    assert row.eff_compute == resolve_machine("radeon-880m").fit.eff_compute
    assert fit_keys("amd", "datacenter", "rocm", peak="vector")["peak"] == "vector"


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(name=None, bandwidth=100, tflops=1, tflops_kind="tensor"),
        dict(name=None),
        dict(name=None, tflops=10),
        dict(name=None, bandwidth=0, tflops=1),
        dict(name=None, bandwidth=200_000, tflops=1),
        dict(name=None, bandwidth=100, tflops=-1),
        dict(name="radeon-860m", memory=-4),
        dict(name="apple-m1", gpu_limit=0),
        dict(name="apple-m1", gpu_limit=17),  # more than its 16 GiB
        dict(name=None, bandwidth=100, memory=8, gpu_limit=9),
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
        "  fit: {eff_bw: 0.5, eff_compute: 0.25, overhead_per_layer_s: 0.0001}\n"
        "- slug: radeon-860m\n  memory_gb: 32\n"
    )
    m = resolve_machine("my-box", machines_file=mine)
    assert m.fit.eff_bw == 0.5 and m.fit.overhead_per_layer_s == 1e-4
    assert resolve_machine("radeon-860m", machines_file=mine).memory_bytes == 32 * GIB
    monkeypatch.setenv("TOKENWALK_MACHINES", str(mine))
    assert resolve_machine("my-box").bandwidth_gbs == 500
    monkeypatch.setenv("TOKENWALK_MACHINES", str(tmp_path / "missing.yaml"))
    with pytest.raises(InputError, match="TOKENWALK_MACHINES"):
        resolve_machine("radeon-860m")


# -- memory units ---------------------------------------------------------------------------------


def test_capacities_are_binary_as_vendors_mean_them():
    """A '24 GB' RTX 4090 holds 24 GiB (it reports 24,564 MiB); a '16 GB' Mac 16 GiB."""
    assert resolve_machine("rtx-4090").memory_bytes == 24 * 2**30
    assert resolve_machine("apple-m1").memory_bytes == 16 * 2**30
    assert resolve_machine("radeon-860m").memory_bytes == 64 * 2**30


def test_a_decimal_figure_says_so(tmp_path):
    mine = tmp_path / "m.yaml"
    mine.write_text(
        "- {slug: rtx-4090, memory_gb: 24, memory_unit: GB}\n"
        "- {slug: box, name: Box, kind: gpu, backend: cuda, memory_gb: 24, bandwidth_gbs: 500}\n"
    )
    assert resolve_machine("rtx-4090", machines_file=mine).memory_bytes == 24e9
    assert resolve_machine("box", machines_file=mine).memory_bytes == 24 * GIB


# -- Apple's GPU working set ----------------------------------------------------------------------


def test_metal_working_set_matches_llama_cpp():
    """llama.cpp prints recommendedMaxWorkingSetSize: 10922.67 MB (MiB) on a 16 GB M1, 21845.34
    on 32 GB, 49152.00 on a 64 GB M1 Max, 147456.00 on a 192 GB M2 Ultra."""
    mib = 2**20
    for ram_gib, mb in ((16, 10922.67), (32, 21845.34), (64, 49152.0), (192, 147456.0)):
        assert metal_working_set_bytes(ram_gib * GIB) / mib == pytest.approx(mb, abs=0.01)


def test_gpu_usable_bytes():
    m1 = resolve_machine("apple-m1")
    assert m1.gpu_usable_bytes == pytest.approx(16 * GIB * 2 / 3)
    assert "2/3" in m1.gpu_limit_note
    assert resolve_machine("apple-m1-max").gpu_usable_bytes == 48 * GIB
    raised = resolve_machine("apple-m1", gpu_limit=14)
    assert raised.gpu_usable_bytes == 14 * GIB and "--gpu-limit" in raised.gpu_limit_note
    # the CPU backend of a Mac is not held to Metal's working set; a discrete card has its own
    assert resolve_machine("apple-m1", backend="cpu").gpu_usable_bytes == 16 * GIB
    assert resolve_machine("rtx-4090").gpu_usable_bytes == 24 * GIB
    assert resolve_machine("rtx-4090").gpu_limit_note == ""


def test_an_integrated_gpu_gets_half_the_ram_by_default():
    # Windows shares half the RAM with an integrated GPU; Linux's TTM caps GTT at half the RAM
    igpu = resolve_machine("radeon-860m")
    assert igpu.gpu_usable_bytes == 32 * GIB
    assert "half the RAM" in igpu.gpu_limit_note and "amdgpu.gttsize" in igpu.gpu_limit_note
    raised = resolve_machine("radeon-860m", gpu_limit=48)
    assert raised.gpu_usable_bytes == 48 * GIB and "--gpu-limit" in raised.gpu_limit_note
    # a Snapdragon X runs llama.cpp's CPU backend: the cores read the whole memory
    assert resolve_machine("snapdragon-x-elite").gpu_limit_note == ""


# -- incomplete machines --------------------------------------------------------------------------


def test_decode_needs_no_compute_rate():
    m = resolve_machine(None, bandwidth=100)
    assert m.tflops is None and m.name == "custom (100 GB/s)"
    assert resolve_machine(None, bandwidth=100, kind="apple").backend == "metal"


def test_cpu_backends_compute_at_the_cpu_rate():
    """cores x clock x FP32 FLOP per cycle: 16 Zen 5 cores x 5.7 GHz x 64 = 5.84 TFLOPS."""
    assert resolve_machine("desktop-ddr5-5600").tflops == pytest.approx(16 * 5.7 * 64 / 1e3, 0.01)
    assert resolve_machine("raspberry-pi-5").tflops == pytest.approx(4 * 2.4 * 16 / 1e3, 0.01)
    # a GPU machine run on its CPU has no GPU rate to borrow
    assert resolve_machine("radeon-860m", backend="cpu").tflops is None


def test_every_cpu_and_gpu_with_bandwidth_has_a_compute_rate():
    """Every catalogue machine whose bandwidth is known can answer prefill."""
    missing = [m.slug for m in load_machines() if m.bandwidth_gbs and "compute" in m.lacks()]
    assert missing == []


def test_fits_written_before_the_rename_still_read(tmp_path):
    """A machine file from before `overhead_s` became `overhead_per_layer_s` keeps its fit."""
    old = tmp_path / "old.yaml"
    old.write_text(
        "- slug: my-box\n  name: My box\n  kind: gpu\n  backend: cuda\n  bandwidth_gbs: 500\n"
        "  source: me\n  fit: {eff_bw: 0.5, eff_compute: 0.25, overhead_s: 0.0002}\n"
    )
    assert resolve_machine("my-box", machines_file=old).fit.overhead_per_layer_s == 2e-4
    # and a fit from before eff_experts runs routed experts at the dense rate
    assert resolve_machine("my-box", machines_file=old).fit.eff_experts == 1.0


@pytest.mark.parametrize(
    ("fit", "says"),
    [
        ("eff_bw: 0.5, eff_compute: 0, overhead_per_layer_s: 1e-4", "eff_compute is 0"),
        ("eff_bw: -1, eff_compute: 0.5, overhead_per_layer_s: 1e-4", "eff_bw is -1"),
        ("eff_bw: 0.5, eff_compute: 0.5, overhead_per_layer_s: 1e-4, eff_experts: 0", "eff_exp"),
        ("eff_bw: 0.5, eff_compute: 0.5, overhead_per_layer_s: -2", "overhead_per_layer_s is -2"),
        ("eff_bw: 0.5, eff_compute: .nan, overhead_per_layer_s: 1e-4", "eff_compute is nan"),
    ],
)
def test_an_impossible_fit_in_a_machine_file_is_refused(tmp_path, fit, says):
    """A fit that would divide by zero or run backwards is one clear error, not a crash."""
    f = tmp_path / "bad.yaml"
    f.write_text(
        "- slug: my-box\n  name: My box\n  kind: gpu\n  backend: cuda\n  bandwidth_gbs: 500\n"
        f"  source: me\n  fit: {{{fit}}}\n"
    )
    with pytest.raises(SpecError, match=says):
        resolve_machine("my-box", machines_file=f)


def test_suite_ignores_the_machine_file_of_whoever_runs_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # tests/conftest.py points the config-dir machine file at a scratch path for the session: a
    # runner's own `probe --write` or `calibrate --from` must not change the numbers tests pin
    from tokenwalk.machine import user_machines_path

    assert tmp_path_factory.getbasetemp() in user_machines_path().parents


def test_a_machine_without_bandwidth_names_its_catalogued_boards() -> None:
    # the published W7800 runs name no board; the catalogue has both
    with pytest.raises(InputError, match="radeon-pro-w7800-32gb, radeon-pro-w7800-48gb"):
        resolve_machine("w7800")
    assert resolve_machine("radeon-pro-w7800-32gb").bandwidth_gbs == 576
    with pytest.raises(InputError) as e:  # no boards catalogued: only why
        resolve_machine("adreno-840")
    assert str(e.value).endswith("(docs/machines.md)")


def test_an_inline_machine_borrows_the_factors_of_the_maker_it_names():
    from tokenwalk.timing.efficiency import timing_defaults

    amd = timing_defaults().factors["vendor"]["amd"]
    kw = dict(bandwidth=256, tflops=59, kind="igpu", backend="vulkan", tflops_kind="matrix")
    plain = resolve_machine(None, **kw)
    made = resolve_machine(None, vendor="AMD", **kw)
    assert (plain.vendor, made.vendor) == ("other", "amd")
    assert "vendor" not in plain.fit.source and "vendor amd" in made.fit.source
    assert made.fit.eff_compute == pytest.approx(plain.fit.eff_compute * amd["eff_compute"])
    # a CPU's maker is a group of its own
    cpu = resolve_machine(None, bandwidth=90, tflops=1, backend="cpu", vendor="amd")
    assert "vendor amd-cpu" in cpu.fit.source
    # the backend implies one where it can
    assert resolve_machine(None, bandwidth=900, tflops=80, backend="rocm").vendor == "amd"


@pytest.mark.parametrize(
    "name, vendor, says",
    [
        (None, "acme", "--vendor must be one of apple, nvidia, amd, intel, qualcomm"),
        ("rtx-4090", "amd", "--vendor amd: 'rtx-4090' is nvidia's"),
    ],
)
def test_a_vendor_that_cannot_be_is_refused(name, vendor, says):
    with pytest.raises(InputError, match=says):
        resolve_machine(name, bandwidth=100, vendor=vendor)
    assert resolve_machine("rtx-4090", vendor="Nvidia").vendor == "nvidia"  # its own: fine


def test_a_named_machine_whose_name_says_no_maker_takes_the_one_given(tmp_path):
    mine = tmp_path / "machines.yaml"
    mine.write_text(
        "- slug: my-box\n  name: My box\n  kind: igpu\n  backend: vulkan\n"
        "  bandwidth_gbs: 120\n  fp16_tflops: 12\n  fp16_kind: matrix\n",
        encoding="utf-8",
    )
    plain = resolve_machine("my-box", machines_file=mine)
    amd = resolve_machine("my-box", machines_file=mine, vendor="amd")
    assert (plain.vendor, amd.vendor) == ("other", "amd")
    assert "vendor" not in plain.fit.source and "vendor amd" in amd.fit.source
    # a machine fitted to its own runs keeps its fit: the maker only names its groups
    with mine.open("a", encoding="utf-8") as f:
        f.write(
            "  fit: {eff_bw: 0.5, eff_compute: 0.2, overhead_per_layer_s: 0.0002, rows_half: 9,"
            " eff_experts: 1}\n"
        )
    fitted = resolve_machine("my-box", machines_file=mine, vendor="amd")
    assert fitted.fit.fitted_to == "machine file" and fitted.fit.eff_compute == 0.2


@pytest.mark.parametrize(
    ("slug", "segment"),
    [
        ("rtx-4090", "nvidia geforce"),
        ("rtx-a5000", "nvidia pro"),
        ("rtx-4000-ada", "nvidia pro"),
        ("rtx-pro-6000-bw", "nvidia pro"),
        ("h200", "nvidia pro"),
        ("gb10-dgx-spark", "nvidia apu"),  # one memory for its GPU and CPU
        ("jetson-agx-orin-64", "nvidia apu"),
        ("rx-7900-xtx", "amd consumer"),
        ("radeon-pro-w7900", "amd pro"),
        ("mi100", "amd pro"),
        ("ryzen-ai-max-395", "amd apu"),
        ("ryzen-ai-max-395-cpu", "amd cpu"),
        ("arc-a770", "intel consumer"),
        ("arc-pro-b70", "intel pro"),
        ("arc-140t", "intel apu"),
        ("apple-m4-max", "apple"),
        ("snapdragon-x-elite", "qualcomm cpu"),  # an igpu entry that computes on its cores
        ("raspberry-pi-5", "other cpu"),
    ],
)
def test_a_machines_class_is_its_maker_and_segment(slug, segment):
    m = resolve_machine(slug)
    assert machine_segment(m.kind, m.vendor, m.name, m.backend, m.unified_memory) == segment


def test_a_machines_class_follows_the_backend_asked():
    m = resolve_machine("ryzen-ai-max-395", backend="cpu")
    assert machine_segment(m.kind, m.vendor, m.name, m.backend, m.unified_memory) == "amd cpu"
