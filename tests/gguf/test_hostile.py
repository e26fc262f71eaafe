"""Named hostile and broken GGUF headers: each is refused with the exact error class and a
message a user can act on, or read, following what llama.cpp's gguf.cpp does with it."""

from __future__ import annotations

import io
import struct

import pytest
from gguf.constants import GGUFValueType as VT
from gguf_bytes import GGUF, array, kv, minimal, parse, scalar, string, tensor

from tokenwalk.errors import GGUFError, TokenwalkError, TruncatedError, UnsupportedError
from tokenwalk.gguf.reader import Limits, read_header

U64 = (1 << 64) - 1


def refused(data: bytes, cls: type[TokenwalkError], *fragments: str, size: bool = True) -> str:
    """Assert that `data` raises exactly `cls`, with each fragment in the message."""
    with pytest.raises(TokenwalkError) as info:
        parse(data, size=size)
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    msg = str(info.value)
    for f in fragments:
        assert f in msg, msg
    return msg


# -- what the file is -----------------------------------------------------------------------


def test_valid_minimal_header_reads() -> None:
    h = parse(minimal().build())
    assert [t.name for t in h.tensors] == ["a.weight", "b.weight"]
    assert h.data_offset % 32 == 0


def test_wrong_magic() -> None:
    refused(b"GGMX" + bytes(60), GGUFError, "not a GGUF file", "GGMX")


def test_old_ggml_magic() -> None:
    refused(b"ggjt" + bytes(60), GGUFError, "old GGML file from before GGUF")


def test_empty_file() -> None:
    refused(b"", GGUFError, "not a GGUF file", "the file is empty")


def test_only_magic() -> None:
    refused(b"GGUF", TruncatedError, "the file ends at byte 4 inside the version")


def test_safetensors_file() -> None:
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    data = struct.pack("<Q", len(header)) + header + bytes(4)
    refused(data, GGUFError, "not a GGUF file", "safetensors")


def test_json_file() -> None:
    refused(b'{"model_type": "llama"}', GGUFError, "JSON", "config.json")


# -- versions -------------------------------------------------------------------------------


def test_version_1_refused() -> None:
    refused(minimal(version=1).build(), UnsupportedError, "version 1", "convert the model again")


def test_version_2_read_as_version_3() -> None:
    h = parse(minimal(version=2).build())
    assert h.version == 2 and len(h.tensors) == 2


@pytest.mark.parametrize("version", [4, 5, 0xFFFF, U64 >> 32])
def test_future_versions_refused(version: int) -> None:
    refused(minimal(version=version).build(), UnsupportedError, f"version {version}", "2 and 3")


def test_version_0_refused() -> None:
    refused(minimal(version=0).build(), UnsupportedError, "version 0", "damaged")


def test_big_endian_file_refused() -> None:
    refused(minimal(version=3 << 24).build(), UnsupportedError, "big-endian")


# -- counts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [U64, U64 - 1, 1 << 63, (1 << 63) - 1])
def test_tensor_count_near_2_64(n: int) -> None:
    refused(minimal(n_tensors=n).build(), GGUFError, f"{n:,} tensors", "limit")


@pytest.mark.parametrize("n", [U64, 1 << 63, 1 << 40])
def test_key_count_near_2_64(n: int) -> None:
    refused(minimal(n_kv=n).build(), GGUFError, f"{n:,} metadata keys", "limit")


def test_more_tensors_than_the_bytes_could_hold() -> None:
    data = minimal(n_tensors=100_000).build()
    refused(data, TruncatedError, "the tensor count announces 100,000 items", "bytes remain")


def test_more_keys_than_the_bytes_could_hold() -> None:
    refused(minimal(n_kv=50_000).build(), TruncatedError, "metadata key count", "bytes remain")


def test_more_tensors_than_the_stream_holds() -> None:
    # without a file size (a stream) the count is only checked as the bytes run out
    refused(minimal(n_tensors=1000).build(), TruncatedError, "the file ends", size=False)


# -- strings and arrays ---------------------------------------------------------------------


def test_key_length_larger_than_the_file() -> None:
    data = GGUF(kvs=[struct.pack("<Q", 60_000) + b"general.name"]).build()
    refused(data, TruncatedError, "metadata key 0", "60,000", "bytes remain")


def test_key_length_huge() -> None:
    data = GGUF(kvs=[struct.pack("<Q", U64) + bytes(16)]).build()
    refused(data, GGUFError, "metadata key 0", f"{U64:,} bytes", "limit")


