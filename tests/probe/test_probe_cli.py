"""`tokenwalk probe`: output, --json, --write into the user's machine file, and then
`--machine this` in the other commands."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from canned import GIB, canned_measurement

import tokenwalk.probe as probe_mod
from tokenwalk.cli import main
from tokenwalk.probe.detect import CpuInfo, Detected, GpuInfo, MemoryInfo


def detected(gpus: list[GpuInfo] | None = None, model: str = "Intel Xeon Processor") -> Detected:
    return Detected(
        os="Linux 6.1",
        cpu=CpuInfo(
            name=model,
            arch="x86_64",
            n_cores=2,
            n_threads=2,
            n_usable_threads=2,
            simd=["avx2", "avx512", "amx"],
            source="/proc/cpuinfo",
        ),
        memory=MemoryInfo(total_bytes=24 * GIB, available_bytes=20 * GIB, source="/proc/meminfo"),
        gpus=gpus or [],
        backend="cuda" if gpus else "cpu",
        backend_reason="test",
        notes=[],
    )


@pytest.fixture
def canned(monkeypatch):
    """probe() with a recorded description and measurement (no timing in these tests)."""
    state = {"detected": detected()}
    monkeypatch.setattr(probe_mod, "detect_machine", lambda: state["detected"])
    monkeypatch.setattr(probe_mod, "measure_host", lambda **kw: canned_measurement())
    return state


def test_probe_write_then_decode_this(canned, tmp_path, capsys, monkeypatch):
    target = tmp_path / "cfg" / "machines.yaml"
    monkeypatch.setenv("TOKENWALK_MACHINES", str(target))
    assert main(["probe", "--write"]) == 0
    out = capsys.readouterr().out
    assert "read, 2 threads" in out and "stored in" in out
    entries = yaml.safe_load(target.read_text())
    (e,) = entries
    assert e["slug"] == "this" and e["kind"] == "cpu" and e["backend"] == "cpu"
    assert e["bandwidth_gbs"] == 19.0 and e["cpu_tflops"] == 0.19 and e["memory_gb"] == 24.0
    assert e["cpu_simd"] == "avx512" and "uses avx512 (cpu_simd)" in out
    assert main(["decode", "qwen2.5-0.5b", "--machine", "this", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["machine"] == "this" and report["bandwidth_gbs"] == 19.0
    assert main(["prefill", "qwen2.5-0.5b", "--machine", "this", "--prompt", "512"]) == 0
    # a second probe replaces the entry, another name adds one
    assert main(["probe", "--write"]) == 0
    assert main(["probe", "--write", "--name", "box-2"]) == 0
    assert [x["slug"] for x in yaml.safe_load(target.read_text())] == ["this", "box-2"]


def test_probe_json(canned, capsys, tmp_path):
    assert main(["probe", "--json", "--machines-file", str(tmp_path / "m.yaml")]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["detected"]["cpu"]["name"] == "Intel Xeon Processor"
    assert r["measured"]["read_gbs_all"]["median"] == 19.0
    assert r["entry"]["slug"] == "this" and r["written_to"] is None
    assert not (tmp_path / "m.yaml").exists()  # nothing stored without --write


def test_probe_a_matched_gpu_is_the_machine(canned, tmp_path, capsys):
    canned["detected"] = detected(
        [GpuInfo(vendor="nvidia", name="NVIDIA H200", memory_bytes=143771 << 20, source="nvml")]
    )
    target = tmp_path / "m.yaml"
    assert main(["probe", "--write", "--machines-file", str(target), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["gpu_match"]["slug"] == "h200"
    (e,) = yaml.safe_load(target.read_text())
    assert e["kind"] == "datacenter" and e["backend"] == "cuda"
    assert e["memory_gb"] == 140.4 and e["cpu_tflops"] == 0.19
    assert "h200" in e["source"]
    assert (
        main(["decode", "qwen2.5-0.5b", "--machine", "this", "--machines-file", str(target)]) == 0
    )


def test_nothing_written_on_failure(canned, tmp_path, monkeypatch, capsys):
    target = tmp_path / "m.yaml"
    assert main(["probe", "--write", "--name", "bad name!", "--machines-file", str(target)]) == 2
    assert main(["probe", "--write", "--no-measure", "--machines-file", str(target)]) == 2

    def fail(**kw):
        raise ValueError("a memory budget of 0.01 GiB leaves too little")

    monkeypatch.setattr(probe_mod, "measure_host", fail)
    assert main(["probe", "--write", "--machines-file", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("tokenwalk: error:") == 3 and "Traceback" not in err
    assert not target.exists()


def test_a_broken_machine_file_is_left_alone(canned, tmp_path, capsys):
    target = tmp_path / "m.yaml"
    target.write_text("- slug: x\n  kind: nonsense\n")
    before = target.read_text()
    assert main(["probe", "--write", "--machines-file", str(target)]) == 2
    assert target.read_text() == before
    assert not (tmp_path / "m.yaml.tmp").exists()


def test_probe_with_every_optional_library_and_tool_absent(monkeypatch, capsys, tmp_path):
    """The real probe, measurement included, with no NVML, amdsmi or threadpoolctl and no tool
    on the PATH: it answers, and each missing source is a line."""
    import tokenwalk.probe.detect as detect_mod

    for name in ("pynvml", "amdsmi", "threadpoolctl"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(detect_mod.shutil, "which", lambda name: None)
    target = tmp_path / "m.yaml"
    rc = main(
        [
            "probe",
            "--json",
            "--memory-budget",
            "0.25",
            "--repeats",
            "1",
            "--write",
            "--machines-file",
            str(target),
        ]
    )
    assert rc == 0
    r = json.loads(capsys.readouterr().out)
    status = {n["source"]: (n["status"], n["detail"]) for n in r["detected"]["notes"]}
    assert status["nvidia-ml-py"][0] == "absent" and status["amdsmi"][0] == "absent"
    assert status["nvidia-smi"] == ("absent", "not found on the PATH")
    assert r["measured"]["memory_budget_bytes"] == GIB // 4
    assert r["measured"]["buffer_bytes"] + 3 * 4 * 2048**2 <= GIB // 4
    assert r["entry"]["bandwidth_gbs"] > 0 and target.exists()
    assert main(["probe", "--no-measure"]) == 0
    assert "nvidia-ml-py" in capsys.readouterr().out
