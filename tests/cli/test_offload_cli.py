"""The system options on every command: one declaration, cards joined, hosts, placement flags,
per-device figures in --json, and the refusals."""

from __future__ import annotations

import json

import pytest

from tokenwalk.cli import main
from tokenwalk.costs.split import split_text

COMMANDS = ("budget", "decode", "prefill", "trace", "spec")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_command_shows_the_system_options_once(capsys):
    for cmd in COMMANDS:
        code, out, _ = run(capsys, cmd, "--help")
        assert code == 0
        assert out.count("System: cards, host, placement") == 1, cmd
        for flag in ("--host", "--gpu-layers", "--cpu-moe", "--n-cpu-moe", "--link-gbs"):
            assert flag in out, (cmd, flag)


def test_machine_options_are_declared_once():
    from pathlib import Path

    import tokenwalk.cli as cli

    root = Path(cli.__file__).parent
    for name in ("time_cmd.py", "plan_cmd.py"):
        text = (root / name).read_text()
        for opt in ("BandwidthOpt", "MemoryOpt", "GpuLimitOpt", "SystemGbOpt", "MachineOpt"):
            assert opt not in text, (name, opt)


def test_budget_on_a_16gb_card_exits_1_and_reports_every_device(capsys):
    code, out, _ = run(
        capsys, "budget", "qwen3.6-35b-a3b", "-m", "rtx-5080", "--gpu-layers", "all", "--json"
    )
    assert code == 1
    r = json.loads(out)
    assert not r["fits"]
    roles = [d["role"] for d in r["devices"]]
    assert roles == ["gpu", "host"]
    assert any("--cpu-moe fits" in h for h in r["hints"])
    code, out, _ = run(capsys, "budget", "qwen3.6-35b-a3b", "-m", "rtx-5080", "--cpu-moe")
    assert code == 0
    assert "CPU/GPU" in out and "pc-9950x-64gb" in out


def test_decode_json_carries_the_parts(capsys):
    code, out, _ = run(capsys, "decode", "qwen3.6-35b-a3b", "-m", "rtx-5080", "--cpu-moe", "--json")
    assert code == 0
    r = json.loads(out)
    roles = {p["role"] for p in r["split"]["parts"]}
    assert {"gpu", "host"} <= roles
    assert r["split"]["split"].endswith("CPU/GPU")
    assert r["fits"] is True


@pytest.mark.parametrize("flags", [["--cpu-moe"], ["--gpu-layers", "30"], []])
def test_cpu_gpu_means_the_weights_held_in_every_command(capsys, flags):
    # one meaning: the share of the weights in RAM and on the card, as budget and `ollama ps`
    # say; the share of a step's reads is gpu_share, a number of its own
    argv = ["qwen3.6-35b-a3b", "-m", "rtx-5080", *flags, "--ctx", "4096", "--json"]
    dec = json.loads(run(capsys, "decode", *argv)[1])
    bud = json.loads(run(capsys, "budget", *argv)[1])
    assert dec["split"]["split"] == bud["split"]
    assert dec["split"]["split"] != split_text(dec["split"]["gpu_share"])