def test_string_value_longer_than_the_file() -> None:
    bad = struct.pack("<IQ", int(VT.STRING), 1 << 20) + b"hello"
    data = GGUF(kvs=[kv("general.name", bad)]).build()
    refused(data, TruncatedError, "the value of 'general.name'", "bytes remain")


def test_string_value_longer_than_the_limit() -> None:
    bad = struct.pack("<IQ", int(VT.STRING), 1 << 62) + b"hello"
    data = GGUF(kvs=[kv("general.name", bad)]).build()
    refused(data, GGUFError, "the value of 'general.name'", "limit")


def test_array_longer_than_the_file() -> None:
    data = GGUF(kvs=[kv("tokenizer.ggml.scores", array(VT.FLOAT32, [0.0], count=1 << 24))]).build()
    refused(data, TruncatedError, "array 'tokenizer.ggml.scores'", "16,777,216 items")


def test_string_array_longer_than_the_file() -> None:
    data = GGUF(kvs=[kv("tokenizer.ggml.tokens", array(VT.STRING, ["a"], count=1 << 20))]).build()
    refused(data, TruncatedError, "array 'tokenizer.ggml.tokens'", "bytes remain")


def test_array_count_near_2_64() -> None:
    data = GGUF(kvs=[kv("tokenizer.ggml.scores", array(VT.FLOAT32, [], count=U64))]).build()
    refused(data, GGUFError, "array 'tokenizer.ggml.scores'", "limit 1,073,741,824")


def test_string_item_longer_than_the_file() -> None:
    bad = struct.pack("<IIQ", int(VT.ARRAY), int(VT.STRING), 2) + struct.pack("<Q", 1) + b"a"
    bad += struct.pack("<Q", 1 << 20) + b"b"
    data = GGUF(kvs=[kv("tokenizer.ggml.tokens", bad)]).build()
    refused(data, TruncatedError, "item 1 of array 'tokenizer.ggml.tokens'", "bytes remain")
    refused(data, TruncatedError, "the file ends", size=False)


def test_string_item_longer_than_the_limit() -> None:
    bad = struct.pack("<IIQ", int(VT.ARRAY), int(VT.STRING), 1) + struct.pack("<Q", 1 << 40)
    data = GGUF(kvs=[kv("tokenizer.ggml.tokens", bad + bytes(64))]).build()
    refused(data, GGUFError, "item 0 of array 'tokenizer.ggml.tokens'", "limit 67,108,864")


def test_arrays_of_arrays_nested_deeply() -> None:
    nested = struct.pack("<I", int(VT.ARRAY)) + struct.pack("<IQ", int(VT.ARRAY), 1) * 10_000
    data = GGUF(kvs=[kv("general.tags", nested)]).build()
    refused(data, GGUFError, "array 'general.tags'", "holds arrays", "does not allow")


@pytest.mark.parametrize("vtype", [13, 255, 0xFFFFFFFF])
def test_unknown_value_type(vtype: int) -> None:
    data = GGUF(kvs=[kv("general.name", struct.pack("<I", vtype) + bytes(16))]).build()
    refused(data, GGUFError, "'general.name'", f"unknown value type {vtype}", "0 to 12")


def test_unknown_array_item_type() -> None:
    data = GGUF(kvs=[kv("general.tags", struct.pack("<IIQ", int(VT.ARRAY), 99, 1))]).build()
    refused(data, GGUFError, "array 'general.tags'", "unknown item type 99")


def test_empty_key() -> None:
    refused(GGUF(kvs=[kv("", scalar(VT.UINT32, 1))]).build(), GGUFError, "metadata key 0", "empty")


def test_duplicate_keys() -> None:
    data = GGUF(kvs=[kv("general.name", string("a")), kv("general.name", string("b"))]).build()
    refused(data, GGUFError, "'general.name' appears twice")


def test_duplicate_tensor_names() -> None:
    data = minimal(tensors=[tensor("a.weight", [8]), tensor("a.weight", [8], 0, 32)]).build()
    refused(data, GGUFError, "tensor name 'a.weight' appears twice")


# -- invalid UTF-8: llama.cpp never decodes, so the header is read ---------------------------


def test_invalid_utf8_in_a_value_is_read() -> None:
    data = GGUF(kvs=[kv("general.name", string(b"caf\xc3 \xff"))]).build()
    assert parse(data).metadata["general.name"] == "caf\ufffd \ufffd"


