"""llama.cpp's tokenize() in small: special tokens cut out, the attributes llama.cpp gives
tokens by name, and its SentencePiece merge loop."""

from __future__ import annotations

from typing import Any

from tokenwalk.text.tokenizer import partition, spm_tokenize
from tokenwalk.text.vocab import (
    ATTR_CONTROL,
    ATTR_LSTRIP,
    ATTR_RSTRIP,
    ATTR_UNKNOWN,
    ATTR_USER_DEFINED,
    Vocab,
)


def _vocab(tokens: list[str], types: list[int], **md: Any) -> Vocab:
    return Vocab.from_metadata(
        {
            "tokenizer.ggml.model": "gpt2",
            "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.merges": [],
            **md,
        }
    )


def test_longer_tokens_are_cut_first_everywhere() -> None:
    special = [("<|im_end|>", 7, ATTR_CONTROL), ("<|im", 5, ATTR_USER_DEFINED)]
    got = partition("a<|im_end|>b<|imc", special, parse_special=True)
    assert got == ["a", 7, "b", 5, "c"]


def test_control_and_unknown_tokens_are_text_unless_parsed() -> None:
    special = [("<unk>", 0, ATTR_UNKNOWN), ("<s>", 1, ATTR_CONTROL), ("<u>", 9, ATTR_USER_DEFINED)]
    assert partition("x<s>y<unk><u>", special, parse_special=False) == ["x<s>y<unk>", 9]
    assert partition("x<s>y<unk><u>", special, parse_special=True) == ["x", 1, "y", 0, 9]


def test_strip_attributes_take_the_spaces_beside_the_token() -> None:
    assert partition(
        "a \t<m>  b", [("<m>", 3, ATTR_CONTROL | ATTR_LSTRIP)], parse_special=True
    ) == [
        "a",
        3,
        "  b",
    ]
    assert partition("a <e>\n b", [("<e>", 4, ATTR_CONTROL | ATTR_RSTRIP)], parse_special=True) == [
        "a ",
        4,
        "b",
    ]
    assert partition(" <e> ", [("<e>", 4, ATTR_CONTROL | ATTR_RSTRIP)], parse_special=True) == [
        " ",
        4,
    ]


def test_attributes_llama_cpp_sets_by_name() -> None:
    tokens = ["a", "<|im_end|>", "<|channel|>", "</s>", "<|tool_response>", "<|fim_prefix|>", "<x>"]
    v = _vocab(tokens, [1, 1, 3, 4, 1, 1, 4])
    attrs = dict(zip(tokens, v.attrs, strict=True))
    assert attrs["<|im_end|>"] & ATTR_CONTROL  # ends generation: a control token
    assert attrs["<|channel|>"] == ATTR_USER_DEFINED  # gpt-oss's, always split out
    assert not attrs["</s>"] & (ATTR_CONTROL | ATTR_USER_DEFINED)  # Gemma 4's </s> is text
    assert attrs["<|fim_prefix|>"] & ATTR_CONTROL
    names = [t for t, _, _ in v.special_tokens]
    assert names == ["<|tool_response>", "<|fim_prefix|>", "<|channel|>", "<|im_end|>", "<x>"]
    preset = _vocab(tokens, [1] * 7, **{"tokenizer.ggml.fim_pre_token_id": 0})
    assert not preset.attrs[tokens.index("<|fim_prefix|>")] & ATTR_CONTROL


def test_phi3_special_tokens_strip_the_space_after_them() -> None:
    tokens = ["<unk>", "<s>", "</s>", "<|end|>", "<|user|>"]
    v = _vocab(tokens, [2, 3, 3, 3, 4], **{"general.name": "Phi3"})
    strip = [bool(a & ATTR_RSTRIP) for a in v.attrs]
    assert strip == [False, False, True, True, True]
    assert not any(a & ATTR_RSTRIP for a in _vocab(tokens, [2, 3, 3, 3, 4]).attrs)


def test_spm_merges_the_best_scoring_pair_leftmost_first() -> None:
    ids = {"a": 0, "b": 1, "ab": 2, "ba": 3, "aba": 4}
    scores = [0.0, 0.0, -1.0, -1.0, -5.0]
    byte_id = {b: 10 + b for b in range(256)}
    # ab and ba score the same: the leftmost pair merges, then ab+a forms aba
    assert spm_tokenize("aba", ids, scores, byte_id) == [4]
    assert spm_tokenize("bab", ids, scores, byte_id) == [3, 1]
    # a character the vocabulary lacks falls back to its UTF-8 bytes
    assert spm_tokenize("aé", ids, scores, byte_id) == [0, 10 + 0xC3, 10 + 0xA9]


def _spm_vocab(tokens: list[str], scores: list[float]) -> Vocab:
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    return Vocab.from_metadata(
        {
            "tokenizer.ggml.model": "llama",
            "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", *byte_tokens, *tokens],
            "tokenizer.ggml.scores": [0.0] * 259 + scores,
            "tokenizer.ggml.token_type": [2, 3, 3] + [6] * 256 + [1] * len(tokens),
            "tokenizer.ggml.add_space_prefix": False,
        }
    )


def test_spm_goes_word_by_word_only_where_no_token_spans_words() -> None:
    """Llama 2's tokens have spaces only in front (or are runs of spaces), so no merge crosses
    the start of a word and each word can be tokenized apart; a vocabulary with a token like
    'a▁' merges across, and the text is then tokenized whole, as llama.cpp does."""
    from tokenwalk.text.tokenizer import LlamaTokenizer

    words = LlamaTokenizer(_spm_vocab(["▁", "a", "▁a", "▁▁"], [-1.0, -1.0, -2.0, -3.0]))
    assert words._by_word
    across = _spm_vocab(["▁", "a", "▁a", "a▁"], [-1.0, -1.0, -2.0, -0.5])
    whole = LlamaTokenizer(across)
    assert not whole._by_word
    first = 259  # the first token after <unk>, <s>, </s> and the 256 bytes
    # ' a a': the best pair is 'a▁' (across the second word's start), then '▁' and 'a' alone
    assert whole.encode(" a a", add_special=False, parse_special=False) == [
        first,
        first + 3,
        first + 1,
    ]