def test_cards_join_with_plus_and_count(capsys):
    code, out, _ = run(capsys, "decode", "qwen3-32b", "-m", "2xrtx-3090", "--json")
    assert code == 0
    assert json.loads(out)["machine"] == "2xrtx-3090"
    for written in ("2x-rtx-3090", "2x rtx-3090", "2*rtx-3090", "2X-RTX-3090"):
        code, out, _ = run(capsys, "budget", "qwen3-32b", "-m", written, "--json")
        assert code == 0, written
        devices = [d["device"] for d in json.loads(out)["devices"]]
        assert devices == ["rtx-3090", "rtx-3090", "pc-9950x-64gb"], written
    code, out, err = run(capsys, "budget", "qwen3-32b", "-m", "2x-")
    assert code == 2 and not out and "a count needs a card after it" in err
    code, out, _ = run(capsys, "budget", "qwen3-32b", "-m", "rtx-3090+rtx-3060", "--json")
    devices = [d["device"] for d in json.loads(out)["devices"]]
    assert devices == ["rtx-3090", "rtx-3060-12gb", "pc-9950x-64gb"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("-m", "rtx-3090,,rtx-4090"), "empty item"),  # a comma lists machines (a sweep)
        (("-m", "m3-max", "--cpu-moe"), "--host-tflops"),  # no rate for its CPU cores
        (("-m", "epyc-genoa", "--cpu-moe"), "CPU alone"),
        (("-m", "rtx-5080", "--host", "rtx-4090"), "not a CPU"),
        (("-m", "rtx-5080", "--gpu-layers", "lots"), "--gpu-layers"),
        (("-m", "rtx-5080", "--cpu-moe", "--n-cpu-moe", "3"), "not both"),
        (("-m", "rtx-5080", "--split-mode", "row"), "--split-mode"),
        (("-m", "rtx-5080+rpc:rtx-3090"), "--rpc-link-gbs"),
        (("-m", "m3-max+rpc:rtx-3090", "--rpc-link-gbs", "1.25"), "shares its memory"),
        (("-m", "rtx-5080", "--rpc-link-gbs", "1.25"), "rpc:NAME"),
        (("-m", "rtx-5080+rpc:rtx-3090", "--rpc-link-gbs", "1", "-sm", "tensor"), "#26610"),
    ],
)
def test_refusals_are_one_line(capsys, argv, words):
    code, out, err = run(capsys, "decode", "qwen3.6-35b-a3b", *argv)
    assert code == 2 and not out
    assert err.startswith("tokenwalk: error:") and words in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("model", "argv", "words"),
    [  # llama.cpp's llm_arch_supports_sm_tensor, and docs/multi-gpu.md on a quantized KV cache
        ("kimi-k2", (), "deepseek2 models with --split-mode tensor"),
        ("granite-4.0-h-small", (), "granitehybrid models with --split-mode tensor"),
        ("qwen3-8b", ("-t", "q8_0"), "f16, bf16 or f32 KV cache, not q8_0"),
    ],
)
def test_tensor_split_is_refused_where_llama_cpp_refuses_it(capsys, model, argv, words):
    for cmd in COMMANDS:
        extra = ("--prompt", "100") if cmd in ("prefill", "trace") else ()
        extra += ("--draft", "qwen3-0.6b") if cmd == "spec" else ()
        code, out, err = run(capsys, cmd, model, "-m", "2xrtx-4090", "-sm", "tensor", *argv, *extra)
        assert code == 2 and not out, (cmd, err)
        assert words in err and err.count("\n") == 1, (cmd, err)
    code, _, _ = run(capsys, "decode", "qwen3-8b", "-m", "2xrtx-4090", "-sm", "tensor")
    assert code == 0


def test_dense_model_refuses_cpu_moe(capsys):
    code, _, err = run(capsys, "decode", "qwen3-32b", "-m", "rtx-5080", "--cpu-moe")
    assert code == 2 and "no routed experts" in err


def test_trace_and_spec_take_the_system(capsys):
    code, out, _ = run(
        capsys,
        "trace",
        "qwen3.6-35b-a3b",
        "-m",
        "rtx-5080",
        "--cpu-moe",
        "--prompt",
        "2048",
        "-n",
        "64",
        "--json",
    )
    assert code == 0
    assert json.loads(out)["machine"] == "rtx-5080"
    code, out, _ = run(
        capsys, "spec", "qwen3.6-35b-a3b", "--mtp", "-m", "rtx-5080", "--cpu-moe", "--json"
    )
    r = json.loads(out)
    assert r["budget"]["devices"]


@pytest.mark.parametrize(
    ("flags", "row"),
    [
        (["-m", "rtx-5080", "--gpu-layers", "32"], "`--gpu-layers 32`"),
        (["-m", "rtx-5080", "--cpu-moe"], "`--cpu-moe`"),
        (["-m", "rtx-5080", "--gpu-layers", "auto"], "`--gpu-layers auto`"),
        (["-m", "rtx-5080+rtx-5060-ti-16gb"], "`rtx-5080+rtx-5060-ti-16gb`"),
    ],
)
def test_the_side_by_side_table_of_docs_offload_is_current(capsys, flags, row):
    """docs/offload.md sums up its four decode outputs in a table written by hand."""
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "offload.md").read_text(encoding="utf-8")
    line = next(x for x in page.splitlines() if x.startswith(f"| {row}"))
    shown = float(line.split("|")[4].split()[0])
    code, out, _ = run(capsys, "decode", "qwen3.6-35b-a3b", *flags, "--ctx", "4096", "--json")
    assert code == 0
    assert json.loads(out)["tok_s"] == pytest.approx(shown, rel=0.01)