def test_invalid_utf8_in_a_key_is_read() -> None:
    data = GGUF(kvs=[kv(b"general.\xfe", scalar(VT.UINT32, 1))]).build()
    assert parse(data).metadata == {"general.\ufffd": 1}


def test_invalid_utf8_keys_differing_only_in_bad_bytes_are_refused() -> None:
    data = GGUF(kvs=[kv(b"k\xfe", scalar(VT.UINT8, 1)), kv(b"k\xff", scalar(VT.UINT8, 2))]).build()
    refused(data, GGUFError, "appears twice")


def test_invalid_utf8_in_a_tensor_name_is_read() -> None:
    h = parse(minimal(tensors=[tensor(b"blk.\x80.weight", [8])]).build())
    assert h.tensors[0].name == "blk.\ufffd.weight"


def test_invalid_utf8_in_tokens_is_read() -> None:
    toks = array(VT.STRING, [b"a", b"\xe2\x82", b"c"])
    data = GGUF(kvs=[kv("tokenizer.ggml.tokens", toks)]).build()
    h = read_header(io.BytesIO(data), file_size=len(data), keep_tokens=True)
    assert h.tokens == ["a", "\ufffd", "c"]


# -- tensor infos ---------------------------------------------------------------------------


def test_tensor_with_zero_dims_is_a_scalar() -> None:
    h = parse(minimal(tensors=[tensor("s", [])]).build())
    assert h.tensors[0].shape == (1,) and h.tensors[0].n_elements == 1


@pytest.mark.parametrize("n_dims", [5, 8, 0xFFFFFFFF])
def test_tensor_with_too_many_dims(n_dims: int) -> None:
    data = minimal(tensors=[tensor("t", [8, 1, 1, 1], n_dims=n_dims)]).build()
    refused(data, GGUFError, "tensor 't'", f"{n_dims:,} dimensions", "at most 4")


def test_tensor_name_too_long() -> None:
    data = minimal(tensors=[tensor("x" * 64, [8])]).build()
    refused(data, GGUFError, "64 bytes", "at most 63")


def test_dimension_product_overflows_64_bits() -> None:
    data = minimal(tensors=[tensor("t", [1 << 32, 1 << 32])]).build()
    refused(data, GGUFError, "tensor 't'", "overflows 64 bits")


def test_negative_dimension() -> None:
    refused(minimal(tensors=[tensor("t", [8, U64])]).build(), GGUFError, "dimension 1 is negative")


def test_byte_size_beyond_2_64() -> None:
    # 2^62 F64 elements: the count fits in int64, the 2^65 bytes do not
    refused(minimal(tensors=[tensor("t", [1 << 62], 28)]).build(), GGUFError, "2^64 bytes")


def test_data_size_sum_beyond_2_64() -> None:
    ts = [tensor("a", [1 << 61], 0, 0), tensor("b", [1 << 61], 0, 1 << 63)]
    refused(minimal(tensors=ts).build(), GGUFError, "beyond 2^64 bytes")


@pytest.mark.parametrize("type_id", [42, 43, 1000, 0xFFFFFFFF])
def test_unknown_ggml_type(type_id: int) -> None:
    data = minimal(tensors=[tensor("t", [256], type_id)]).build()
    refused(data, UnsupportedError, "tensor 't'", f"type id {type_id}", "upgrade tokenwalk")


@pytest.mark.parametrize(("type_id", "name"), [(4, "Q4_2"), (5, "Q4_3"), (31, "Q4_0_4_4")])
def test_removed_ggml_types(type_id: int, name: str) -> None:
    data = minimal(tensors=[tensor("t", [256], type_id)]).build()
    refused(data, UnsupportedError, name, "removed", "convert the model again")


def test_row_not_a_multiple_of_the_block() -> None:
    data = minimal(tensors=[tensor("t", [100, 4], 12)]).build()  # Q4_K, blocks of 256
    refused(data, GGUFError, "Q4_K", "100 elements", "block size 256")


# -- tensor offsets -------------------------------------------------------------------------


def test_tensor_data_beyond_the_file_is_read_as_absent() -> None:
    big = [tensor("a.weight", [4096, 4096], 0, 0), tensor("b.weight", [8], 0, 4096 * 4096 * 4)]
    data = minimal(tensors=big).build()
    h = parse(data)
    assert h.data_present is False
    assert h.tensor_data_bytes == 4096 * 4096 * 4 + 32
    assert h.expected_file_size > len(data)
    assert parse(data + bytes(h.expected_file_size - len(data))).data_present is True


