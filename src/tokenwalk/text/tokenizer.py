"""Text to token ids as llama.cpp's ``llama_vocab::impl::tokenize`` makes them.

Two steps, both llama.cpp's (``src/llama-vocab.cpp``):

1. ``tokenizer_st_partition``: the text of every special token (control, user-defined and
   unknown tokens, `Vocab.special_tokens`, longest first) is cut out of the text wherever it
   appears and becomes that token, so that "<|im_end|>" in a prompt is one token. Control and
   unknown tokens are cut only when special tokens are parsed; user-defined ones always. A token
   marked to strip whitespace takes the spaces beside it along (Phi-3's do).
2. Each piece of plain text left between them is tokenized on its own: byte-level BPE and Gemma
   4's BPE by the `tokenizers` pipeline `build_tokenizer` makes; SentencePiece by `spm_tokenize`,
   a port of ``llm_tokenizer_spm_session``, with a space in front of each piece that starts the
   text or follows a special token (``add_space_prefix``).

The BOS and EOS the vocabulary asks for are added around the whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from heapq import heappop, heappush
from typing import TYPE_CHECKING, Any

from tokenwalk.text.vocab import (
    ATTR_CONTROL,
    ATTR_LSTRIP,
    ATTR_RSTRIP,
    ATTR_UNKNOWN,
    build_tokenizer,
)

if TYPE_CHECKING:
    from tokenwalk.text.vocab import Vocab

__all__ = ["LlamaTokenizer", "partition", "spm_tokenize"]

# what C's isspace() takes for space, which llama.cpp's strip attributes remove
_C_SPACE = " \t\n\v\f\r"
# a run of spaces and the word after it: see LlamaTokenizer._spm
_SPM_WORD = re.compile("▁+[^▁]*|[^▁]+")
_SPACE_INSIDE = re.compile("[^▁]▁")


def partition(
    text: str, special: Sequence[tuple[str, int, int]], *, parse_special: bool
) -> list[str | int]:
    """`text` as pieces of plain text (str) and special token ids (int), in order.

    `special` is (text, id, attributes) longest first (`Vocab.special_tokens`): each token in
    turn is cut out of the plain pieces left by the ones before it, as llama.cpp's
    ``tokenizer_st_partition`` does. No piece is empty."""
    pieces: list[str | int] = [text] if text else []
    skip = 0 if parse_special else ATTR_CONTROL | ATTR_UNKNOWN
    for tok, tok_id, attr in special:
        if attr & skip or not any(isinstance(p, str) and tok in p for p in pieces):
            continue
        cut: list[str | int] = []
        for p in pieces:
            if isinstance(p, int) or tok not in p:
                cut.append(p)
                continue
            rest = p
            while rest:
                at = rest.find(tok)
                if at < 0:
                    cut.append(rest)
                    break
                left = rest[:at]
                if attr & ATTR_LSTRIP:
                    left = left.rstrip(_C_SPACE)
                if left:
                    cut.append(left)
                cut.append(tok_id)
                rest = rest[at + len(tok) :]
                if attr & ATTR_RSTRIP:
                    rest = rest.lstrip(_C_SPACE)
        pieces = cut
    return pieces


def spm_tokenize(
    text: str, ids: Mapping[str, int], scores: Sequence[float], byte_id: Mapping[int, int]
) -> list[int]:
    """SentencePiece BPE as llama.cpp's ``llm_tokenizer_spm_session`` runs it on one piece of
    text whose spaces are already U+2581.

    Every character starts as a symbol. The adjacent pair whose concatenation is a token of the
    highest score merges first (the leftmost on a tie); the pairs beside it are then queued
    again, until no adjacent pair forms a token. Each symbol left is a token (merges only make
    tokens) or a single character, which becomes its token if the vocabulary has one, else its
    UTF-8 bytes (`byte_id`: ``<0xNN>`` tokens). llama.cpp's ``resegment`` also looks a symbol up
    among the merges made, which can only find a symbol that is a token, so it is left out.
    """
    n = len(text)
    if not n:
        return []
    length = [1] * n  # characters in symbol i; 0 once merged into its left neighbour
    prev = list(range(-1, n - 1))
    nxt = [*range(1, n), -1]
    queue: list[tuple[float, int, int, int]] = []  # (-score, left, right, characters)

    def add_pair(left: int, right: int) -> None:
        if left < 0 or right < 0:
            return
        size = length[left] + length[right]
        tok = ids.get(text[left : left + size])
        if tok is not None:
            heappush(queue, (-scores[tok], left, right, size))

    for i in range(1, n):
        add_pair(i - 1, i)
    while queue:
        _, left, right, size = heappop(queue)
        if not length[left] or not length[right] or length[left] + length[right] != size:
            continue  # a side was merged since the pair was queued
        length[left], length[right] = size, 0
        nxt[left] = nxt[right]
        if nxt[right] >= 0:
            prev[nxt[right]] = left
        add_pair(prev[left], left)
        add_pair(left, nxt[left])
    out: list[int] = []
    i = 0
    while i >= 0:
        piece = text[i : i + length[i]]
        tok = ids.get(piece)
        if tok is not None:
            out.append(tok)
        else:
            out.extend(byte_id[b] for b in piece.encode("utf-8"))
        i = nxt[i]
    return out


class LlamaTokenizer:
    """A vocabulary's tokenizer, giving llama.cpp's ids (see the module docstring)."""

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        # byte-level or Gemma 4 BPE: the `tokenizers` pipeline for plain text; None for
        # SentencePiece, tokenized here
        self.pieces: Any = build_tokenizer(vocab)
        self.special = vocab.special_tokens
        self._special_ids = {tok_id: tok for tok, tok_id, _ in self.special}
        # SentencePiece: the token of a text, scores, the token of each byte
        self.ids: dict[str, int] = {}
        self.scores: list[float] = []
        self.byte_id: dict[int, int] = {}
        if self.pieces is None:
            for i, t in enumerate(vocab.tokens):
                self.ids.setdefault(t, i)
            self.scores = [float(s) for s in vocab.scores or []]
            unk = vocab.unk_id if vocab.unk_id is not None else 0
            for b in range(256):
                # llama.cpp's byte_to_token: <0xNN>, else the byte itself as a token
                found = self.ids.get(f"<0x{b:02X}>")
                if found is None and b < 0x80:
                    found = self.ids.get(chr(b))
                self.byte_id[b] = unk if found is None else found
        # merges never cross the start of a run of spaces when no token has a space right after
        # a character that is not one (Llama 2's tokens have spaces only in front): then each
        # word is tokenized apart, and a word seen before is not tokenized again
        self._by_word = self.pieces is None and not any(
            _SPACE_INSIDE.search(t) for t in vocab.tokens
        )
        self._words: dict[str, list[int]] = {}
        # a vocabulary without byte tokens writes the unknown token for what it cannot spell
        self._lost = vocab.unk_id if vocab.unk_id in self.byte_id.values() else None

    def encode(self, text: str, *, add_special: bool, parse_special: bool) -> list[int]:
        """The ids llama.cpp's ``llama_tokenize(vocab, text, add_special, parse_special)``
        gives."""
        v = self.vocab
        out: list[int] = []
        if add_special and v.add_bos and v.bos_id is not None:
            out.append(v.bos_id)
        after_special = True  # SentencePiece puts a space before the text's first piece
        for piece in partition(text, self.special, parse_special=parse_special):
            if isinstance(piece, int):
                out.append(piece)
                after_special = True
            elif self.pieces is not None:
                out.extend(self.pieces.encode(piece, add_special_tokens=False).ids)
            else:
                if v.add_space_prefix and after_special:
                    piece = " " + piece
                out.extend(self._spm(piece.replace(" ", "▁")))
                after_special = False
        if add_special and v.add_eos and v.eos_id is not None:
            out.append(v.eos_id)
        return out

    def _spm(self, text: str) -> list[int]:
        """`spm_tokenize` on a piece of text, word by word where that gives the same ids."""
        if not self._by_word:
            return spm_tokenize(text, self.ids, self.scores, self.byte_id)
        if len(self._words) > 100_000:
            self._words.clear()
        out: list[int] = []
        for word in _SPM_WORD.findall(text):
            ids = self._words.get(word)
            if ids is None:
                ids = self._words[word] = spm_tokenize(word, self.ids, self.scores, self.byte_id)
            out.extend(ids)
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """The text `ids` spell: special tokens as their text; the unknown token as nothing
        where it stands for characters the vocabulary cannot spell."""
        parts: list[str] = []
        run: list[int] = []

        def flush() -> None:
            if run:
                parts.append(self._decode_plain(run))
                run.clear()

        for i in ids:
            if i == self._lost:
                continue
            if i in self._special_ids:
                flush()
                parts.append(self._special_ids[i])
            else:
                run.append(i)
        flush()
        return "".join(parts)

    def _decode_plain(self, ids: list[int]) -> str:
        if self.pieces is not None:
            return str(self.pieces.decode(ids, skip_special_tokens=False))
        raw = bytearray()
        bytes_of = {t: b for b, t in self.byte_id.items()}
        for i in ids:
            if i in bytes_of and self.vocab.tokens[i].startswith("<0x"):
                raw.append(bytes_of[i])
            elif 0 <= i < len(self.vocab.tokens):
                raw += self.vocab.tokens[i].replace("▁", " ").encode("utf-8")
        return raw.decode("utf-8", errors="replace")
