"""llama.cpp command lines as a user pastes them: every printed line splits as a shell splits
it, each flag once, and every -ot pattern, run through a regex engine as llama.cpp runs it
(the first pattern that matches a tensor's name wins), selects exactly the tensors that
tokenwalk's placement puts elsewhere, over the model's real tensor table."""

from __future__ import annotations

import re
import shlex
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenwalk.cli import main
from tokenwalk.costs.command import blocks_regex, command_line, range_regex
from tokenwalk.costs.offload import HOST, Placement, buft_names
from tokenwalk.costs.split import plan
from tokenwalk.errors import InputError
from tokenwalk.model.model import Model, Role
from tokenwalk.model.resolve import load_model
from tokenwalk.system import Offload, System, SystemSpec, resolve_system

# common/common.h: what --cpu-moe and --n-cpu-moe N add to the overrides
LLM_FFN_EXPS_REGEX = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"


def test_a_range_of_blocks_is_an_alternation_of_digit_classes():
    assert range_regex(18, 35) == ["1[89]", "2[0-9]", "3[0-5]"]
    assert blocks_regex([17]) == "17"
    assert blocks_regex(range(18, 36)) == "(1[89]|2[0-9]|3[0-5])"
    # a dense block between expert blocks holds nothing the pattern matches: one run
    assert blocks_regex([3, 5, 6], free=[4]) == "[3-6]"


@given(st.integers(0, 400), st.integers(0, 400))
def test_range_regex_matches_exactly_its_numbers(a, b):
    lo, hi = min(a, b), max(a, b)
    pattern = re.compile(r"blk\.(" + "|".join(range_regex(lo, hi)) + r")\.ffn")
    got = {n for n in range(0, 1200) if pattern.search(f"blk.{n}.ffn")}
    assert got == set(range(lo, hi + 1))


def test_each_flag_once_the_overrides_joined_and_quoted():
    line = command_line(
        [("-c", "4096"), ("-ngl", "all"), ("-ot", r"blk\.(1[89])\.ffn_.*_exps=CPU")],
        [("-ot", r"blk\.17\.ffn_down.*=CPU"), ("-c", "8192"), ("--cpu-moe", None)],
    )
    words = shlex.split(line)
    assert words == [
        "-c",
        "8192",
        "-ngl",
        "all",
        "-ot",
        r"blk\.(1[89])\.ffn_.*_exps=CPU,blk\.17\.ffn_down.*=CPU",
        "--cpu-moe",
    ]


def llama_devices(p: Placement, model: Model, system: System) -> dict[str, int]:
    """Where llama.cpp puts each block tensor given `p.flags`: the layer's device, unless an
    override from --cpu-moe, --n-cpu-moe or -ot matches its name first (llama-model-loader.cpp
    `regex_search`, first match wins). Checks the flags on the way."""
    words = shlex.split(p.flags)
    flags = [w for w in words if w.startswith("-")]
    assert len(flags) == len(set(flags)), p.flags
    names = {n: d for d, n in enumerate(buft_names(system))} | {"CPU": HOST}
    overrides: list[tuple[re.Pattern[str], int]] = []
    ngl = None
    for i, w in enumerate(words):
        value = words[i + 1] if i + 1 < len(words) else ""
        if w == "--cpu-moe":
            overrides.append((re.compile(LLM_FFN_EXPS_REGEX), HOST))
        elif w == "--n-cpu-moe":
            for il in range(int(value)):
                overrides.append((re.compile(rf"blk\.{il}{LLM_FFN_EXPS_REGEX}"), HOST))
        elif w == "-ot":
            for item in value.split(","):  # llama.cpp splits the value on commas
                pattern, _, buft = item.partition("=")
                overrides.append((re.compile(pattern), names[buft]))
        elif w == "-ngl":
            ngl = value
    n_all = model.spec.n_layer_all
    assert ngl == ("all" if p.ngl > n_all else str(p.ngl)), p.flags
    out = {}
    for t in model.tensors:
        hit = next((d for pat, d in overrides if pat.search(t.name)), None)
        if t.layer is None:
            assert hit is None, (t.name, p.flags)  # embedding, head: never overridden
            continue
        out[t.name] = p.layer_device[t.layer] if hit is None else hit
    return out


