"""A prompt given as text: read it, render it with the model's chat template, count its tokens.

Three ways to count, best first:

1. ``gguf``: the vocabulary in the GGUF header, tokenized as llama.cpp does (`text.vocab`) and
   the header's own ``tokenizer.chat_template``, rendered in the sandbox (`text.template`).
2. ``tokenizer.json``: for a catalogue model whose repository's ``tokenizer.json`` (and
   ``tokenizer_config.json`` for the template) can be had through huggingface_hub (the ``hf``
   extra), from its cache or the network.
3. ``estimate``: no tokenizer at all; `CHARS_PER_TOKEN` characters a token, and a template of
   `ESTIMATE_TEMPLATE_TOKENS` tokens a message. The answer says so.

Each call of a conversation is counted as a server sees it: the messages so far rendered with
the generation prompt, tokenized with the special tokens parsed and one BOS where the model
wants it (llama.cpp strips a BOS the template writes and adds its own).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from tokenwalk.errors import InputError, SourceError, TokenwalkError

__all__ = [
    "Chat",
    "Counter",
    "GgufCounter",
    "HubCounter",
    "EstimateCounter",
    "CallCount",
    "TokenCount",
    "read_text",
    "read_chat",
    "count_prompt",
    "calls_of",
    "sent_messages",
    "CHARS_PER_TOKEN",
    "MAX_TEXT_BYTES",
]

CHARS_PER_TOKEN = 4.0  # English prose in BPE vocabularies of 32k-256k tokens: 3.5 to 4.5
ESTIMATE_TEMPLATE_TOKENS = 5  # a role header and an end-of-turn marker, per message
MAX_TEXT_BYTES = 64 << 20  # a prompt of 64 MB is ~16 M tokens, beyond any context
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chat:
    """An OpenAI-style conversation: messages ({role, content, ...}) and optional tools."""

    messages: list[dict[str, Any]]
    tools: list[Any] | None = None


class Counter(Protocol):
    """Something that renders a conversation and turns text into token ids."""

    name: str  # what counted: "gguf", "tokenizer.json" or "estimate"
    description: str  # in words, for the answer
    exact: bool
    has_template: bool

    def encode(self, text: str, *, add_special: bool, parse_special: bool) -> list[int]: ...

    def render(self, chat: Chat, *, add_generation_prompt: bool = True) -> str: ...


# -- reading input --------------------------------------------------------------------------


def _read_bytes(path: str, what: str) -> bytes:
    if path == "-":
        data = sys.stdin.buffer.read(MAX_TEXT_BYTES + 1)
        where = "stdin"
    else:
        p = Path(path)
        where = f"'{path}'"
        if p.is_dir():
            raise SourceError(f"{what} {where} is a directory")
        try:
            with p.open("rb") as fh:
                data = fh.read(MAX_TEXT_BYTES + 1)
        except FileNotFoundError:
            raise SourceError(f"no such file: '{path}'") from None
        except OSError as exc:
            raise SourceError(f"cannot read '{path}': {exc.strerror or exc}") from None
    if len(data) > MAX_TEXT_BYTES:
        raise InputError(f"{what} {where} is larger than {MAX_TEXT_BYTES >> 20} MiB")
    return data


def _decode(data: bytes, where: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not UTF-8 text (byte {exc.start:,} is {data[exc.start]:#04x})"
        ) from None
    return text


def read_text(path: str) -> str:
    """The text of a prompt file (``-`` reads stdin), UTF-8, at most `MAX_TEXT_BYTES`, exactly
    as its bytes say: a byte order mark at the start is kept and a backslash followed by ``n``
    stays two characters, as llama-server receives a file's text (and ``llama-tokenize -f FILE
    --no-escape`` reads it)."""
    data = _read_bytes(path, "the prompt file")
    return _decode(data, "stdin" if path == "-" else f"'{path}'")


def read_chat(path: str) -> Chat:
    """A conversation file: a JSON list of messages, or an object with ``messages`` and
    optionally ``tools`` (OpenAI's request shape). Message content may be a string, null, or a
    list of parts whose ``text`` parts are joined."""
    where = "stdin" if path == "-" else f"'{path}'"
    text = _decode(_read_bytes(path, "the chat file"), where).removeprefix("\ufeff")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except (ValueError, RecursionError):
        raise InputError(f"{where}: unreadable JSON (nested too deeply or a huge number)") from None
    return chat_from_json(data, where)


def chat_from_json(data: Any, where: str = "the chat") -> Chat:
    """Check and normalise the parsed JSON of a conversation (see `read_chat`)."""
    tools = None
    if isinstance(data, dict):
        tools = data.get("tools")
        data = data.get("messages")
        if tools is not None and not isinstance(tools, list):
            raise InputError(f"{where}: 'tools' must be a list")
    if not isinstance(data, list) or not data:
        raise InputError(
            f"{where}: expected a JSON list of messages like "
            '[{"role": "user", "content": "..."}] (or {"messages": [...], "tools": [...]})'
        )
    messages: list[dict[str, Any]] = []
    for i, m in enumerate(data):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise InputError(f"{where}: message {i + 1} needs a 'role' string")
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif isinstance(part, str):
                    parts.append(part)
            content = "".join(parts)
        elif content is not None and not isinstance(content, str):
            raise InputError(f"{where}: message {i + 1} has content that is not text")
        messages.append({**m, "content": content if content is not None else ""})
    return Chat(messages, tools or None)


# -- counters -------------------------------------------------------------------------------


def _special_vars(bos: str, eos: str, unk: str = "", pad: str = "") -> dict[str, str]:
    return {"bos_token": bos, "eos_token": eos, "unk_token": unk, "pad_token": pad}


@dataclass
class GgufCounter:
    """The model's own tokenizer and template, from a GGUF header (see `text.vocab` and
    `text.tokenizer`)."""

    vocab: Any  # tokenwalk.text.vocab.Vocab
    tokenizer: Any = field(default=None, repr=False)  # tokenwalk.text.tokenizer.LlamaTokenizer
    name: str = "gguf"

    def __post_init__(self) -> None:
        from tokenwalk.text.tokenizer import LlamaTokenizer

        if self.tokenizer is None:
            self.tokenizer = LlamaTokenizer(self.vocab)

    @property
    def exact(self) -> bool:
        return bool(self.vocab.exact)

    @property
    def has_template(self) -> bool:
        return bool(self.vocab.chat_template)

    @property
    def description(self) -> str:
        v = self.vocab
        kind = {"llama": "SentencePiece BPE", "gemma4": "Gemma 4's BPE"}.get(
            v.model, "byte-level BPE"
        )
        pre = f", pre-tokenizer '{v.pre}'" if v.model == "gpt2" and v.pre else ""
        text = f"the model's tokenizer ({kind}, {len(v.tokens):,} tokens{pre})"
        if not v.exact:
            text += (
                f"; pre-tokenizer '{v.pre}' is not one tokenwalk knows, so words are split as "
                "GPT-2 does: the count may differ from llama.cpp's by a few percent"
            )
        return text

    def encode(self, text: str, *, add_special: bool, parse_special: bool) -> list[int]:
        ids: list[int] = self.tokenizer.encode(text, add_special=False, parse_special=parse_special)
        self._check_spelled(text, ids)
        v = self.vocab
        if add_special:
            if v.add_bos and v.bos_id is not None:
                ids = [v.bos_id, *ids]
            if v.add_eos and v.eos_id is not None:
                ids.append(v.eos_id)
        return ids

    def _check_spelled(self, text: str, ids: list[int]) -> None:
        """Refuse a vocabulary that cannot encode `text`: its tokens must spell the text back.

        A complete vocabulary always can: byte-level BPE has a token for every byte, and
        SentencePiece and Gemma 4's BPE fall back to the 256 ``<0xNN>`` tokens. A vocabulary
        that lacks them (a token list cut short, a file put together from parts) turns what it
        cannot spell into one unknown token or drops it, and the count would be silently absurd
        (2.25 MB of English as 2 tokens). Whitespace is left out of the comparison: SentencePiece
        puts a space in front and some special tokens take the spaces beside them along, so the
        rule is that the tokens spell at least 99% of the text's other characters."""
        if not text:
            return
        want = len("".join(text.split()))
        spelled = len("".join(self.tokenizer.decode(ids).split()))
        if spelled >= 0.99 * want:
            return
        n = len(ids)
        raise InputError(
            f"the model's vocabulary ({len(self.vocab.tokens):,} tokens) cannot encode this "
            f"text: the {n:,} token{'' if n == 1 else 's'} it makes spell {spelled:,} of its "
            f"{want:,} characters other than spaces (the file's token list is incomplete). "
            "Give a GGUF that holds the model's whole vocabulary, or the length with --prompt N"
        )

    def render(self, chat: Chat, *, add_generation_prompt: bool = True) -> str:
        from tokenwalk.text.template import render_chat

        v = self.vocab
        bos, eos = v.token(v.bos_id), v.token(v.eos_id)
        out = render_chat(
            v.chat_template or "",
            chat.messages,
            tools=chat.tools,
            add_generation_prompt=add_generation_prompt,
            special=_special_vars(bos, eos, v.token(v.unk_id)),
        )
        # llama.cpp (common_chat_template_direct_apply) drops a BOS the template writes when
        # the tokenizer adds its own
        if v.add_bos and bos and out.startswith(bos):
            out = out[len(bos) :]
        if v.add_eos and eos and out.endswith(eos):
            out = out[: -len(eos)]
        return out