@pytest.mark.parametrize("row", [0, 1, 2])
def test_the_rpc_table_of_docs_offload_is_current(capsys, row):
    """docs/offload.md sums up a second card in the same box and over RPC in a table written
    by hand: each row's decode and prefill are what the commands say."""
    import shlex
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "offload.md").read_text(encoding="utf-8")
    head = page.index("| the RTX 5060 Ti | `--machine` |")
    line = page[head:].splitlines()[2 + row]
    cells = [c.strip() for c in line.split("|")[1:-1]]
    flags = ["-m", *shlex.split(cells[1].strip("`"))]
    decode, prefill = (float(c.split()[0].replace(",", "")) for c in cells[2:4])
    code, out, _ = run(capsys, "decode", "qwen3.6-35b-a3b", *flags, "--ctx", "4096", "--json")
    assert code == 0 and json.loads(out)["tok_s"] == pytest.approx(decode, rel=0.01)
    code, out, _ = run(capsys, "prefill", "qwen3.6-35b-a3b", *flags, "--prompt", "4096", "--json")
    assert code == 0 and json.loads(out)["tok_s"] == pytest.approx(prefill, rel=0.01)


def test_a_dense_draft_beside_an_moe_target_takes_cpu_moe(capsys):
    code, out, _ = run(
        capsys, "budget", "qwen3.6-35b-a3b", "qwen3-0.6b", "-m", "rtx-5080", "--cpu-moe", "--json"
    )
    assert code == 0
    host = json.loads(out)["devices"][-1]
    assert host["role"] == "host" and host["expert_layers"] == 40


def test_a_card_over_rpc_in_every_command(capsys):
    rpc = ("-m", "rtx-4090+rpc:rtx-3090", "--rpc-link-gbs", "1.25")
    for cmd in COMMANDS:
        code, out, _ = run(capsys, cmd, "--help")
        assert "--rpc-link-gbs" in out and out.count("--rpc-latency-ms") == 1, cmd
    code, out, _ = run(capsys, "budget", "qwen3.6-35b-a3b", *rpc, "--json")
    assert code == 0
    r = json.loads(out)
    assert [(d["device"], d["remote"]) for d in r["devices"]] == [
        ("rpc:rtx-3090", True),
        ("rtx-4090", False),
        ("pc-9950x-64gb", False),
    ]
    code, out, _ = run(capsys, "decode", "qwen3.6-35b-a3b", *rpc, "--ctx", "4096", "--json")
    t = json.loads(out)["split"]["rpc"]
    assert t["cards"] == ["rpc:rtx-3090"] and t["splits"] == 1 and t["latency_assumed"]
    code, out, _ = run(capsys, "decode", "qwen3.6-35b-a3b", *rpc, "--ctx", "4096")
    words = " ".join(out.split())  # the view wraps where its columns fall
    assert "0.5 ms a round trip (assumed" in words and "RPC at load" in words
    code, out, _ = run(
        capsys, "trace", "qwen3.6-35b-a3b", *rpc, "--prompt", "1000", "--output", "20"
    )
    assert code == 0 and "upload to the rpc: cards" not in out
    code, out, _ = run(
        capsys, "trace", "qwen3.6-35b-a3b", *rpc, "--prompt", "1000", "--cold", "--json"
    )
    r = json.loads(out)
    up = [p for p in r["phases"] if p["name"] == "upload to the rpc: cards"]
    assert len(up) == 1
    disk = [p for p in r["phases"] if p["name"] == "load from disk"][0]
    assert r["load_s"] == pytest.approx(disk["duration_s"] + up[0]["duration_s"])


def test_a_conversation_on_a_split_model_is_traced_call_by_call(capsys):
    argv = ["trace", "qwen3-0.6b", "-m", "rtx-4090", "--chat", "docs/examples/clinical-chat.json"]
    code, out, _ = run(capsys, *argv, "--gpu-layers", "10", "--json")
    assert code == 0
    split = json.loads(out)
    code, out, _ = run(capsys, *argv, "--json")
    whole = json.loads(out)
    assert len(split["calls"]) == len(whole["calls"]) == 3
    assert split["busy_s"] > whole["busy_s"]  # 19 of 29 layers on the CPU
    assert split["energy"]["host_w"] > whole["energy"]["host_w"]  # the host computes too


def test_two_cards_that_hold_everything_leave_the_host_idle(capsys):
    """The host's full power counts only when it computes: not for a model whole on the cards,
    one card or two."""
    code, out, _ = run(capsys, "decode", "qwen3-0.6b", "-m", "2xrtx-3090", "--json")
    assert code == 0
    e = json.loads(out)["energy"]
    assert e["host_w"] == pytest.approx(0.25 * 170) and "computes" not in e["power_from"]
    code, out, _ = run(
        capsys, "decode", "qwen3-0.6b", "-m", "rtx-3090", "--gpu-layers", "10", "--json"
    )
    assert json.loads(out)["energy"]["host_w"] == pytest.approx(170)


