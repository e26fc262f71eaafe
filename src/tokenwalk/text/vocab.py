"""The vocabulary a GGUF header carries, and the tokenizer llama.cpp builds from it.

A GGUF file holds its tokenizer in ``tokenizer.ggml.*``: the token strings, their types
(1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte), scores (SentencePiece) or
merges (BPE), the special ids, ``add_bos_token`` and ``pre``, the name of the pre-tokenizer that
splits text into words before the merges run. `Vocab` gathers these as llama.cpp reads them
(``src/llama-vocab.cpp``, ``llama_vocab::impl::load``), defaults included; `build_tokenizer`
turns a BPE `Vocab` into a Hugging Face `tokenizers.Tokenizer` that gives llama.cpp's tokens for
plain text:

- ``gpt2`` (byte-level BPE): llama.cpp's regular expressions for the ``pre`` value (`PRE_REGEXES`,
  copied from ``llm_tokenizer_bpe``), each splitting every piece of the one before and keeping
  both matches and gaps, then the GPT-2 byte map and the merges.
- ``llama`` (SentencePiece BPE, the Llama 2 / Gemma family): tokenized by tokenwalk itself, as
  llama.cpp's ``llm_tokenizer_spm_session`` does (`tokenwalk.text.tokenizer.spm_tokenize`);
  `build_tokenizer` gives None.

Special tokens (control, user-defined and unknown tokens, with the types llama.cpp corrects by
name: `Vocab.attrs`) are cut out of the text before the rest is split, as llama.cpp's
``tokenizer_st_partition`` does (`tokenwalk.text.tokenizer.partition`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tokenwalk.errors import TokenwalkError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "Vocab",
    "TokenizerError",
    "PRE_REGEXES",
    "PRE_ALIASES",
    "SUPPORTED_MODELS",
    "build_tokenizer",
    "need_text_extra",
    "ATTR_UNKNOWN",
    "ATTR_CONTROL",
    "ATTR_USER_DEFINED",
    "ATTR_LSTRIP",
    "ATTR_RSTRIP",
]

SUPPORTED_MODELS = ("gpt2", "llama", "gemma4")
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = range(
    1, 7
)
# llama.cpp's token attributes (llama.h, llama_token_attr), bit flags
ATTR_UNKNOWN, ATTR_UNUSED, ATTR_NORMAL, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_BYTE = (
    1 << k for k in range(6)
)
ATTR_LSTRIP, ATTR_RSTRIP = 1 << 7, 1 << 8
_TYPE_ATTR = {
    TOKEN_NORMAL: ATTR_NORMAL,
    TOKEN_UNKNOWN: ATTR_UNKNOWN,
    TOKEN_CONTROL: ATTR_CONTROL,
    TOKEN_USER_DEFINED: ATTR_USER_DEFINED,
    TOKEN_UNUSED: ATTR_UNUSED,
    TOKEN_BYTE: ATTR_BYTE,
}
_SPECIAL = ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN

# llama.cpp (llama_vocab::impl::load) makes these control tokens whatever their type: the tokens
# that end generation, and the fill-in-the-middle tokens of a role the header leaves unset
_EOG_TOKENS = (
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
)
_FIM_TOKENS = {
    "fim_pre": (
        "<|fim_prefix|>",
        "<fim-prefix>",
        "<fim_prefix>",
        "<｜fim▁begin｜>",
        "<PRE>",
        "▁<PRE>",
        "<|code_prefix|>",
        "<|prefix|>",
    ),
    "fim_suf": (
        "<|fim_suffix|>",
        "<fim-suffix>",
        "<fim_suffix>",
        "<｜fim▁hole｜>",
        "<SUF>",
        "▁<SUF>",
        "<|code_suffix|>",
        "<|suffix|>",
    ),
    "fim_mid": (
        "<|fim_middle|>",
        "<fim-middle>",
        "<fim_middle>",
        "<｜fim▁end｜>",
        "<MID>",
        "▁<MID>",
        "<|code_middle|>",
        "<|middle|>",
    ),
    "fim_pad": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "fim_rep": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "fim_sep": ("<|file_sep|>",),
}


class TokenizerError(TokenwalkError):
    """A vocabulary tokenwalk cannot turn into a tokenizer, or the text extra is missing."""


def need_text_extra(what: str) -> TokenizerError:
    """The error of a command that needs `tokenizers` / `jinja2` when they are not installed."""
    return TokenizerError(
        f"{what} needs the optional packages tokenizers and jinja2: pip install tokenizers "
        "jinja2 (from a tokenwalk checkout: pip install '.[text]')"
    )


# -- llama.cpp's pre-tokenizers (llm_tokenizer_bpe), by family ---------------------------------
_CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
_LLAMA3 = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
_QWEN2 = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_DEEPSEEK3 = (
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_GPT4O = (
    r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+" + _CONTRACTIONS + "?"
    r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*" + _CONTRACTIONS + "?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_TEKKEN = (
    r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+"
    r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_BLOOM = r" ?[^(\s|.,!?…。，、।۔،)]+"
# llama.cpp's letter ranges for deepseek-llm, as code points: some of these characters change
# under Unicode normalisation, which would reverse a range if they were written out
_DEEPSEEK_LLM_LETTERS = (
    "A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293"
    "\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c"
    "\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5"
    "\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
    "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59"
    "\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc"
    "\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
    "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
    "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e"
    "\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a"
    "\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2"
    "\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943"
)
_CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"

# pre-tokenizer family -> llama.cpp's expressions, applied in turn
PRE_REGEXES: dict[str, tuple[str, ...]] = {
    "default": (
        r"[\p{P}\$\+<=>\^~\|]+",
        _GPT2,
        r"\p{N}+",
        "[0-9][0-9][0-9]",
    ),
    "llama3": (_LLAMA3,),
    "jais2": (
        _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
        r"|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)"
        r"|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}",
    ),
    "deepseek-llm": (
        "[\r\n]",
        r"\s?[" + _DEEPSEEK_LLM_LETTERS + "]+",
        "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
        r"\s+$",
        _CJK,
        r"\p{N}+",
    ),
    "deepseek3": (r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", _DEEPSEEK3),
    "deepseek-coder": ("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", _CJK, r"\p{N}"),
    "falcon": (
        r"[\p{P}\$\+<=>\^~\|`]+",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
        "[0-9][0-9][0-9]",
    ),
    "starcoder": (r"\p{N}", _GPT2),
    "gpt2": (_GPT2,),
    "qwen2": (_QWEN2,),
    "qwen35": (
        _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
        r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    "bloom": (_BLOOM,),
    "viking": (_BLOOM, r"\p{N}"),
    "tekken": (_TEKKEN,),
    "gpt4o": (_GPT4O,),
    "seed-coder": (
        _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+"
        r"|\s+(?!\S)|\s+",
    ),
    "bailingmoe": (
        r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
        r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",
    ),
    "ufakzeka": (
        r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    "minicpm5": (
        r"\p{N}{1,3}",
        _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*"
        r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    "laguna": (r"[^\n]+|[\n]+", _QWEN2),
}

# llama.cpp's `.pre` names -> (family, ignore_merges, add_bos by default)
PRE_ALIASES: dict[str, tuple[str, bool, bool]] = {
    "default": ("default", False, False),
    **{
        name: ("llama3", True, True)
        for name in (
            "llama3",
            "llama-v3",
            "llama-bpe",
            "falcon3",
            "falcon-h1",
            "pixtral",
            "midm-2.0",
            "lfm2",
            "jina-v5-nano",
        )
    },
    "dbrx": ("llama3", False, False),
    "smaug-bpe": ("llama3", False, False),
    "chatglm-bpe": ("llama3", False, False),
    "glm4": ("llama3", True, False),
    "glm5": ("llama3", True, False),
    "jais-2": ("jais2", False, False),
    "deepseek-llm": ("deepseek-llm", False, False),
    "deepseek-coder": ("deepseek-coder", False, False),
    "deepseek-v3": ("deepseek3", False, False),
    "hunyuan-dense": ("deepseek3", False, False),
    "joyai-llm": ("deepseek3", False, False),
    "hy_v4": ("deepseek3", False, False),
    "falcon": ("falcon", False, False),
    **{
        name: ("starcoder", False, False)
        for name in (
            "starcoder",
            "refact",
            "command-r",
            "smollm",
            "codeshell",
            "exaone",
            "minerva-7b",
            "mellum2",
        )
    },
    **{
        name: ("gpt2", False, False)
        for name in (
            "gpt-2",
            "phi-2",
            "jina-es",
            "jina-de",
            "gigachat",
            "jina-v2-es",
            "jina-v2-de",
            "a.x-4.0",
            "mellum",
            "modern-bert",
            "jina-v1-en",
            "jina-v2-code",
            "roberta-bpe",
            "mpt",
            "olmo",
            "jais",
            "trillion",
            "granite-docling",
            "exaone4",
        )
    },
    **{
        name: ("qwen2", False, False)
        for name in (
            "qwen2",
            "deepseek-r1-qwen",
            "kormo",
            "f2llmv2",
            "megrez",
            "stablelm2",
            "hunyuan",
            "solar-open",
        )
    },
    "qwen35": ("qwen35", False, False),
    "poro-chat": ("bloom", False, False),
    "bloom": ("bloom", False, False),
    "gpt3-finnish": ("bloom", False, False),
    "viking": ("viking", False, False),
    "tekken": ("tekken", True, True),
    **{
        name: ("gpt4o", False, False)
        for name in ("gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2")
    },
    "seed-coder": ("seed-coder", False, False),
    "bailingmoe": ("bailingmoe", False, False),
    "bailingmoe2": ("bailingmoe", False, False),
    "llada-moe": ("bailingmoe", False, False),
    "grok-2": ("qwen2", False, False),
    "ufakzeka": ("ufakzeka", False, False),
    "minicpm5": ("minicpm5", True, False),
    "laguna": ("laguna", False, False),
}


def _int(md: Mapping[str, Any], key: str) -> int | None:
    v = md.get(key)
    return v if type(v) is int and v >= 0 else None


def _bool(md: Mapping[str, Any], key: str) -> bool | None:
    v = md.get(key)
    return v if isinstance(v, bool) else None


def _list(md: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> list[Any] | None:
    v = md.get(key)
    if not isinstance(v, list):
        return None
    if v and not isinstance(v[0], kind):
        raise TokenizerError(f"'{key}' holds {type(v[0]).__name__} items, not {kind}")
    return v


@dataclass(frozen=True)
class Vocab:
    """What ``tokenizer.ggml.*`` says, with llama.cpp's defaults filled in."""

    model: str
    pre: str | None
    tokens: list[str]
    token_type: list[int] | None
    scores: list[float] | None
    merges: list[str] | None
    bos_id: int | None
    eos_id: int | None
    unk_id: int | None
    add_bos: bool
    add_eos: bool
    add_space_prefix: bool
    chat_template: str | None
    name: str = ""  # general.name, which llama.cpp reads to set Phi-3's strip attributes
    preset: frozenset[str] = field(default=frozenset())  # fim_* roles the header gives ids

    @classmethod
    def from_metadata(cls, md: Mapping[str, Any]) -> Vocab:
        """Read the vocabulary from header metadata read with ``keep_tokens=True``."""
        model = md.get("tokenizer.ggml.model")
        if not isinstance(model, str):
            raise TokenizerError("the header has no tokenizer (tokenizer.ggml.model is missing)")
        tokens = _list(md, "tokenizer.ggml.tokens", str)
        if not tokens:
            raise TokenizerError(
                "the header's token list was not read (or is empty): the vocabulary is needed "
                "to count tokens"
            )
        pre = md.get("tokenizer.ggml.pre")
        spm = model == "llama"
        family = PRE_ALIASES.get(pre) if isinstance(pre, str) else None
        add_bos = _bool(md, "tokenizer.ggml.add_bos_token")
        if add_bos is None:
            add_bos = spm or bool(family and family[2])
        if model == "gemma4":  # llama.cpp forces it for Gemma 4 (its PR 21500)
            add_bos = True
        add_eos = _bool(md, "tokenizer.ggml.add_eos_token") or False
        prefix = _bool(md, "tokenizer.ggml.add_space_prefix")
        template = md.get("tokenizer.chat_template")
        return cls(
            model=model,
            pre=pre if isinstance(pre, str) else None,
            tokens=tokens,
            token_type=_list(md, "tokenizer.ggml.token_type", int),
            scores=_list(md, "tokenizer.ggml.scores", (float, int)),
            merges=_list(md, "tokenizer.ggml.merges", str),
            bos_id=_int(md, "tokenizer.ggml.bos_token_id")
            if "tokenizer.ggml.bos_token_id" in md
            else (1 if spm else None),
            eos_id=_int(md, "tokenizer.ggml.eos_token_id")
            if "tokenizer.ggml.eos_token_id" in md
            else (2 if spm else None),
            unk_id=_int(md, "tokenizer.ggml.unknown_token_id")
            if "tokenizer.ggml.unknown_token_id" in md
            else (0 if spm else None),
            add_bos=add_bos,
            add_eos=add_eos,
            add_space_prefix=spm if prefix is None else (prefix and spm),
            chat_template=template if isinstance(template, str) else None,
            name=md["general.name"] if isinstance(md.get("general.name"), str) else "",
            preset=frozenset(k for k in _FIM_TOKENS if f"tokenizer.ggml.{k}_token_id" in md),
        )

    @cached_property
    def attrs(self) -> list[int]:
        """Each token's attributes (``ATTR_*`` flags) as llama.cpp sets them: from
        ``token_type``, then corrected by the token's text as ``llama_vocab::impl::load`` does
        (end-of-generation and fill-in-the-middle tokens made control tokens, gpt-oss's channel
        tokens user-defined, Phi-3's special tokens stripping the spaces after them, ...)."""
        types = self.token_type or [TOKEN_NORMAL] * len(self.tokens)
        attrs = [_TYPE_ATTR.get(t, 0) for t in types]
        ids: dict[str, int] = {}
        for i, t in enumerate(self.tokens):
            ids[t] = i

        def mark(text: str, flag: int, on: bool = True) -> None:
            i = ids.get(text)
            if i is not None:
                attrs[i] = attrs[i] | flag if on else attrs[i] & ~flag

        for role, names in _FIM_TOKENS.items():
            if role not in self.preset:
                for text in names:
                    mark(text, ATTR_CONTROL)
        for text in _EOG_TOKENS:
            mark(text, ATTR_CONTROL)
        for text in ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"):
            if text in ids:
                attrs[ids[text]] = ATTR_USER_DEFINED
        has = ids.__contains__
        calls = has("<|call|>") or has("<|calls|>")
        if has("<|end|>") and calls and (has("<|return|>") or has("<|flush|>")):
            attrs[ids["<|end|>"]] = ATTR_USER_DEFINED  # o200k_harmony, solar-open: not an end
        if has("</s>") and (has("<|tool_response>") or self.token(self.eos_id) == "<|plamo:eos|>"):
            attrs[ids["</s>"]] = ATTR_NORMAL  # Gemma 4's and PLaMo's </s> is text
        name = self.name.lower()
        if self.pre in ("jina-v2-de", "jina-v2-es", "jina-v2-code"):
            mark("<mask>", ATTR_LSTRIP)
        elif "phi-3" in name or "phi3" in name:
            for i, a in enumerate(attrs):
                if a & _SPECIAL:
                    attrs[i] |= ATTR_RSTRIP
            mark("</s>", ATTR_RSTRIP)
            for text in ("<unk>", "<s>", "<|endoftext|>"):
                mark(text, ATTR_RSTRIP, on=False)
        elif "modern-bert" in name:
            mark("[MASK]", ATTR_LSTRIP)
        return attrs

    @cached_property
    def special_tokens(self) -> list[tuple[str, int, int]]:
        """(text, id, attributes) of the tokens llama.cpp cuts out of a text before splitting
        it (control, user-defined and unknown), longest first in UTF-8 bytes."""
        found = [
            (t, i, a)
            for i, (t, a) in enumerate(zip(self.tokens, self.attrs, strict=True))
            if a & _SPECIAL and t
        ]
        return sorted(found, key=lambda x: -len(x[0].encode("utf-8")))

    def token(self, token_id: int | None) -> str:
        """The text of a token id, or "" when there is none."""
        if token_id is None or not 0 <= token_id < len(self.tokens):
            return ""
        return self.tokens[token_id]

    @property
    def pre_family(self) -> str | None:
        """llama.cpp's pre-tokenizer family of `pre` (None: one tokenwalk does not know)."""
        if self.model != "gpt2":
            return None
        if self.pre is None:
            return "default"  # llama.cpp warns and uses its default expressions
        entry = PRE_ALIASES.get(self.pre)
        return entry[0] if entry else None

    @property
    def exact(self) -> bool:
        """True when `build_tokenizer` reproduces llama.cpp's split for this vocabulary."""
        return self.model in ("llama", "gemma4") or (
            self.model == "gpt2" and self.pre_family is not None
        )