@dataclass
class HubCounter:
    """A repository's ``tokenizer.json`` (and template from ``tokenizer_config.json``)."""

    tokenizer: Any
    repo: str
    template: str | None = None
    special: Mapping[str, str] = field(default_factory=dict)
    name: str = "tokenizer.json"
    exact: bool = True

    @property
    def has_template(self) -> bool:
        return bool(self.template)

    @property
    def description(self) -> str:
        return f"the tokenizer.json of {self.repo} (Hugging Face tokenizers)"

    def encode(self, text: str, *, add_special: bool, parse_special: bool) -> list[int]:
        self.tokenizer.encode_special_tokens = not parse_special
        return list(self.tokenizer.encode(text, add_special_tokens=add_special).ids)

    def render(self, chat: Chat, *, add_generation_prompt: bool = True) -> str:
        from tokenwalk.text.template import render_chat

        out = render_chat(
            self.template or "",
            chat.messages,
            tools=chat.tools,
            add_generation_prompt=add_generation_prompt,
            special=dict(self.special),
        )
        # the tokenizer's post-processor adds the BOS itself: one, as llama.cpp sends
        bos = self.special.get("bos_token", "")
        if bos and out.startswith(bos) and bos in self.tokenizer.encode("").tokens:
            out = out[len(bos) :]
        return out


