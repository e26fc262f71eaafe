"""Fuzzing the GGUF reader: every input yields a Header or a TokenwalkError, quickly and in
bounded memory; hostile strings in every string field reach the screen as inert text.
Deterministic (fixed seeds, derandomized hypothesis) so CI failures reproduce;
`benchmarks/fuzz.py --cases N` runs the same mutators for longer."""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest
from gguf.constants import GGUFValueType as VT
from gguf_bytes import GGUF, array, kv, scalar, string, tensor
from gguf_mutate import MUTATORS, check, corpus, fields, hostile_strings, mutate
from hostile import RENDER_COMMANDS, render_check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SLOW_S = 2.0
_SETTINGS = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def seeded() -> list:
    return corpus()


def test_fields_walk_the_real_fixtures(seeded: list) -> None:
    for _name, data, fs in seeded:
        assert fs[-1].kind == "end" and fs[-1].offset <= len(data)
        assert check(data).parsed


@pytest.mark.parametrize("mutator", sorted(MUTATORS))
def test_each_mutator(mutator: str, seeded: list) -> None:
    rng = random.Random(mutator)
    for i in range(150):
        name, data, fs = seeded[i % len(seeded)]
        case = MUTATORS[mutator](rng, data, fs)
        out = check(case, size_known=i % 4 != 0)
        assert out.ok, f"{name} {mutator} #{i}: {out.error}"
        assert out.elapsed_s < SLOW_S


def test_mixed_mutations(seeded: list) -> None:
    rng = random.Random(6)
    parsed = refused = 0
    for i in range(1200):
        what, case = mutate(rng, seeded)
        out = check(case, size_known=i % 3 != 0)
        assert out.ok, f"case {i} ({what}): {out.error}"
        assert out.elapsed_s < SLOW_S, f"case {i} ({what}) took {out.elapsed_s:.2f} s"
        parsed += out.parsed
        refused += not out.parsed
    assert parsed > 50 and refused > 500  # the mutators reach both outcomes


def test_hostile_strings_render_safely(seeded: list) -> None:
    """Hostile text in string values, array items and tensor names, sometimes with a second
    mutation, through the commands that show a model: the terminal sees no markup and no
    control character, and refusals are one line."""
    rng = random.Random(9)
    shown = refused = 0
    for i in range(400):
        name, data, fs = seeded[i % len(seeded)]
        case = hostile_strings(rng, data, fs)
        if i % 5 == 4:
            case = MUTATORS[rng.choice(sorted(MUTATORS))](rng, case, fields(data))
        command = RENDER_COMMANDS[i // len(seeded) % len(RENDER_COMMANDS)]
        out = render_check(case, command)
        assert out.ok, f"{name} case {i} ({' '.join(command)}): {out.error}"
        assert out.elapsed_s < SLOW_S
        shown += out.code != 2
        refused += out.code == 2
    assert shown > 200 and refused > 20  # both the views and the error line are exercised


def test_memory_stays_bounded(seeded: list) -> None:
    rng = random.Random(200)
    tracemalloc.start()
    try:
        for _ in range(150):
            _what, case = mutate(rng, seeded)
            assert check(case).ok
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20


# -- hypothesis: headers built from parts, most of them lies ---------------------------------

_KEYS = st.sampled_from(
    [
        "general.architecture",
        "general.alignment",
        "general.name",
        "llama.block_count",
        "llama.embedding_length",
        "llama.attention.head_count",
        "llama.attention.head_count_kv",
        "llama.feed_forward_length",
        "llama.context_length",
        "tokenizer.ggml.tokens",
        "gemma3.block_count",
        "qwen35moe.expert_count",
    ]
) | st.binary(max_size=12)
_U64 = st.integers(0, (1 << 64) - 1)
_SMALL = st.integers(0, 40)
_SCALARS = [VT.UINT8, VT.INT8, VT.UINT16, VT.INT16, VT.UINT32, VT.INT32, VT.UINT64, VT.INT64]
_RANGES = {
    VT.UINT8: (0, 255),
    VT.INT8: (-128, 127),
    VT.UINT16: (0, 65535),
    VT.INT16: (-32768, 32767),
    VT.UINT32: (0, 2**32 - 1),
    VT.INT32: (-(2**31), 2**31 - 1),
    VT.UINT64: (0, 2**64 - 1),
    VT.INT64: (-(2**63), 2**63 - 1),
}


@st.composite
def _value(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 6))
    if kind <= 2:
        vt = draw(st.sampled_from(_SCALARS))
        lo, hi = _RANGES[vt]
        return scalar(vt, draw(st.integers(lo, hi) | st.sampled_from([lo, hi, 0, 1])))
    if kind == 3:
        return string(draw(st.binary(max_size=20)))
    if kind == 4:
        vt = draw(st.sampled_from(_SCALARS))
        lo, hi = _RANGES[vt]
        items = draw(st.lists(st.integers(lo, hi), max_size=50))
        count = draw(st.none() | st.just(len(items) + 1) | _U64)
        return array(vt, items, count)
    if kind == 5:
        items = draw(st.lists(st.binary(max_size=8), max_size=20))
        return array(VT.STRING, items, draw(st.none() | _U64))
    return struct.pack("<I", draw(st.integers(0, 2**32 - 1))) + draw(st.binary(max_size=24))