def test_overlapping_tensor_offsets() -> None:
    data = minimal(tensors=[tensor("a", [64], 0, 0), tensor("b", [64], 0, 0)]).build()
    refused(data, GGUFError, "tensor 'b'", "offset 0", "overlaps", "expects 256")


def test_misaligned_tensor_offset() -> None:
    data = minimal(tensors=[tensor("a", [8], 0, 0), tensor("b", [8], 0, 33)]).build()
    refused(data, GGUFError, "tensor 'b'", "not a multiple of the alignment 32")


def test_tensor_offsets_with_a_gap() -> None:
    data = minimal(tensors=[tensor("a", [8], 0, 0), tensor("b", [8], 0, 64)]).build()
    refused(data, GGUFError, "tensor 'b'", "leaves a gap", "expects 32")


def test_tensor_offset_beyond_2_64() -> None:
    data = minimal(tensors=[tensor("a", [8], 0, U64)]).build()
    refused(data, GGUFError, "tensor 'a'", "expects 0")


# -- alignment ------------------------------------------------------------------------------


def _aligned(value: bytes) -> bytes:
    return minimal(kvs=[kv("general.alignment", value)], pad_to=64).build()


def test_alignment_64_is_used() -> None:
    ts = [tensor("a", [8], 0, 0), tensor("b", [8], 0, 64)]
    data = minimal(kvs=[kv("general.alignment", scalar(VT.UINT32, 64))], tensors=ts, pad_to=64)
    h = parse(data.build())
    assert h.alignment == 64 and h.data_offset % 64 == 0


def test_alignment_zero() -> None:
    refused(_aligned(scalar(VT.UINT32, 0)), GGUFError, "general.alignment is 0", "power of two")


def test_alignment_not_a_power_of_two() -> None:
    refused(_aligned(scalar(VT.UINT32, 48)), GGUFError, "general.alignment is 48", "power of two")


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (scalar(VT.INT32, 32), "INT32"),
        (scalar(VT.UINT64, 32), "UINT64"),
        (string("32"), "STRING"),
        (array(VT.UINT32, [32]), "ARRAY"),
        (scalar(VT.BOOL, True), "BOOL"),
    ],
)
def test_alignment_of_the_wrong_type(value: bytes, type_name: str) -> None:
    refused(_aligned(value), GGUFError, "general.alignment must be a UINT32", type_name)


# -- truncation and broken sources ----------------------------------------------------------


@pytest.mark.parametrize("size", [True, False])
def test_every_truncation_of_a_small_header(size: bool) -> None:
    """Cut anywhere inside the header: a TruncatedError; cut in the padding: read, no data."""
    g = minimal(kvs=[kv("general.architecture", string("llama")), kv("t", array(VT.INT8, [1]))])
    full = g.build()
    end = len(GGUF(kvs=g.kvs, tensors=g.tensors, pad_to=None).build())
    for cut in range(4, len(full)):
        if cut < end:
            with pytest.raises(TruncatedError, match="the file ends at byte|bytes remain"):
                parse(full[:cut], size=size)
        else:
            assert len(parse(full[:cut], size=size).tensors) == 2


class _Failing:
    def read(self, n: int) -> bytes:
        raise OSError("connection reset")


class _NotBytes:
    def read(self, n: int) -> object:
        return "GGUF"


def test_source_that_fails() -> None:
    with pytest.raises(GGUFError, match="cannot read at offset 0: connection reset"):
        read_header(_Failing())


def test_source_that_returns_text() -> None:
    with pytest.raises(GGUFError, match="something other than bytes"):
        read_header(_NotBytes())  # type: ignore[arg-type]


def test_limits_are_configurable() -> None:
    data = minimal().build()
    with pytest.raises(GGUFError, match="2 tensors \\(limit 1\\)"):
        parse(data, limits=Limits(max_tensors=1))


def test_64_bit_values_read_whole() -> None:
    """Regression: numpy's 'L' type char is 4 bytes to struct; 64-bit values must read whole."""
    data = GGUF(
        kvs=[
            kv("u", scalar(VT.UINT64, (1 << 40) + 5)),
            kv("i", scalar(VT.INT64, -(1 << 40))),
            kv("a", array(VT.UINT64, [1 << 63, 7])),
            kv("b", array(VT.INT64, [-1, 1 << 33])),
        ]
    ).build()
    md = parse(data).metadata
    assert md == {"u": (1 << 40) + 5, "i": -(1 << 40), "a": [1 << 63, 7], "b": [-1, 1 << 33]}