@dataclass
class EstimateCounter:
    """No tokenizer: `CHARS_PER_TOKEN` characters a token, so many tokens a message."""

    why: str
    name: str = "estimate"
    exact: bool = False
    has_template: bool = False

    @property
    def description(self) -> str:
        return (
            f"an estimate, not a count: {CHARS_PER_TOKEN:g} characters a token and "
            f"{ESTIMATE_TEMPLATE_TOKENS} template tokens a message; {self.why}"
        )

    def encode(self, text: str, *, add_special: bool, parse_special: bool) -> list[int]:
        return [0] * math.ceil(len(text) / CHARS_PER_TOKEN)

    def render(self, chat: Chat, *, add_generation_prompt: bool = True) -> str:
        raise TokenwalkError("an estimate has no template")


# -- results --------------------------------------------------------------------------------


class CallCount(BaseModel):
    """One call of a conversation: what the model is sent, what it may reuse, what it writes."""

    model_config = ConfigDict(frozen=True)
    index: int  # position, from 0
    n_messages: int  # messages sent
    prompt_tokens: int  # the rendered conversation so far
    cached_tokens: int  # the prefix the previous call left in the cache (same tokens)
    output_tokens: int  # the assistant's reply that follows in the file, 0 when none
    template_tokens: int


class TokenCount(BaseModel):
    """The answer of `tokenwalk tokens`: how many tokens a text or a conversation is."""

    model_config = ConfigDict(frozen=True)
    model: str
    input: str  # the file read, or "-" for stdin
    input_kind: str  # "text" or "chat"
    counted_with: str  # "gguf", "tokenizer.json" or "estimate"
    tokenizer: str  # in words
    exact: bool  # False: an estimate, or a pre-tokenizer tokenwalk does not know
    prompt_tokens: int  # what the model is sent (the last call's prompt, for a conversation)
    template_tokens: int  # of which the chat template (roles, markers, BOS)
    text_tokens: int  # of which the text itself
    n_chars: int
    n_words: int
    tokens_per_word: float
    tokens_per_char: float
    n_messages: int
    calls: list[CallCount]
    tokenize_s: float  # measured: rendering and tokenizing, seconds