MODELS = (
    "gpt-oss-120b",
    "qwen3.6-35b-a3b",
    "qwen3-30b-a3b",
    "llama-3.1-8b",
    "gpt-oss-20b",
    "deepseek-v2-lite",
    "glm-4.5-air",
)
MACHINES = ("rtx-5090", "rtx-4090", "rtx-3060-12gb", "rtx-5080", "2xrtx-3090")


@cache
def _model(name: str) -> Model:
    return load_model(name, "Q4_K_M").model


@cache
def _system(name: str) -> System:
    return resolve_system(SystemSpec(machine=name))


offloads = st.one_of(
    st.just(Offload(auto=True)),
    st.just(Offload(cpu_moe=True)),
    st.builds(lambda n: Offload(n_cpu_moe=n), st.integers(1, 40)),
    st.builds(lambda n: Offload(gpu_layers=n), st.integers(0, 50)),
    st.just(Offload()),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(MODELS),
    st.sampled_from(MACHINES),
    offloads,
    st.sampled_from([None, 4096, 32768]),
)
def test_printed_overrides_select_exactly_the_tensors_placed_elsewhere(name, machine, o, ctx):
    model, system = _model(name), _system(machine)
    try:
        p = plan(model, system, o, ctx=ctx).placement
    except InputError:  # expert flags on a dense model: refused, nothing printed
        return
    llama = llama_devices(p, model, system)
    for t in model.tensors:
        if t.layer is not None and t.role is not Role.MTP:  # MTP blocks: not loaded
            assert llama[t.name] == p.tensor_device(t), (t.name, p.flags)
    assert not any("(" in n and ".." in n for n in p.notes)
    assert all(n not in p.flags for n in p.notes)  # the words stand outside the command


def test_gpt_oss_120b_on_a_5090_names_its_blocks_as_a_regex_can():
    p = plan(_model("gpt-oss-120b"), _system("rtx-5090"), Offload(auto=True), ctx=None).placement
    assert r"blk\.(1[89]|2[0-9]|3[0-5])\.ffn_.*_exps=CPU" in p.flags
    assert p.flags.count("-c ") == 1
    assert "experts of blocks 18-35 in RAM" in p.note


PASTED = [
    ["budget", "gpt-oss-120b", "-m", "rtx-5090", "--gpu-layers", "auto"],
    ["budget", "qwen3.6-35b-a3b", "-m", "rtx-4090", "--n-cpu-moe", "12", "--ctx", "32k"],
    ["decode", "gpt-oss-120b", "-m", "rtx-5090", "--gpu-layers", "auto"],
    ["prefill", "gpt-oss-120b", "-m", "2xrtx-3090", "--gpu-layers", "auto", "-p", "4096"],
    ["compare", "gpt-oss-120b", "-m", "rtx-5090,rtx-4090", "--gpu-layers", "auto"],
    ["budget", "llama-3.1-70b", "-m", "rtx-4090", "--gpu-layers", "40"],
]


@pytest.mark.parametrize("argv", PASTED, ids=lambda a: " ".join(a[:2] + a[3:4]))
def test_every_printed_llama_cpp_line_is_whole_at_60_columns(argv, capsys, monkeypatch):
    """At 60 columns the flags are printed on one line, not folded by the view: what follows
    `llama.cpp` splits as a shell splits it, and is the placement --json gives."""
    monkeypatch.setenv("COLUMNS", "60")
    assert main(argv) in (0, 1)
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "llama.cpp " in ln and " -ngl " in f" {ln} "]
    assert lines, out
    assert main([*argv, "--json"]) in (0, 1)
    doc = capsys.readouterr().out
    for ln in lines:
        words = shlex.split(ln.split("llama.cpp ", 1)[1])
        assert "-ngl" in words
        flags = [w for w in words if w.startswith("-") and not w[1:].isdigit()]
        assert len(flags) == len(set(flags)), ln
        for i, w in enumerate(words):
            if w == "-ot":
                for item in words[i + 1].split(","):
                    re.compile(item.partition("=")[0])
                    assert item.partition("=")[2], ln
        assert shlex.join(words).replace("'", "") in doc.replace("\\\\", "\\").replace("'", "")
