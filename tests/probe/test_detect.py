"""Each detection source parsed from its recorded output (tests/probe/fixtures, see README)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tokenwalk.probe import detect as d

FIX = Path(__file__).parent / "fixtures"
GIB = 1 << 30


def text(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


def test_cpuinfo_xeon():
    info = d.parse_cpuinfo(text("cpuinfo-xeon-2vcpu.txt"))
    assert info["model"] == "Intel Xeon Processor"
    assert info["threads"] == 2 and info["cores"] == 2
    assert info["cache_kb"] == 491520
    simd = d.simd_features(info["flags"])
    assert {"avx2", "avx512", "avx512_vnni", "avx512_bf16", "amx", "amx_int8"} <= set(simd)
    assert "neon" not in simd
    assert d.native_simd(simd) == "avx512_fp16"  # a build from source there uses it


def test_cpuinfo_arm_has_no_model_name():
    info = d.parse_cpuinfo(text("cpuinfo-raspberry-pi-5.txt"))
    assert info["model"] == "Raspberry Pi 5 Model B Rev 1.0"
    assert info["threads"] == 4 and info["cores"] == 4
    simd = d.simd_features(info["flags"])
    assert "neon" in simd and "dotprod" in simd and "sve" not in simd and "avx2" not in simd
    assert d.native_simd(simd) == "neon"  # with FP16 vector arithmetic (asimdhp)


@pytest.mark.parametrize(
    "simd, build",
    [
        (["avx2", "avx512", "avx512_fp16"], "avx512_fp16"),
        (["avx2", "avx512", "avx512_vnni"], "avx512"),
        (["avx2", "avx_vnni"], "avx2"),
        (["neon", "neon_fp16"], "neon"),
        (["neon"], None),
        ([], None),
    ],
)
def test_native_simd_is_the_widest_a_build_from_source_uses(simd, build):
    assert d.native_simd(simd) == build


def test_a_mac_with_fp16_arithmetic_is_a_neon_build():
    cpu = d._cpu_from_sysctl({"hw.optional.arm.FEAT_FP16": "1", "hw.optional.AdvSIMD": "1"})
    assert d.native_simd(d.simd_features(cpu["flags"])) == "neon"


def test_meminfo():
    vals = d.parse_meminfo(text("meminfo-24g.txt"))
    assert vals["total"] % 1024 == 0 and 20 * GIB < vals["total"] < 25 * GIB
    assert 0 < vals["available"] <= vals["total"]


def test_dmidecode_skips_empty_slots():
    mem = d.parse_dmidecode_memory(text("dmidecode-memory.txt"))
    assert mem == {"type": "DDR5", "speed_mts": 5600, "modules": 2}
    assert d.parse_dmidecode_memory("") == {"type": None, "speed_mts": None, "modules": None}


def test_sysctl_mac():
    s = d.parse_sysctl(text("sysctl-m2-pro.txt"))
    cpu = d._cpu_from_sysctl(s)
    assert cpu["model"] == "Apple M2 Pro" and cpu["cores"] == 12
    assert cpu["memory_bytes"] == 32 * GIB
    simd = d.simd_features(cpu["flags"])
    assert {"neon", "dotprod", "i8mm", "bf16"} <= set(simd) and "sme" not in simd


def test_system_profiler():
    gpus = d.parse_system_profiler_displays(
        json.loads(text("system_profiler-displays-m2-pro.json"))
    )
    assert len(gpus) == 1
    g = gpus[0]
    assert (g.vendor, g.name, g.n_gpu_cores, g.memory_bytes) == ("apple", "Apple M2 Pro", 19, None)
    mem = d.parse_system_profiler_memory(json.loads(text("system_profiler-memory-m2-pro.json")))
    assert mem["type"] == "LPDDR5" and mem["total_bytes"] == 32 * GIB


def test_nvidia_smi_csv():
    gpus = d.parse_nvidia_smi(text("nvidia-smi.csv"))
    assert [g.name for g in gpus] == ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4070 Ti"]
    assert gpus[0].memory_bytes == 24564 * (1 << 20)
    assert gpus[0].driver == "550.54.14" and gpus[0].bus_id == "00000000:01:00.0"
    assert d.parse_nvidia_smi("") == []


def fake_nvml(recorded: dict) -> SimpleNamespace:
    """A stand-in for the `pynvml` module that returns recorded NVML values."""
    devs = recorded["devices"]
    calls = []
    return SimpleNamespace(
        calls=calls,
        nvmlInit=lambda: calls.append("init"),
        nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlSystemGetDriverVersion=lambda: recorded["driver_version"],
        nvmlDeviceGetCount=lambda: len(devs),
        nvmlDeviceGetHandleByIndex=lambda i: devs[i],
        nvmlDeviceGetName=lambda h: h["name"].encode(),  # older bindings return bytes
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=h["memory_total"]),
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=h["bus_id"]),
    )


def test_nvml_fields():
    nvml = fake_nvml(json.loads(text("nvml-h100.json")))
    gpus = d.gpus_from_nvml(nvml)
    assert len(gpus) == 2 and gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert gpus[0].memory_bytes == 85520809984 and gpus[0].driver == "550.90.07"
    assert gpus[1].bus_id == "00000000:2a:00.0"
    assert nvml.calls == ["init", "shutdown"]


def fake_amdsmi(recorded: dict) -> SimpleNamespace:
    devs = recorded["devices"]
    return SimpleNamespace(
        AmdSmiMemoryType=SimpleNamespace(VRAM="VRAM"),
        amdsmi_init=lambda: None,
        amdsmi_shut_down=lambda: None,
        amdsmi_get_processor_handles=lambda: list(range(len(devs))),
        amdsmi_get_gpu_asic_info=lambda h: devs[h]["asic_info"],
        amdsmi_get_gpu_memory_total=lambda h, kind: devs[h]["vram_total"] if kind == "VRAM" else 0,
        amdsmi_get_gpu_device_bdf=lambda h: devs[h]["bdf"],
    )


def test_amdsmi_fields():
    gpus = d.gpus_from_amdsmi(fake_amdsmi(json.loads(text("amdsmi-mi300x.json"))))
    assert len(gpus) == 1
    assert gpus[0].name == "AMD Instinct MI300X" and gpus[0].memory_bytes == 205822885888


def test_sysfs_drm_keeps_gpus_and_notes_other_adapters():
    gpus, others = d.parse_drm_sysfs(FIX / "sysfs-amd-workstation/sys")
    assert len(gpus) == 1 and gpus[0].vendor == "amd" and gpus[0].driver == "amdgpu"
    assert gpus[0].memory_bytes == 25753026560 and gpus[0].bus_id == "0000:03:00.0"
    assert others == ["0x1a03:0x2000 (ast)"]
    assert d._l3_bytes_sysfs(FIX / "sysfs-amd-workstation/sys") == 32 << 20


def test_lspci():
    gpus = d.parse_lspci(text("lspci-amd-workstation.txt"))
    assert [(g.vendor, g.name) for g in gpus] == [
        ("other", "ASPEED Technology, Inc. ASPEED Graphics Family"),
        ("amd", "Radeon RX 7900 XT/7900 XTX/7900M"),
    ]
    assert gpus[1].bus_id == "0000:03:00.0"
    laptop = d.parse_lspci(text("lspci-intel-laptop.txt"))
    assert [(g.vendor, g.name) for g in laptop] == [
        ("intel", "Intel Graphics"),
        ("nvidia", "GeForce RTX 4060 Max-Q / Mobile"),
    ]


def test_backend_choice():
    gpu = d.GpuInfo(vendor="amd", name="x", memory_bytes=None, source="t")
    assert d.llama_backend([])[0] == "cpu"
    assert d.llama_backend([gpu])[0] == "vulkan"
    assert d.llama_backend([gpu], rocm=True)[0] == "rocm"
    nv = gpu.model_copy(update={"vendor": "nvidia"})
    assert d.llama_backend([gpu, nv])[0] == "cuda"


# -- the whole detection, from recorded sources ----------------------------------------------


def tools(outputs: dict[str, str]):
    """A `run` that answers from recorded outputs by tool name; other tools are not found."""

    def run(argv: list[str]) -> tuple[str | None, str]:
        if argv[0] in outputs:
            return outputs[argv[0]], ""
        return None, "not found on the PATH"

    return run


def no_libraries(name: str):
    raise ImportError(name)


def test_detect_amd_workstation(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(FIX / "sysfs-amd-workstation", root)
    (root / "proc").mkdir()
    shutil.copy(FIX / "cpuinfo-xeon-2vcpu.txt", root / "proc/cpuinfo")
    shutil.copy(FIX / "meminfo-24g.txt", root / "proc/meminfo")
    run = tools(
        {"lspci": text("lspci-amd-workstation.txt"), "dmidecode": text("dmidecode-memory.txt")}
    )
    found = d.detect_machine(root, run=run, importer=no_libraries, system="Linux")
    assert found.cpu.name == "Intel Xeon Processor" and found.cpu.l3_bytes == 32 << 20
    assert found.memory.dram_type == "DDR5" and found.memory.speed_mts == 5600
    assert [(g.name, g.source) for g in found.gpus] == [
        ("Radeon RX 7900 XT/7900 XTX/7900M", "sysfs+lspci")
    ]
    assert found.backend == "vulkan" or found.backend == "rocm"  # rocm if /opt/rocm exists here
    status = {n.source: n.status for n in found.notes}
    assert status["nvidia-ml-py"] == "absent" and status["amdsmi"] == "absent"
    assert status["nvidia-smi"] == "absent" and status["lspci"] == "found"


def test_detect_nvidia_prefers_nvml_over_nvidia_smi(tmp_path):
    recorded = json.loads(text("nvml-h100.json"))

    def importer(name: str):
        if name == "pynvml":
            return fake_nvml(recorded)
        raise ImportError(name)

    run = tools({"nvidia-smi": text("nvidia-smi.csv")})
    found = d.detect_machine(tmp_path, run=run, importer=importer, system="Linux")
    assert [g.source for g in found.gpus] == ["nvml", "nvml"]
    assert found.backend == "cuda"
    # without NVML, nvidia-smi answers
    found = d.detect_machine(tmp_path, run=run, importer=no_libraries, system="Linux")
    assert [g.name for g in found.gpus][0] == "NVIDIA GeForce RTX 4090"


def test_detect_mac():
    outputs = {
        "sysctl": text("sysctl-m2-pro.txt"),
        "system_profiler": "",
    }

    def run(argv: list[str]) -> tuple[str | None, str]:
        if argv[0] == "system_profiler":
            name = "displays" if argv[-1] == "SPDisplaysDataType" else "memory"
            return text(f"system_profiler-{name}-m2-pro.json"), ""
        return outputs.get(argv[0]), ""

    found = d.detect_machine("/nonexistent", run=run, importer=no_libraries, system="Darwin")
    assert found.cpu.name == "Apple M2 Pro" and "neon" in found.cpu.simd
    assert found.memory.total_bytes == 32 * GIB and found.memory.dram_type == "LPDDR5"
    assert found.gpus[0].n_gpu_cores == 19 and found.backend == "metal"


def test_detect_with_nothing_at_all(tmp_path):
    """No files, no tools, no libraries: a description with notes, never an error."""
    found = d.detect_machine(tmp_path, run=tools({}), importer=no_libraries, system="Linux")
    assert found.gpus == [] and found.backend == "cpu"
    status = {n.source: n.status for n in found.notes}
    assert status["/proc/cpuinfo"] == "failed"
    assert status["nvidia-ml-py"] == "absent" and status["lspci"] == "absent"
    assert found.cpu.n_usable_threads >= 1


def test_a_broken_library_is_a_line(tmp_path):
    def importer(name: str):
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    found = d.detect_machine(tmp_path, run=tools({}), importer=importer, system="Linux")
    assert {n.source: n.status for n in found.notes}["nvidia-ml-py"] == "failed"


def test_nvml_without_a_driver_is_a_line(tmp_path):
    class NVMLError(Exception):
        pass

    def init():
        raise NVMLError("Driver Not Loaded")

    nvml = SimpleNamespace(nvmlInit=init, nvmlShutdown=lambda: None)
    found = d.detect_machine(
        tmp_path,
        run=tools({}),
        importer=lambda n: nvml if n == "pynvml" else no_libraries(n),
        system="Linux",
    )
    note = next(n for n in found.notes if n.source == "nvidia-ml-py")
    assert note.status == "failed" and "Driver Not Loaded" in note.detail


@pytest.mark.skipif(sys.platform != "linux", reason="reads this Linux machine")
def test_detect_this_machine():
    found = d.detect_machine()
    assert found.cpu.n_threads and found.memory.total_bytes
