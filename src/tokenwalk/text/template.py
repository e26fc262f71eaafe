"""Chat templates rendered in a sandbox: a template from a model file is data, never code.

A GGUF's ``tokenizer.chat_template`` is a Jinja2 program written by whoever made the file.
Rendering it with a plain Jinja2 environment runs whatever it asks (the class of bug behind
CVE-2024-34359, where ``{{ ''.__class__.__mro__[1].__subclasses__() }}`` reached ``os``).
`render_chat` renders it the way transformers and llama.cpp do (``trim_blocks``,
``lstrip_blocks``, loop controls, ``raise_exception``, ``strftime_now``, a ``tojson`` that
writes JSON as Python's json module does) inside these walls:

- Jinja2's `ImmutableSandboxedEnvironment`: no attribute of Python's internals (``__class__``,
  ``__globals__``, ``func_code`` ...), no method that changes a list or a dict, ranges of at most
  100,000 items.
- Bounded work: at most `RenderLimits.time_s` seconds of rendering (checked on every line the
  compiled template runs), at most `RenderLimits.output_chars` characters of output, no number
  argument or repetition (``'x' * n``, ``center(n)``, ``'%9999999d'``) that would build a string
  beyond that bound, powers of at most 4,096 bits, recursion bounded by Python's own limit.
- Bounded memory where the system allows it (Linux, macOS): the address space may grow by at
  most `RenderLimits.memory_bytes` while the template runs.

Whatever a template does wrong, `render_chat` raises `TemplateRefused`, whose message is one
line saying what happened; nothing the template asks is ever run outside the sandbox.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokenwalk.errors import TokenwalkError

__all__ = ["RenderLimits", "TemplateRefused", "render_chat", "DEFAULT_LIMITS"]


class TemplateRefused(TokenwalkError):
    """A chat template that cannot be rendered: a syntax error, a refusal of its own
    (``raise_exception``), or something the sandbox does not allow."""


@dataclass(frozen=True)
class RenderLimits:
    """The walls of a render. `output_chars` bounds the rendered text (characters) and any
    string built on the way; `time_s` the wall time; `memory_bytes` the address space the render
    may add; `template_chars` the template's own size."""

    time_s: float = 2.0
    output_chars: int = 16 << 20
    memory_bytes: int = 1 << 30
    template_chars: int = 1 << 20
    max_pow_bits: int = 4096


DEFAULT_LIMITS = RenderLimits()
_WIDTH = re.compile(r"%[-+ #0]*(\d+)|\{[^{}]*?:[^{}]*?(\d+)[^{}]*\}")


class _Deadline(Exception):  # noqa: N818  (internal: turned into TemplateRefused)
    pass


def _too_big(n: object, limit: int) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and abs(n) > limit


def _check_args(args: Sequence[Any], kwargs: Mapping[str, Any], limit: int, what: str) -> None:
    """Refuse a number argument (a width, a count) or a format width that would build a string
    beyond `limit` characters."""
    for a in (*args, *kwargs.values()):
        if _too_big(a, limit):
            raise TemplateRefused(f"the chat template asks {what} for a size of {a:,}")
        if isinstance(a, str) and len(a) < 4096:
            for m in _WIDTH.finditer(a):
                width = int(m.group(1) or m.group(2) or 0)
                if width > limit:
                    raise TemplateRefused(f"the chat template formats a field {width:,} wide")


