"""Cards in another box, reached over llama.cpp's RPC backend (`rpc:NAME` in --machine):
placement as a local layer split, the network's terms per pass against a hand computation from
the research notes (llamacpp-offload.md 3.4), the upload at load, and the refusals."""

from __future__ import annotations

import pytest

from tokenwalk.costs.offload import (
    HOST,
    RPC_GRAPH_RECOMPUTE_BYTES,
    rpc_graph_bytes,
    rpc_terms,
)
from tokenwalk.costs.split import (
    _memory,
    plan,
    split_budget_report,
    split_decode_report,
    split_pass_time,
    split_prefill_report,
)
from tokenwalk.errors import InputError
from tokenwalk.model.resolve import load_model
from tokenwalk.system import ASSUMED_RPC_LATENCY_MS, Offload, SystemSpec, resolve_system


@pytest.fixture(scope="module")
def qwen36():
    return load_model("qwen3.6-35b-a3b", "Q4_K_M").model


def system(machine: str, **kw):
    return resolve_system(SystemSpec(machine=machine, **kw))


def rpc(machine: str = "rtx-4090+rpc:rtx-3090", **kw):
    return system(machine, rpc_link_gbs=kw.pop("rpc_link_gbs", 1.25), **kw)


# -- the system ------------------------------------------------------------------------------


def test_rpc_cards_come_first_as_llama_cpp_lists_them():
    s = rpc("rtx-4090+rpc:rtx-3090")
    assert [d.slug for d in s.devices] == ["rpc:rtx-3090", "rtx-4090"]
    assert s.remote == (True, False)
    assert s.slug == "rpc:rtx-3090+rtx-4090"
    # the card's rates are its own: only the name says where it is
    assert s.devices[0].bandwidth_gbs == system("rtx-3090").devices[0].bandwidth_gbs


@pytest.mark.parametrize("machine", ["2xrpc:rtx-3090+rtx-4090", "rtx-4090+rpc:2xrtx-3090"])
def test_a_count_of_remote_cards_reads_either_way(machine):
    s = rpc(machine)
    assert [d.slug for d in s.devices] == ["rpc:rtx-3090", "rpc:rtx-3090", "rtx-4090"]


def test_the_link_to_the_host_is_the_local_cards():
    # an RTX 3090 is PCIe 4.0; alone in the box an RTX 5090 is on PCIe 5.0
    s = rpc("rtx-5090+rpc:rtx-3090")
    assert s.link_gbs == pytest.approx(system("rtx-5090").link_gbs)


def test_the_round_trip_is_assumed_and_said_so_unless_given():
    s = rpc()
    assert s.rpc_latency_s == pytest.approx(ASSUMED_RPC_LATENCY_MS / 1e3)
    assert s.rpc_latency_assumed and "assumed" in s.rpc
    given = rpc(rpc_latency_ms=2.0)
    assert given.rpc_latency_s == pytest.approx(2e-3)
    assert not given.rpc_latency_assumed and "assumed" not in given.rpc


@pytest.mark.parametrize(
    ("machine", "kw", "words"),
    [
        ("rtx-4090+rpc:rtx-3090", {}, "--rpc-link-gbs"),
        ("apple-m4-max+rpc:rtx-3090", {"rpc_link_gbs": 1.25}, "shares its memory"),
        ("rtx-4090+rpc:apple-m4-max", {"rpc_link_gbs": 1.25}, "shares its memory"),
        ("rtx-4090", {"rpc_link_gbs": 1.25}, "rpc:NAME"),
        ("apple-m4-max", {"rpc_latency_ms": 1.0}, "rpc:NAME"),
        ("rtx-4090+rpc:", {"rpc_link_gbs": 1.25}, "needs a card"),
        ("rpc:rpc:rtx-3090", {"rpc_link_gbs": 1.25}, "once"),
        ("rtx-4090+rpc:rtx-3090", {"rpc_link_gbs": 0.0}, "--rpc-link-gbs"),
        ("rtx-4090+rpc:rtx-3090", {"rpc_link_gbs": 1.0, "rpc_latency_ms": -1}, "latency"),
    ],
)
def test_rpc_is_refused_where_it_makes_no_sense(machine, kw, words):
    with pytest.raises(InputError, match=words):
        system(machine, **kw)