def _template_tokens_estimate(n_messages: int) -> int:
    return ESTIMATE_TEMPLATE_TOKENS * n_messages


def _placeholder(message: Mapping[str, Any]) -> int:
    """A stand-in token id for every token of a message when there is no template: equal for
    equal messages, different (but for a 1 in 2^31 chance) otherwise."""
    digest = hashlib.blake2b(
        f"{message.get('role')}\0{message.get('content')}".encode(), digest_size=4
    ).digest()
    return -1 - int.from_bytes(digest, "little") // 2


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def calls_of(chat: Chat) -> list[int]:
    """Where a conversation calls the model: the index of each message after which the model
    answers (every user or tool message followed by an assistant message or by the end)."""
    ends = []
    msgs = chat.messages
    for i, m in enumerate(msgs):
        if m["role"] in ("assistant", "model"):
            continue
        nxt = msgs[i + 1]["role"] if i + 1 < len(msgs) else None
        if m["role"] in ("user", "tool", "ipython", "function") and nxt in (
            None,
            "assistant",
            "model",
        ):
            ends.append(i)
    if not ends:
        raise InputError(
            "the conversation has no user message for the model to answer (roles: "
            + ", ".join(sorted({m["role"] for m in msgs}))
            + ")"
        )
    return ends


def sent_messages(messages: list[dict[str, Any]], end: int) -> list[dict[str, Any]]:
    """What the call answering message `end` sends: the messages so far, except that a system
    message later in the conversation replaces the system prompt from then on (the application
    changed its instructions): it goes first and the earlier one is dropped."""
    msgs = messages[: end + 1]
    systems = [i for i, m in enumerate(msgs) if m["role"] in ("system", "developer")]
    if not systems or systems == [0]:
        return msgs
    return [msgs[systems[-1]], *(m for i, m in enumerate(msgs) if i not in systems)]


