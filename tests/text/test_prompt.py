"""Counting a text or a conversation: reading the input, calls, the prefix each call reuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenwalk.errors import InputError, SourceError
from tokenwalk.text.prompt import (
    CHARS_PER_TOKEN,
    Chat,
    EstimateCounter,
    calls_of,
    chat_from_json,
    count_prompt,
    read_chat,
    read_text,
)


def test_read_text_keeps_the_bytes_as_llama_cpp_does(tmp_path: Path) -> None:
    """llama.cpp tokenizes a file's bytes: a byte order mark is a character (U+FEFF) and
    a backslash before an n is not a newline (llama-tokenize --no-escape, llama-server)."""
    p = tmp_path / "a.txt"
    p.write_bytes("\ufeffhéllo\\n\r\n".encode())
    assert read_text(str(p)) == "\ufeffhéllo\\n\r\n"


def test_read_chat_skips_a_bom(tmp_path: Path) -> None:
    p = tmp_path / "c.json"
    p.write_bytes('\ufeff[{"role": "user", "content": "hi"}]'.encode())
    assert read_chat(str(p)).messages == [{"role": "user", "content": "hi"}]


def test_read_text_refuses_binary(tmp_path: Path) -> None:
    p = tmp_path / "a.bin"
    p.write_bytes(b"ok\xff\xfe")
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_text(str(p))


def test_read_text_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        read_text(str(tmp_path / "nope.txt"))
    with pytest.raises(SourceError, match="directory"):
        read_text(str(tmp_path))


def test_chat_shapes(tmp_path: Path) -> None:
    p = tmp_path / "c.json"
    p.write_text(
        json.dumps(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                    }
                ],
                "tools": [{"type": "function"}],
            }
        )
    )
    chat = read_chat(str(p))
    assert chat.messages[0]["content"] == "ab" and chat.tools == [{"type": "function"}]


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, "expected a JSON list"),
        ([], "expected a JSON list"),
        ([{"content": "x"}], "needs a 'role'"),
        ([{"role": "user", "content": 3}], "not text"),
        ({"messages": [{"role": "user"}], "tools": {}}, "'tools' must be a list"),
    ],
)
def test_bad_chats(data: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        chat_from_json(data)


def test_bad_json(tmp_path: Path) -> None:
    p = tmp_path / "c.json"
    p.write_text("[{")
    with pytest.raises(InputError, match="invalid JSON at line 1"):
        read_chat(str(p))
    p.write_text("[" * 100_000)
    with pytest.raises(InputError):
        read_chat(str(p))


def _chat(*roles: str) -> Chat:
    return Chat([{"role": r, "content": f"{r} {i}"} for i, r in enumerate(roles)])


def test_calls_are_user_turns_answered() -> None:
    assert calls_of(_chat("system", "user", "assistant", "user", "assistant", "user")) == [1, 3, 5]
    assert calls_of(_chat("user", "assistant")) == [0]
    with pytest.raises(InputError, match="no user message"):
        calls_of(_chat("system", "assistant"))


def test_estimate_says_it_is_one() -> None:
    counter = EstimateCounter("no tokenizer")
    r = count_prompt(counter, model="m", text="x" * 400, source="doc.txt")
    assert r.prompt_tokens == 400 / CHARS_PER_TOKEN and not r.exact and r.counted_with == "estimate"
    assert "estimate" in r.tokenizer and "no tokenizer" in r.tokenizer


def test_estimate_conversation_grows() -> None:
    counter = EstimateCounter("no tokenizer")
    chat = Chat(
        [
            {"role": "user", "content": "q" * 400},
            {"role": "assistant", "content": "a" * 40},
            {"role": "user", "content": "q" * 40},
        ]
    )
    r = count_prompt(counter, model="m", chat=chat, source="c.json")
    first, second = r.calls
    assert first.output_tokens == 11 and second.prompt_tokens > first.prompt_tokens
    assert second.cached_tokens == first.prompt_tokens + 10


def test_estimate_changed_system_prompt_recomputes() -> None:
    chat = Chat(
        [
            {"role": "system", "content": "s" * 400},
            {"role": "user", "content": "q" * 40},
            {"role": "assistant", "content": "a" * 40},
            {"role": "system", "content": "t" * 400},
            {"role": "user", "content": "q" * 40},
        ]
    )
    r = count_prompt(EstimateCounter("no tokenizer"), model="m", chat=chat, source="c.json")
    assert r.calls[1].cached_tokens == 0 and r.calls[1].n_messages == 4


def test_template_share_leaves_out_messages_a_template_drops() -> None:
    class DropsSystem(EstimateCounter):
        has_template = True

        def render(self, chat: Chat, *, add_generation_prompt: bool = True) -> str:
            return "".join(
                f"<{m['role']}>{m['content']}" for m in chat.messages if m["role"] != "system"
            )

    chat = Chat([{"role": "system", "content": "s" * 400}, {"role": "user", "content": "q" * 40}])
    r = count_prompt(DropsSystem("x"), model="m", chat=chat, source="c.json")
    assert r.template_tokens >= 0