def test_tensor_split_does_not_reach_rpc_cards(qwen36):
    with pytest.raises(InputError, match="26610"):
        plan(qwen36, rpc(), Offload(split_mode="tensor"), ctx=4096)


# -- placement and memory --------------------------------------------------------------------


@pytest.mark.parametrize(
    "offload", [Offload(), Offload(gpu_layers=30), Offload(n_cpu_moe=10), Offload(auto=True)]
)
def test_placement_equals_a_local_layer_split_of_the_same_cards(qwen36, offload):
    """Remote devices take their share by free memory as local ones do (research 3.4)."""
    remote, local = rpc(), system("rtx-3090+rtx-4090")
    a = plan(qwen36, remote, offload, ctx=16384)
    b = plan(qwen36, local, offload, ctx=16384)
    assert a.placement == b.placement
    ma, mb = _memory(a, "f16", 1, 512), _memory(b, "f16", 1, 512)
    for x, y in zip(ma, mb, strict=True):
        assert (x.weights_bytes, x.kv_bytes, x.buffers_bytes, x.layers) == (
            y.weights_bytes,
            y.kv_bytes,
            y.buffers_bytes,
            y.layers,
        )
    assert [m.remote for m in ma] == [True, False, False]  # rpc:rtx-3090, rtx-4090, host


def test_budget_reports_the_remote_card_and_the_upload(qwen36):
    r = split_budget_report([qwen36], rpc(), Offload(), ctx=16384)
    names = [d.device for d in r.devices]
    assert names == ["rpc:rtx-3090", "rtx-4090", "pc-9950x-64gb"]
    assert r.fits and r.devices[0].remote and r.devices[0].layers > 0
    assert "RPC 1.25 GB/s (--rpc-link-gbs)" in r.host and "assumed" in r.host
    assert "cross it once at load" in r.host


# -- time --------------------------------------------------------------------------------------


def test_a_decode_step_against_a_hand_computation(qwen36):
    """One remote split (the first 21 blocks on rpc:rtx-3090), one token at 4,096 cached:

    inputs  = hidden 2048 x 4 + position 4 + KQ mask pad256(4097) x 4 = 8,192 + 4 + 17,408
    graph   = GRAPH_RECOMPUTE, 4 bytes (a decode step runs the same graph again)
    outputs = hidden 2048 x 4 = 8,192
    time    = 33,800 B / 1.25 GB/s + 1 round trip x 0.5 ms = 27.04 us + 500 us
    """
    assert (qwen36.spec.n_embd, qwen36.spec.n_layer_all) == (2048, 41)
    setup = plan(qwen36, rpc(), Offload(), ctx=4096)
    t = rpc_terms(qwen36, setup.system, setup.placement, 1, 4096)
    assert t.splits == 1
    assert t.input_bytes == 8192 + 4 + 4352 * 4
    assert t.graph_bytes == RPC_GRAPH_RECOMPUTE_BYTES == 4
    assert t.output_bytes == 8192
    assert t.transfer_s == pytest.approx(33_800 / 1.25e9)
    assert t.time_s == pytest.approx(33_800 / 1.25e9 + 0.5e-3)
    # the step is the local split's plus exactly those terms
    local = plan(qwen36, system("rtx-3090+rtx-4090"), Offload(), ctx=4096)
    a = split_decode_report(setup, ctx=4096)
    b = split_decode_report(local, ctx=4096)
    assert a.ms_per_token - b.ms_per_token == pytest.approx(t.time_s * 1e3, rel=1e-6)
    assert a.split is not None and a.split.rpc == t


def test_the_serialized_graph_matches_the_measured_message():
    """#15405: graph_compute of 1,080 nodes and 1,400 tensors sent 423,040 B; the request
    adds its 12-byte header (device, n_nodes, n_tensors)."""
    assert rpc_graph_bytes(1080, 1400) == 423_040 + 12


