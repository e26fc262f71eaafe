"""`--fit`'s partial boundary layer (common/fit.cpp, LAYER_FRACTION_UP / _GATE / _ATTN): on one
card, the first block whose experts went to RAM keeps part of its FFN on the GPU when that part
fits with strictly more than the margin free."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokenwalk.costs.offload import (
    FIT_MARGIN_BYTES,
    HOST,
    MIB,
    Partial,
    Placement,
    _is_output,
    _parts,
    device_memory,
    fit_auto,
    place,
)
from tokenwalk.costs.split import plan, split_decode_report, system_bytes
from tokenwalk.model.layers import Ffn
from tokenwalk.model.resolve import load_model
from tokenwalk.system import Offload, SystemSpec, resolve_system

CTX = 4096
FULL = 13  # blocks whose experts stay on the card in the hand-built cases


@pytest.fixture(scope="module")
def qwen3moe():
    return load_model("qwen3-30b-a3b", "F16").model


@pytest.fixture(scope="module")
def rtx4090():
    return resolve_system(SystemSpec(machine="rtx-4090"))


def _moe(model) -> list[int]:
    return [x.index for x in model.layers if x.ffn is Ffn.MOE and not x.mtp]


def _placed(model, part: str | None) -> Placement:
    moe = _moe(model)
    if part is None:  # the boundary block as a plain --fit "MOE" layer: experts in RAM
        return place(model, Offload(auto=True), [1.0], ctx=CTX, experts_host=frozenset(moe[FULL:]))
    return place(
        model,
        Offload(auto=True),
        [1.0],
        ctx=CTX,
        experts_host=frozenset(moe[FULL + 1 :]),
        partial=(Partial(moe[FULL], part, HOST),),
    )


def _rows(model, sysm, p: Placement, sysb: list[int]):
    return device_memory(model, sysm, p, system_bytes=sysb)


def _gpu_used(model, sysm, p: Placement) -> int:
    host = system_bytes(sysm)[-1]
    return int(_rows(model, sysm, p, [0, host])[0].used_bytes)


def _fit_with_free(model, sysm, free: int) -> Placement:
    """fit_auto on the card with exactly `free` bytes it may use."""
    capacity = int(sysm.devices[0].memory_bytes or 0)
    sysb = [capacity - free, system_bytes(sysm)[-1]]
    return fit_auto(
        model,
        sysm,
        ctx=CTX,
        kv_type="f16",
        parallel=1,
        ubatch=512,
        system_bytes=sysb,
        offload=Offload(auto=True),
    )


def test_up_and_gate_of_the_boundary_block_stay_on_the_card_when_exactly_they_fit(
    qwen3moe, rtx4090
):
    gate = _placed(qwen3moe, "gate")
    free = _gpu_used(qwen3moe, rtx4090, gate) + FIT_MARGIN_BYTES + MIB
    p = _fit_with_free(qwen3moe, rtx4090, free)
    b = _moe(qwen3moe)[FULL]
    assert [(x.block, x.part, x.to) for x in p.partial] == [(b, "gate", HOST)]
    assert p.experts_host == frozenset(_moe(qwen3moe)[FULL + 1 :])
    assert ("-ot", f"blk\\.{b}\\.ffn_down.*=CPU") in p.args
    on_gpu = {t.name for t in qwen3moe.tensors if t.layer == b and p.tensor_device(t) == 0}
    assert f"blk.{b}.ffn_up_exps.weight" in on_gpu
    assert f"blk.{b}.ffn_gate_exps.weight" in on_gpu
    assert f"blk.{b}.ffn_down_exps.weight" not in on_gpu


def test_up_alone_when_gate_would_eat_into_the_margin(qwen3moe, rtx4090):
    gate = _gpu_used(qwen3moe, rtx4090, _placed(qwen3moe, "gate"))
    # free exactly the margin after up + gate: fit.cpp asks for strictly more, so UP it is
    p = _fit_with_free(qwen3moe, rtx4090, gate + FIT_MARGIN_BYTES)
    (split,) = p.partial
    assert split.part == "up"
    assert ("-ot", f"blk\\.{split.block}\\.ffn_(gate|gate_up|down).*=CPU") in p.args


def test_attention_only_when_up_does_not_fit(qwen3moe, rtx4090):
    moe_layer = _gpu_used(qwen3moe, rtx4090, _placed(qwen3moe, None))
    p = _fit_with_free(qwen3moe, rtx4090, moe_layer + FIT_MARGIN_BYTES + MIB)
    (split,) = p.partial
    assert split.part == "attn"  # the router moves too: less than the MOE layer holds
    b = split.block
    router = f"blk.{b}.ffn_gate_inp.weight"
    assert any(t.name == router and p.tensor_device(t) == HOST for t in qwen3moe.tensors)
    assert ("-ot", f"blk\\.{b}\\.ffn_(gate|up|gate_up|down).*=CPU") in p.args


def test_memory_per_device_is_the_sum_of_the_tensors_placed_there(qwen3moe, rtx4090):
    sysb = system_bytes(rtx4090)
    for part in ("up", "gate", "attn"):
        p = _placed(qwen3moe, part)
        gpu, host = _rows(qwen3moe, rtx4090, p, sysb)
        want = {0: 0, HOST: 0}
        for t in qwen3moe.tensors:
            if t.layer is None:
                want[p.output_device if _is_output(t) else HOST] += t.n_bytes
            else:
                want[p.tensor_device(t)] += t.n_bytes
        assert gpu.weights_bytes == want[0], part
        assert host.weights_bytes == want[HOST], part
        assert host.expert_layers == len(p.experts_host) + 1


def test_the_boundary_blocks_gpu_experts_are_timed_on_the_gpu(qwen3moe, rtx4090):
    p = _placed(qwen3moe, "gate")
    b = p.partial[0].block
    by_dev = {part.device: {t.name for t in part.tensors} for part in _parts(qwen3moe, p, False)}
    assert f"blk.{b}.ffn_up_exps.weight" in by_dev[0]
    assert f"blk.{b}.ffn_down_exps.weight" in by_dev[HOST]
    assert p.expert_device(b) == HOST  # the hidden state crosses to the host and back


def test_fit_on_a_4090_keeps_part_of_one_more_layer_and_decodes_faster(qwen3moe):
    # fit-params README: 20386 MiB usable on the 4090 (19187 used + 1199 free)
    sysm = resolve_system(SystemSpec(machine="rtx-4090", system_gb=4.3935e9 / 2**30))
    setup = plan(qwen3moe, sysm, Offload(auto=True), ctx=None)
    p = setup.placement
    (split,) = p.partial
    assert split.part in ("up", "gate", "attn") and split.to == HOST
    assert min(p.experts_host) == split.block + 1
    whole = place(
        qwen3moe, Offload(), [1.0], ctx=p.ctx, experts_host=frozenset(_moe(qwen3moe)[split.block :])
    )
    rows = device_memory(qwen3moe, sysm, p, system_bytes=system_bytes(sysm))
    assert rows[0].free_bytes > FIT_MARGIN_BYTES
    fast = split_decode_report(setup, ctx=4096)
    slow = split_decode_report(replace(setup, placement=whole), ctx=4096)
    assert fast.tok_s > slow.tok_s


# -- several cards: fit.cpp steps 3 and 4 card by card -----------------------------------------


@pytest.fixture(scope="module")
def gptoss120b():
    return load_model("gpt-oss-120b", "MXFP4").model


def _free_rows(model, sysm, p: Placement):
    return device_memory(model, sysm, p, system_bytes=system_bytes(sysm))


def test_two_cards_fill_front_to_back_and_the_first_overflows_onto_the_second(gptoss120b):
    sysm = resolve_system(SystemSpec(machine="2xrtx-3090"))
    p = plan(gptoss120b, sysm, Offload(auto=True), ctx=4096).placement
    first, second = (p.layer_device.count(d) for d in (0, 1))
    # card 0 takes the first blocks, whole, then one block in part whose rest goes to card 1
    assert p.layer_device[:first] == (0,) * first and set(p.layer_device[first:]) == {1}
    b0 = p.partial[0]
    assert b0.block == first - 1 and b0.to == 1 and b0.part in ("up", "gate", "attn")
    assert not any(il < b0.block for il in p.experts_host)
    # the second card: whole blocks, perhaps one in part to RAM, then the experts of the last
    # blocks in RAM, and the head
    assert p.experts_host and max(p.experts_host) == gptoss120b.spec.n_layer_all - 1
    assert p.output_device == 1
    for split in p.partial[1:]:
        assert split.to == HOST and split.block < min(p.experts_host)
    assert "-ts " in p.flags and "=CUDA1" in p.flags
    rows = _free_rows(gptoss120b, sysm, p)
    assert all(r.free_bytes > FIT_MARGIN_BYTES for r in rows if r.role == "gpu")
    # what card 1 holds of block b0 is counted there, tensor by tensor
    want = {0: 0, 1: 0, HOST: 0}
    for t in gptoss120b.tensors:
        if t.layer is None:
            want[p.output_device if _is_output(t) else HOST] += t.n_bytes
        else:
            want[p.tensor_device(t)] += t.n_bytes
    assert [r.weights_bytes for r in rows] == [want[0], want[1], want[HOST]]


def test_the_first_card_is_full(gptoss120b):
    """The first card holds the most it can: its partial block whole, and one block more,
    would break its margin."""
    sysm = resolve_system(SystemSpec(machine="2xrtx-3090"))
    p = plan(gptoss120b, sysm, Offload(auto=True), ctx=4096).placement
    n0 = p.layer_device.count(0)
    n1 = p.layer_device.count(1) + 1  # and the head
    counts = [n0 + 1, n1 - 1]
    more = place(
        gptoss120b,
        Offload(auto=True),
        [1.0, 1.0],
        ctx=4096,
        experts_host=p.experts_host,
        ngl=p.ngl,
        counts=counts,
    )
    assert _free_rows(gptoss120b, sysm, more)[0].free_bytes < FIT_MARGIN_BYTES


def test_cards_that_hold_everything_need_no_fit():
    small = load_model("qwen3-30b-a3b", "Q4_K_M").model
    sysm = resolve_system(SystemSpec(machine="2xrtx-3090"))
    p = plan(small, sysm, Offload(auto=True), ctx=4096).placement
    assert p.all_on_gpu and not p.partial and not p.experts_host


def test_cards_are_named_as_llama_cpp_names_them():
    from tokenwalk.costs.offload import buft_names

    assert buft_names(resolve_system(SystemSpec(machine="2xrtx-3090"))) == ("CUDA0", "CUDA1")
    assert buft_names(resolve_system(SystemSpec(machine="rtx-3090+rx-7900-xtx"))) == (
        "CUDA0",
        "ROCm0",
    )
    # an rpc: card is listed first (llama.cpp's order) and is no CUDA device of this box
    remote = resolve_system(SystemSpec(machine="rtx-4090+rpc:rtx-3090", rpc_link_gbs=1.25))
    assert buft_names(remote) == ("RPC0", "CUDA0")