def _make_env(limits: RenderLimits, now: datetime | None = None) -> Any:
    try:
        import jinja2
        from jinja2.compiler import CodeGenerator, optimizeconst
        from jinja2.exceptions import SecurityError
        from jinja2.ext import Extension, loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        from tokenwalk.text.vocab import need_text_extra

        raise need_text_extra("rendering a chat template") from None

    cap = limits.output_chars

    class _Generation(Extension):
        """transformers' ``{% generation %}`` block (marks the assistant's text): rendered as
        its body."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.Scope(body, lineno=lineno)

    class _CodeGenerator(CodeGenerator):
        """`a ~ b` (string concatenation) goes through a check of the length it builds."""

        @optimizeconst
        def visit_Concat(self, node: Any, frame: Any) -> None:
            self.write("environment.checked_concat((")
            for arg in node.nodes:
                self.visit(arg, frame)
                self.write(", ")
            self.write("))")

    class _Env(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(["*", "**", "+", "%"])
        code_generator_class = _CodeGenerator

        def checked_concat(self, parts: Sequence[Any]) -> str:
            texts = [str(p) for p in parts]
            if sum(len(t) for t in texts) > cap:
                raise TemplateRefused("the chat template builds a string too long")
            return "".join(texts)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**":
                if isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
                    if right * abs(left).bit_length() > limits.max_pow_bits:
                        raise TemplateRefused("the chat template computes a power too large")
            elif operator == "*":
                for seq, n in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
                        if len(seq) * n > cap:
                            raise TemplateRefused(f"the chat template repeats a value {n:,} times")
                if isinstance(left, int) and isinstance(right, int):
                    if left.bit_length() + right.bit_length() > limits.max_pow_bits:
                        raise TemplateRefused("the chat template computes a number too large")
            elif operator == "+":
                if isinstance(left, (str, list)) and isinstance(right, (str, list)):
                    if len(left) + len(right) > cap:
                        raise TemplateRefused("the chat template builds a string too long")
            elif operator == "%" and isinstance(left, str):
                _check_args((left,), {}, cap, "a %-format")
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            _check_args(args, kwargs, cap, "a call")
            out = super().call(__context, __obj, *args, **kwargs)
            if isinstance(out, str) and len(out) > cap:
                raise TemplateRefused("the chat template builds a string too long")
            return out

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            # Jinja returns an undefined that prints as ""; a template probing for internals is
            # refused outright instead
            raise SecurityError(
                f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
            )

        def format_string(self, s: str, args: Any, kwargs: Any, format_func: Any = None) -> str:
            _check_args((s, *args), kwargs, cap, "a format")
            return super().format_string(s, args, kwargs, format_func)

    env = _Env(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[loopcontrols, _Generation],
        autoescape=False,
    )

    def guarded(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            # the value filtered is not checked (a large number may be printed), its arguments are
            skip = 0 if name == "format" else 2 if hasattr(fn, "jinja_pass_arg") else 1
            _check_args(args[skip:], kwargs, cap, f"filter '{name}'")
            out = fn(*args, **kwargs)
            if isinstance(out, str) and len(out) > cap:
                raise TemplateRefused(f"filter '{name}' builds a string too long")
            return out

        for attr in ("jinja_pass_arg",):  # keep how Jinja passes the context or environment
            if hasattr(fn, attr):
                setattr(run, attr, getattr(fn, attr))
        return run

    def tojson(
        x: Any,
        ensure_ascii: bool = False,
        indent: int | None = None,
        separators: Any = None,
        sort_keys: bool = False,
    ) -> str:
        """transformers' tojson: Python's json.dumps, no HTML escaping."""
        if _too_big(indent, 64):
            raise TemplateRefused("tojson with an indent of more than 64")
        try:
            return json.dumps(
                x,
                ensure_ascii=ensure_ascii,
                indent=indent,
                separators=separators,
                sort_keys=sort_keys,
                default=str,
            )
        except (TypeError, ValueError) as exc:
            raise TemplateRefused(f"tojson: {exc}") from None

    def raise_exception(message: object = "") -> None:
        raise TemplateRefused(f"the chat template refuses the conversation: {message}")

    def strftime_now(fmt: str) -> str:
        if not isinstance(fmt, str) or len(fmt) > 256:
            raise TemplateRefused("strftime_now takes a format of at most 256 characters")
        return (now or datetime.now()).strftime(fmt)

    env.filters = {name: guarded(name, fn) for name, fn in env.filters.items()}
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


@contextmanager
def _bounded(limits: RenderLimits) -> Iterator[None]:
    """Limit the wall time (a line tracer) and, where the system has it, the address space."""
    deadline = time.monotonic() + limits.time_s
    ticks = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal ticks
        ticks += 1
        if ticks & 255 == 0 and time.monotonic() > deadline:
            raise _Deadline
        return tracer

    old_trace = sys.gettrace()
    restore = _cap_memory(limits.memory_bytes)
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(old_trace)
        restore()


def _cap_memory(extra: int) -> Callable[[], None]:
    """Lower the soft address-space limit to what the process has now plus `extra` bytes;
    returns what puts it back. Does nothing where there is no such limit."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            now = int(fh.read().split()[0]) * resource.getpagesize()
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = now + extra
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft != resource.RLIM_INFINITY and soft <= want:
            return lambda: None
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ImportError, OSError, ValueError):
        return lambda: None

    def restore() -> None:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        except (OSError, ValueError):
            pass

    return restore


def render_chat(
    template: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[Any] | None = None,
    add_generation_prompt: bool = True,
    special: Mapping[str, str] | None = None,
    limits: RenderLimits = DEFAULT_LIMITS,
    now: datetime | None = None,
) -> str:
    """Render `template` for `messages` (and `tools`) as transformers' ``apply_chat_template``
    does, inside the sandbox. `special` gives the variables ``bos_token``, ``eos_token`` ...;
    `now` fixes the time ``strftime_now`` shows (recorded renders).
    Raises `TemplateRefused` with one line for anything a template does wrong."""
    if not isinstance(template, str) or not template.strip():
        raise TemplateRefused("the model has no chat template")
    if len(template) > limits.template_chars:
        raise TemplateRefused(
            f"the chat template has {len(template):,} characters (limit {limits.template_chars:,})"
        )
    env = _make_env(limits, now)  # first: it says how to install jinja2 when it is missing
    import jinja2
    from jinja2.exceptions import SecurityError

    variables: dict[str, Any] = {
        "messages": messages,
        "add_generation_prompt": add_generation_prompt,
        **(special or {}),
    }
    if tools:
        variables["tools"] = tools
    out: list[str] = []
    size = 0
    try:
        compiled = env.from_string(template)
        with _bounded(limits):
            for chunk in compiled.generate(**variables):
                size += len(chunk)
                if size > limits.output_chars:
                    raise TemplateRefused(
                        f"the chat template writes more than {limits.output_chars:,} characters"
                    )
                out.append(chunk)
    except TemplateRefused:
        raise
    except _Deadline:
        raise TemplateRefused(
            f"the chat template ran longer than {limits.time_s:g} s and was stopped"
        ) from None
    except SecurityError as exc:
        raise TemplateRefused(f"the chat template tried something unsafe: {_first(exc)}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateRefused(
            f"the chat template has a syntax error at line {exc.lineno}: {_first(exc)}"
        ) from None
    except jinja2.TemplateError as exc:
        raise TemplateRefused(f"the chat template failed: {_first(exc)}") from None
    except RecursionError:
        raise TemplateRefused("the chat template recurses too deeply") from None
    except MemoryError:
        raise TemplateRefused("the chat template needed too much memory and was stopped") from None
    except Exception as exc:  # a template's own runtime error (a bad index, a bad type ...)
        raise TemplateRefused(
            f"the chat template failed: {type(exc).__name__}: {_first(exc)}"
        ) from None
    return "".join(out)


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__