def test_a_prompt_sends_the_graph_of_every_micro_batch(qwen36):
    setup = plan(qwen36, rpc(), Offload(), ctx=4096)
    r = split_prefill_report(setup, prompt=2048, ubatch=512)
    t = r.split.rpc
    assert t is not None and t.splits == 4  # four micro-batches, one remote split each
    chunk = rpc_terms(qwen36, setup.system, setup.placement, 512, 0, n_logits=0)
    assert chunk.graph_bytes > 100_000  # GRAPH_COMPUTE: the graph changes as the cache grows
    assert chunk.input_bytes >= 2048 * 512 * 4  # the hidden state of 512 tokens at least
    network = [p for p in r.split.parts if p.device == "network"]
    assert len(network) == 1 and network[0].time_s == pytest.approx(t.time_s)


def test_a_remote_head_sends_the_logits_back(qwen36):
    s = rpc("2xrpc:rtx-3090")
    setup = plan(qwen36, s, Offload(), ctx=4096)
    assert setup.placement.output_device == 1 and all(s.remote)
    t = rpc_terms(qwen36, s, setup.placement, 1, 4096)
    # the two cards are two servers: the hidden state comes back between them
    assert t.splits == 2
    assert t.output_bytes == 2048 * 4 + qwen36.spec.n_vocab * 4


def test_experts_in_ram_make_a_split_per_block(qwen36):
    """--cpu-moe: a remote block's experts run on the host, so the hidden state comes back
    and goes out again around each of them."""
    setup = plan(qwen36, rpc(), Offload(cpu_moe=True), ctx=4096)
    remote = [il for il, d in enumerate(setup.placement.layer_device) if d == 0]
    assert HOST not in setup.placement.layer_device[: len(remote)]
    t = split_pass_time(setup, 1, 4096).rpc
    assert t is not None and t.splits == len(remote) + 1


def test_the_upload_is_the_remote_weights_over_the_network(qwen36):
    setup = plan(qwen36, rpc(rpc_link_gbs=0.125), Offload(), ctx=4096)
    t = rpc_terms(qwen36, setup.system, setup.placement, 1, 4096)
    remote = _memory(setup, "f16", 1, 512)[0]
    assert remote.remote
    assert t.upload_bytes == remote.weights_bytes
    assert t.upload_s == pytest.approx(remote.weights_bytes / 0.125e9)


def test_a_slower_network_costs_more_and_local_splits_pay_nothing(qwen36):
    fast = plan(qwen36, rpc(rpc_link_gbs=3.125), Offload(), ctx=4096)
    slow = plan(qwen36, rpc(rpc_link_gbs=0.125), Offload(), ctx=4096)
    assert split_pass_time(slow, 512, 0).time_s > split_pass_time(fast, 512, 0).time_s
    local = plan(qwen36, system("rtx-3090+rtx-4090"), Offload(), ctx=4096)
    assert split_pass_time(local, 1, 4096).rpc is None


def test_a_lone_remote_card_still_pays_the_network(qwen36):
    """The whole model on one card in another box is not one pool: the host embeds each token
    and sends it over, and the logits come back."""
    s = rpc("rpc:rtx-3090", rpc_link_gbs=0.125)
    setup = plan(qwen36, s, Offload(), ctx=4096)
    assert not setup.one_card
    r = split_decode_report(setup, ctx=4096)
    assert r.split.rpc is not None and r.split.rpc.splits == 1
    assert r.split.rpc.output_bytes == qwen36.spec.n_vocab * 4


def test_the_upload_is_what_budget_puts_on_the_remote_card():
    """A partial block (--fit on a remote card) uploads its parts where they are: the load's
    upload equals the weights `budget` shows on the rpc: card."""
    from tokenwalk.costs.offload import device_memory
    from tokenwalk.costs.split import system_bytes

    model = load_model("qwen3-30b-a3b", "Q8_0").model
    sysm = resolve_system(SystemSpec(machine="rpc:rtx-4090", rpc_link_gbs=1.25))
    setup = plan(model, sysm, Offload(auto=True), ctx=4096)
    assert setup.placement.partial  # the case where layer-level and tensor-level sums part
    rows = device_memory(model, sysm, setup.placement, system_bytes=system_bytes(sysm))
    rpc = split_prefill_report(setup, prompt=512).split.rpc
    assert rpc.upload_bytes == sum(r.weights_bytes for r in rows if r.remote)