def test_the_host_cpus_efficiencies_are_shown_where_it_computes(capsys):
    base = ("qwen3.6-35b-a3b", "--machine", "rtx-5080", "--json")
    # decode with the experts in RAM: the CPU multiplies them, at the dense rate
    _, out, _ = run(capsys, "decode", *base, "--cpu-moe")
    host = json.loads(out)["split"]["host_fit"]
    assert host["eff_experts"] == 1.0 and "cpu" in host["source"]
    # prefill with op offload: the host's weights are multiplied on the card
    _, out, _ = run(capsys, "prefill", *base, "--cpu-moe", "--prompt", "2048")
    assert json.loads(out)["split"]["host_fit"] is None
    # everything on the CPU: its efficiencies, not only the card's
    _, out, _ = run(
        capsys, "prefill", *base[:-1], "-ngl", "0", "--no-op-offload", "--prompt", "2048"
    )
    assert "its CPU at " in out and "amd-cpu" in out
    assert "routed expert's product at" not in out  # the CPU runs them at the dense rate
    _, out, _ = run(capsys, "prefill", *base[:-1], "--cpu-moe", "--prompt", "2048")
    assert "routed expert's product at" in out  # copied to the card, its kernels


def _published_rows() -> list[tuple[str, float]]:
    """(command, tokenwalk's figure) of each row of docs/offload.md's "Published runs" table."""
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "offload.md").read_text(encoding="utf-8")
    section = page.split("## Published runs", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 6 and cells[2].startswith("`tokenwalk "):
            rows.append((cells[2].strip("`"), float(cells[4].replace(",", ""))))
    return rows


def test_the_published_runs_table_of_docs_offload_is_current(capsys):
    rows = _published_rows()
    assert len(rows) >= 20
    for command, shown in rows:
        code, out, err = run(capsys, *command.split()[1:], "--json")
        assert code == 0, (command, err)
        got = json.loads(out)["tok_s"]
        assert got == pytest.approx(shown, rel=0.006, abs=0.06), (command, got)


def test_placement_on_a_unified_machine_runs_the_rest_on_its_cpu(capsys):
    """--n-cpu-moe on a Mac: the experts of the first layers on its own CPU cores (reading the
    same memory), the rest on Metal; -ngl all places nothing and answers as one pool."""
    base = ("decode", "gpt-oss-20b", "-q", "MXFP4", "-m", "apple-m4", "--memory", "16")
    code, out, _ = run(capsys, *base, "--n-cpu-moe", "12", "--json")
    assert code == 0
    r = json.loads(out)
    parts = {p["role"]: p for p in r["split"]["parts"]}
    assert parts["host"]["device"] == "apple-m4-cpu" and parts["host"]["how"] == "on the CPU"
    assert parts["gpu"]["device"] == "apple-m4"
    assert "one memory" in r["split"]["link"] and "CPU cores of apple-m4" in r["split"]["host"]
    _, alone, _ = run(capsys, *base, "--json")
    _, all_on_gpu, _ = run(capsys, *base, "-ngl", "99", "--json")
    assert r["tok_s"] < json.loads(alone)["tok_s"]  # 4 P-cores are slower than the GPU
    assert json.loads(all_on_gpu)["tok_s"] == pytest.approx(json.loads(alone)["tok_s"])
    code, out, _ = run(capsys, "budget", *base[1:], "--n-cpu-moe", "12", "--json")
    r = json.loads(out)
    assert [(d["device"], d["shared"]) for d in r["devices"]] == [
        ("apple-m4", False),
        ("apple-m4-cpu", True),
    ]


def test_a_unified_machine_placing_tensors_counts_its_power_once(capsys):
    """The chip's power figure covers its CPU cores: no host's power is added."""
    code, out, _ = run(
        capsys,
        "decode",
        "qwen3-0.6b",
        "-m",
        "ryzen-ai-max-395",
        "-ngl",
        "10",
        "--host-tflops",
        "5",
        "--json",
    )
    assert code == 0
    energy = json.loads(out)["energy"]
    assert energy["power_w"] == 55 and energy["host_w"] == 0
    assert energy["power_from"] == "ryzen-ai-max-395"


def test_a_layer_split_reads_no_faster_than_one_card(capsys):
    # two 3090s in a layer split work one after the other: each reads its layers' weights, KV
    # and recurrent state in turn, so the ceiling is no higher than one card's (the state of
    # Qwen3.6's DeltaNet layers, 132 MB a step, was left out: 353.6 tok/s against 336.9)
    argv = ["decode", "qwen3.6-35b-a3b", "--ctx", "32k", "--json"]
    two = json.loads(run(capsys, *argv, "-m", "2xrtx-3090")[1])
    one = json.loads(run(capsys, *argv, "-m", "rtx-3090")[1])
    assert two["split"]["placement"] == one["split"]["placement"] == "-ngl all"
    assert two["ceiling_tok_s"] <= one["ceiling_tok_s"] * 1.001