def _import_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError:
        raise need_text_extra("counting tokens with the model's tokenizer") from None
    return tokenizers


def _bpe_merges(merges: list[str], ids: Mapping[str, int]) -> list[tuple[str, str]]:
    """The pairs of ``tokenizer.ggml.merges`` ('a b') whose halves and result are all tokens
    of the vocabulary; others are skipped."""
    pairs = []
    for m in merges:
        a, sep, b = m.partition(" ")
        if sep and a in ids and b in ids and a + b in ids:
            pairs.append((a, b))
    return pairs


def build_tokenizer(vocab: Vocab) -> Tokenizer | None:
    """A `tokenizers.Tokenizer` that splits plain text as llama.cpp does with a byte-level or
    Gemma 4 BPE `vocab` (see the module docstring), special tokens left to
    `tokenwalk.text.tokenizer.partition`; None for SentencePiece, which
    `tokenwalk.text.tokenizer` tokenizes itself. A BPE vocabulary whose `pre` tokenwalk does not
    know is split with the GPT-2 expression (`Vocab.exact` is then False); other tokenizer
    models are refused."""
    tk = _import_tokenizers()
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers

    types = vocab.token_type or [TOKEN_NORMAL] * len(vocab.tokens)
    if len(types) != len(vocab.tokens):
        raise TokenizerError(
            f"tokenizer.ggml.token_type has {len(types):,} entries for {len(vocab.tokens):,} tokens"
        )
    ids: dict[str, int] = {}
    for i, t in enumerate(vocab.tokens):
        ids.setdefault(t, i)
    if vocab.model == "gpt2":
        if vocab.merges is None:
            raise TokenizerError("a BPE vocabulary without tokenizer.ggml.merges")
        merges = _bpe_merges(vocab.merges, ids)
        ignore = bool(PRE_ALIASES.get(vocab.pre or "", ("", False, False))[1])
        tok = tk.Tokenizer(models.BPE(vocab=ids, merges=merges, ignore_merges=ignore))
        family = vocab.pre_family or "gpt2"
        splits = [
            pre_tokenizers.Split(Regex(rx), behavior="isolated", invert=False)
            for rx in PRE_REGEXES[family]
        ]
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [*splits, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
        )
        tok.decoder = decoders.ByteLevel()
    elif vocab.model == "gemma4":
        # BPE on raw UTF-8 with spaces as U+2581, split only at newlines, bytes as <0xNN>
        # (llama.cpp's LLAMA_VOCAB_PRE_TYPE_GEMMA4)
        if vocab.merges is None:
            raise TokenizerError("a Gemma 4 vocabulary without tokenizer.ggml.merges")
        merges = _bpe_merges(vocab.merges, ids)
        tok = tk.Tokenizer(models.BPE(vocab=ids, merges=merges, byte_fallback=True))
        tok.normalizer = normalizers.Replace(" ", "▁")
        tok.pre_tokenizer = pre_tokenizers.Split(
            Regex(r"[^\n]+|[\n]+"), behavior="isolated", invert=False
        )
        tok.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
        )
    elif vocab.model == "llama":
        if vocab.scores is None or len(vocab.scores) != len(vocab.tokens):
            raise TokenizerError("a SentencePiece vocabulary needs one score per token")
        return None  # tokenwalk.text.tokenizer.spm_tokenize
    else:
        raise TokenizerError(
            f"tokenizer model '{vocab.model}' is not supported (tokenwalk reads "
            f"{', '.join(SUPPORTED_MODELS)}: byte-level BPE, SentencePiece BPE, Gemma 4's BPE)"
        )
    return tok