def count_prompt(
    counter: Counter, *, model: str, text: str | None = None, chat: Chat | None = None, source: str
) -> TokenCount:
    """Count a plain text (sent as is, one BOS where the model wants it) or a conversation
    (each call rendered with the chat template). Special-token text is parsed everywhere, as
    llama-server parses a prompt: "<|im_end|>" in a text or a message is that one token. Times
    the work it does."""
    t0 = time.perf_counter()
    calls: list[CallCount] = []
    if chat is None:
        body = text or ""
        ids = counter.encode(body, add_special=True, parse_special=True)
        plain = counter.encode(body, add_special=False, parse_special=True)
        tokens, template_tokens, chars, words, n_messages = (
            len(ids),
            len(ids) - len(plain),
            len(body),
            len(_WORD.findall(body)),
            0,
        )
        kind = "text"
    else:
        kind = "chat"
        ends = calls_of(chat)
        last_sent = sent_messages(chat.messages, ends[-1])  # what the last call sends
        n_messages = len(last_sent)
        chars = sum(len(m["content"]) for m in last_sent)
        words = sum(len(_WORD.findall(m["content"])) for m in last_sent)
        content_tokens = {
            id(m): len(counter.encode(m["content"], add_special=False, parse_special=True))
            for m in chat.messages
        }
        prev: list[int] = []  # what the previous call left in the cache: its prompt and reply
        prev_text, prev_reply = "", 0  # with a template: its rendered prompt, its reply's tokens
        for n, end in enumerate(ends):
            sent = Chat(sent_messages(chat.messages, end), chat.tools)
            if counter.has_template:
                rendered = counter.render(sent)
                ids = counter.encode(rendered, add_special=True, parse_special=True)
                # a template may leave a message out (Phi-3's drops the system prompt)
                shown = [m for m in sent.messages if m["content"] in rendered]
            else:
                # no template: each message stands for its tokens and ESTIMATE_TEMPLATE_TOKENS
                # more, as placeholder ids that tell messages apart, so the prefix the previous
                # call left is found message by message
                ids = counter.encode("", add_special=True, parse_special=True)
                for m in sent.messages:
                    ids += [_placeholder(m)] * (content_tokens[id(m)] + ESTIMATE_TEMPLATE_TOKENS)
                shown = sent.messages
            text_tok = sum(content_tokens[id(m)] for m in shown)
            reply = chat.messages[end + 1] if end + 1 < len(chat.messages) else None
            out_ids = (
                counter.encode(reply["content"], add_special=False, parse_special=True)
                if reply
                else []
            )
            if reply and not counter.has_template:
                out_ids = [_placeholder(reply)] * len(out_ids)
            # an estimate's ids are placeholders: the prefix is then the previous call whole
            cached = _common_prefix(ids, prev)
            if counter.has_template and cached == len(prev) and prev_reply:
                # the reply is cached as the model wrote it: when this call renders the previous
                # prompt unchanged and the reply right after it, its tokens (as this call reads
                # them) are in the cache too, as they are for the estimate
                rest = rendered[len(prev_text) :] if rendered.startswith(prev_text) else ""
                if rest.lstrip().startswith(chat.messages[ends[n - 1] + 1]["content"].strip()):
                    cached += prev_reply
            if cached >= len(ids):  # a call always computes at least its last token
                cached = len(ids) - 1
            calls.append(
                CallCount(
                    index=n,
                    n_messages=len(sent.messages),
                    prompt_tokens=len(ids),
                    cached_tokens=max(cached, 0),
                    output_tokens=len(out_ids) + (1 if reply else 0),
                    template_tokens=len(ids) - text_tok,
                )
            )
            if counter.has_template:
                prev, prev_text, prev_reply = ids, rendered, len(out_ids)
            else:
                prev = ids + out_ids
        last = calls[-1]
        tokens = last.prompt_tokens
        template_tokens = last.template_tokens
    elapsed = time.perf_counter() - t0
    described, exact = counter.description, counter.exact
    if kind == "chat" and not counter.has_template and counter.name != "estimate":
        described += (
            f"; the model has no chat template, so {ESTIMATE_TEMPLATE_TOKENS} tokens a message "
            "are assumed for it"
        )
        exact = False
    return TokenCount(
        model=model,
        input=source,
        input_kind=kind,
        counted_with=counter.name,
        tokenizer=described,
        exact=exact,
        prompt_tokens=tokens,
        template_tokens=template_tokens,
        text_tokens=tokens - template_tokens,
        n_chars=chars,
        n_words=words,
        tokens_per_word=tokens / words if words else 0.0,
        tokens_per_char=tokens / chars if chars else 0.0,
        n_messages=n_messages,
        calls=calls,
        tokenize_s=elapsed,
    )