@st.composite
def _tensor(draw: st.DrawFn) -> bytes:
    shape = draw(st.lists(st.integers(0, 1 << 16) | _U64 | st.just(256), max_size=5))
    return tensor(
        draw(st.text(max_size=70) | st.binary(max_size=70)),
        shape,
        draw(st.integers(0, 45) | st.integers(0, 2**32 - 1)),
        draw(st.sampled_from([0, 32, 64, 4096]) | _U64),
        n_dims=draw(st.none() | st.integers(0, 8) | st.integers(0, 2**32 - 1)),
    )


@st.composite
def _header(draw: st.DrawFn) -> bytes:
    kvs = draw(st.lists(st.tuples(_KEYS, _value()), max_size=8))
    g = GGUF(
        kvs=[kv(k, v) for k, v in kvs],
        tensors=draw(st.lists(_tensor(), max_size=4)),
        version=draw(st.sampled_from([3, 3, 3, 2, 1, 4, 0])),
        n_kv=draw(st.none() | st.none() | _SMALL | _U64),
        n_tensors=draw(st.none() | st.none() | _SMALL | _U64),
        pad_to=draw(st.sampled_from([32, None])),
        data=draw(st.binary(max_size=64)),
    )
    data = g.build()
    cut = draw(st.none() | st.integers(0, len(data)))
    return data if cut is None else data[:cut]


@settings(_SETTINGS, max_examples=400)
@given(_header(), st.booleans())
def test_hypothesis_structured_headers(data: bytes, size_known: bool) -> None:
    out = check(data, size_known=size_known)
    assert out.ok, out.error
    assert out.elapsed_s < SLOW_S


@settings(_SETTINGS, max_examples=300)
@given(st.binary(max_size=200), st.sampled_from([b"", b"GGUF\x03\0\0\0", b"GGUF\x02\0\0\0"]))
def test_hypothesis_raw_bytes(tail: bytes, head: bytes) -> None:
    out = check(head + tail)
    assert out.ok, out.error


@settings(_SETTINGS, max_examples=300)
@given(st.data())
def test_hypothesis_mutations_of_real_headers(data: st.DataObject) -> None:
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    what, case = mutate(rng, _CORPUS)
    out = check(case, size_known=data.draw(st.booleans()))
    assert out.ok, f"{what} (seed {seed}): {out.error}"


_CORPUS = corpus()


def test_fields_of_a_built_header() -> None:
    g = GGUF(kvs=[kv("a", array(VT.STRING, ["x", "yz"]))], tensors=[tensor("t", [8, 2])])
    kinds = [f.kind for f in fields(g.build())]
    head = ["version", "count", "count", "len", "vtype", "vtype", "count", "len", "len"]
    assert kinds == [*head, "len", "ndims", "dim", "dim", "ttype", "toff", "end"]
