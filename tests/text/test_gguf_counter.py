"""The model's own tokenizer from a real vocabulary: BOS, special tokens, templates, calls."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tokenizers")
pytest.importorskip("jinja2")

from vocabmake import VOCAB_DIR, read_vocab_file  # noqa: E402

from tokenwalk.errors import InputError  # noqa: E402
from tokenwalk.text.prompt import Chat, EstimateCounter, GgufCounter, count_prompt  # noqa: E402
from tokenwalk.text.vocab import TokenizerError, Vocab, build_tokenizer  # noqa: E402

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAMA2 = (
    "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]"
    "{% elif m.role == 'assistant' %} {{ m.content }}{{ eos_token }}"
    "{% else %}<<SYS>>{{ m.content }}<</SYS>>{% endif %}{% endfor %}"
)


@pytest.fixture(scope="module")
def gpt2() -> GgufCounter:
    return GgufCounter(
        Vocab.from_metadata(read_vocab_file(VOCAB_DIR / "ggml-vocab-gpt-2.gguf").metadata)
    )


@pytest.fixture(scope="module")
def spm() -> GgufCounter:
    return GgufCounter(
        Vocab.from_metadata(read_vocab_file(VOCAB_DIR / "ggml-vocab-phi-3.gguf").metadata)
    )


def test_gpt2_words(gpt2: GgufCounter) -> None:
    assert gpt2.encode("Hello world", add_special=True, parse_special=False) == [15496, 995]
    assert gpt2.exact and "byte-level BPE" in gpt2.description


def test_spm_adds_bos_and_space(spm: GgufCounter) -> None:
    assert spm.encode("Hello world", add_special=True, parse_special=False) == [1, 15043, 3186]
    assert spm.encode("Hello world", add_special=False, parse_special=False) == [15043, 3186]


def test_spm_special_tokens_parsed_only_when_asked(spm: GgufCounter) -> None:
    # <|end|> is a control token (parsed only when asked); </s> is user-defined in Phi-3's
    # vocabulary, but llama.cpp makes it a control token (it ends generation). Its special
    # tokens but <s>, <unk> and <|endoftext|> take the spaces after them along (llama.cpp
    # sets that for Phi-3 by name): llama-tokenize -p 'a</s>b <|end|> x' gives these ids.
    with_special = spm.encode("a<|end|>b", add_special=False, parse_special=True)
    as_text = spm.encode("a<|end|>b", add_special=False, parse_special=False)
    assert 32007 in with_special and 32007 not in as_text and len(as_text) > len(with_special)
    assert 2 not in spm.encode("a</s>b", add_special=False, parse_special=False)
    text = "a</s>b <|end|> x"
    assert spm.encode(text, add_special=True, parse_special=True) == [
        1, 263, 2, 289, 29871, 32007, 921
    ]  # fmt: skip
    assert spm.encode(text, add_special=True, parse_special=False) == [
        1, 263, 829, 29879, 29958, 29890, 529, 29989, 355, 29989, 29958, 921
    ]  # fmt: skip


def test_text_count_has_bos_as_template_share(spm: GgufCounter) -> None:
    r = count_prompt(spm, model="m", text="Hello world, how are you?", source="t.txt")
    assert r.template_tokens == 1 and r.prompt_tokens == r.text_tokens + 1
    assert r.n_words == 5 and r.tokens_per_word == pytest.approx(r.prompt_tokens / 5)


def test_template_bos_not_doubled(spm: GgufCounter) -> None:
    counter = GgufCounter(replace(spm.vocab, chat_template=LLAMA2), spm.tokenizer)
    chat = Chat([{"role": "user", "content": "Hi"}])
    rendered = counter.render(chat)
    assert not rendered.startswith("<s>")  # llama.cpp drops it and adds its own
    ids = counter.encode(rendered, add_special=True, parse_special=True)
    assert ids.count(1) == 1 and ids[0] == 1


def test_conversation_reuses_prefix_and_recomputes_after_system_change(spm: GgufCounter) -> None:
    counter = GgufCounter(replace(spm.vocab, chat_template=CHATML), spm.tokenizer)
    chat = Chat(
        [
            {"role": "system", "content": "You are a careful clinical assistant. " * 20},
            {"role": "user", "content": "What is the dose?"},
            {"role": "assistant", "content": "Five milligrams."},
            {"role": "user", "content": "And for children?"},
            {"role": "assistant", "content": "Half of that."},
            {"role": "system", "content": "You are a terse assistant. " * 20},
            {"role": "user", "content": "Summarise."},
        ]
    )
    r = count_prompt(counter, model="m", chat=chat, source="c.json")
    one, two, three = r.calls
    assert one.cached_tokens == 0 and one.output_tokens > 1
    # an appended question: the previous prompt is reused, and the reply the model wrote
    # after it (as the estimate's is; see test_the_reply_is_cached_as_the_estimate_caches_it)
    assert two.cached_tokens >= one.prompt_tokens
    assert two.prompt_tokens - two.cached_tokens < 60  # ChatML markers are text for Phi-3
    # a changed system prompt goes first: all of it is computed again
    assert three.cached_tokens < 20 and three.prompt_tokens > two.prompt_tokens - 40
    assert r.prompt_tokens == three.prompt_tokens and r.template_tokens > 0


def test_unknown_pre_is_marked_inexact(gpt2: GgufCounter) -> None:
    v = replace(gpt2.vocab, pre="brand-new")
    counter = GgufCounter(v)
    assert not counter.exact and "not one tokenwalk knows" in counter.description
    assert counter.encode("Hello world", add_special=False, parse_special=False) == [15496, 995]


def test_unsupported_model_refused(gpt2: GgufCounter) -> None:
    with pytest.raises(TokenizerError, match="'bert' is not supported"):
        build_tokenizer(replace(gpt2.vocab, model="bert"))


def test_missing_vocabulary_is_one_line() -> None:
    with pytest.raises(TokenizerError, match="token list was not read"):
        Vocab.from_metadata({"tokenizer.ggml.model": "gpt2"})


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=200))
def test_gpt2_round_trips_any_text(gpt2: GgufCounter, text: str) -> None:
    ids = gpt2.encode(text, add_special=False, parse_special=False)
    assert len(ids) <= len(text.encode("utf-8"))  # a byte-level BPE never exceeds the bytes
    assert gpt2.tokenizer.decode(ids) == text


CUT_SPM = Path(__file__).parents[1] / "fixtures" / "gemma-3-270m-q4_k_m.header.gguf"


@pytest.mark.parametrize("which", ["spm", "gpt2"])
def test_a_vocabulary_that_cannot_encode_the_text_is_refused(gpt2: GgufCounter, which) -> None:
    """A token list cut short (the fixture keeps 64 of Gemma 3's 262,144 tokens) turns English
    into one unknown token (SentencePiece) or drops the letters it lacks (BPE): refused, not
    counted as a handful of tokens."""
    if which == "spm":
        counter = GgufCounter(Vocab.from_metadata(read_vocab_file(CUT_SPM).metadata))
    else:
        v = gpt2.vocab
        counter = GgufCounter(replace(v, tokens=v.tokens[:64], token_type=None))
    text = "The patient was seen on Monday and again on Friday. " * 2000
    with pytest.raises(InputError, match=r"vocabulary \(64 tokens\) cannot encode this text"):
        count_prompt(counter, model="m", text=text, source="doc.txt")
    chat = Chat([{"role": "user", "content": text}])
    with pytest.raises(InputError, match="cannot encode"):
        count_prompt(counter, model="m", chat=chat, source="c.json")


def test_the_reply_is_cached_as_the_estimate_caches_it(spm: GgufCounter) -> None:
    """Phi-3's own template: the second call finds the first call's prompt and the reply the
    model wrote in the cache, as the estimate does, though the reply alone tokenizes with a
    leading '▁' that it does not have after the template's newline."""
    chat = Chat(
        [
            {"role": "user", "content": "What is the usual adult dose of this medicine?"},
            {"role": "assistant", "content": "Five milligrams twice a day, with food."},
            {"role": "user", "content": "And for children?"},
        ]
    )
    for counter in (spm, EstimateCounter("no tokenizer")):
        one, two = count_prompt(counter, model="m", chat=chat, source="c.json").calls
        assert one.output_tokens > 5
        # output_tokens counts the end-of-turn token, which is sampled but never decoded
        assert two.cached_tokens == one.prompt_tokens + one.output_tokens - 1, counter.name
