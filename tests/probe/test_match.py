"""Detected names -> catalogue machines: the key's words, the memory, the Apple GPU cores."""

from __future__ import annotations

import pytest

from tokenwalk.probe.match import match_catalogue

GIB = 1 << 30
MIB = 1 << 20
GPU = ("gpu", "datacenter", "igpu")
CPU = ("cpu", "sbc")


@pytest.mark.parametrize(
    ("name", "memory", "slug"),
    [
        ("NVIDIA GeForce RTX 4090", 24564 * MIB, "rtx-4090"),
        ("NVIDIA GeForce RTX 4070 Ti", 12282 * MIB, "rtx-4070-ti"),
        ("NVIDIA GeForce RTX 4070", 12282 * MIB, "rtx-4070"),
        ("NVIDIA H100 80GB HBM3", 85520809984, "h100-sxm"),
        ("NVIDIA H100 PCIe", 81559 * MIB, "h100-pcie"),
        ("NVIDIA H200", 143771 * MIB, "h200"),
        ("NVIDIA A100-SXM4-80GB", 81920 * MIB, "a100-80gb"),
        ("NVIDIA A100-PCIE-40GB", 40960 * MIB, "a100-40gb"),
        ("AMD Instinct MI300X", 205822885888, "mi300x"),
        ("Radeon RX 7900 XT/7900 XTX/7900M", 25753026560, "rx-7900-xtx"),
        ("Radeon RX 7900 XT/7900 XTX/7900M", 20 * GIB, "rx-7900-xt"),
        ("NVIDIA GeForce RTX 4060 Ti", 16380 * MIB, "rtx-4060-ti-16gb"),
    ],
)
def test_gpus(name, memory, slug):
    m = match_catalogue(name, GPU, memory_bytes=memory)
    assert m is not None and m.slug == slug, m


@pytest.mark.parametrize(
    ("name", "memory"),
    [
        ("NVIDIA GeForce RTX 4070 SUPER", 12 * GIB),  # a different board than the 4070
        ("NVIDIA GeForce RTX 3060 Laptop GPU", 6 * GIB),  # not the 12 GB desktop card
        ("NVIDIA GeForce RTX 4060 Ti", 8 * GIB),  # the 8 GB board is not catalogued
        ("GeForce RTX 4060 Max-Q / Mobile", None),
    ],
)
def test_gpus_that_fit_no_entry(name, memory):
    assert match_catalogue(name, GPU, memory_bytes=memory) is None


@pytest.mark.parametrize(
    ("name", "cores", "slug"),
    [
        ("Apple M2 Pro", 19, "apple-m2-pro"),
        ("Apple M2 Pro", 16, "apple-m2-pro-16c"),
        ("Apple M1", 7, "apple-m1-7c"),
        ("Apple M4 Max", 32, "apple-m4-max-32c"),
        ("Apple M2 Max", 38, "apple-m2-max"),
    ],
)
def test_apple_by_chip_and_gpu_cores(name, cores, slug):
    m = match_catalogue(name, ("apple",), gpu_cores=cores)
    assert m is not None and m.slug == slug


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Intel Core i9-13900K", "i9-13900k"),
        ("AMD Ryzen 9 5950X 16-Core Processor", "ryzen-9-5950x"),
        ("AMD Ryzen AI Max+ 395 w/ Radeon 8060S", "ryzen-ai-max-395-cpu"),
        ("AMD Ryzen AI 9 HX PRO 370 w/ Radeon 890M", "ryzen-ai-9-hx-pro-370-cpu"),
        ("Raspberry Pi 5 Model B Rev 1.0", "raspberry-pi-5"),
    ],
)
def test_cpus(name, slug):
    m = match_catalogue(name, CPU)
    assert m is not None and m.slug == slug, m


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("AMD Ryzen AI Max+ 395 w/ Radeon 8060S", "ryzen-ai-max-395"),
        ("AMD Ryzen AI 9 HX 370 w/ Radeon 890M", "radeon-890m"),
    ],
)
def test_apus_name_their_integrated_gpu(name, slug):
    m = match_catalogue(name, ("igpu",))
    assert m is not None and m.slug == slug


def test_this_xeon_is_not_catalogued():
    assert match_catalogue("Intel Xeon Processor", CPU) is None
