"""Chat templates: rendered as transformers renders them, hostile ones refused in bounded time."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("jinja2")

from tokenwalk.text.template import RenderLimits, TemplateRefused, render_chat  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hi <b>there</b> & 'you'"},
]
FAST = RenderLimits(time_s=0.5, output_chars=1 << 20, memory_bytes=256 << 20)
TEMPLATES = Path(__file__).parents[1] / "data" / "templates"


def render(template: str, limits: RenderLimits = FAST, **kw: object) -> str:
    return render_chat(template, MESSAGES, limits=limits, **kw)  # type: ignore[arg-type]


def test_chatml_renders_with_generation_prompt() -> None:
    tpl = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    out = render(tpl)
    assert out.endswith("<|im_start|>assistant\n")
    assert "Hi <b>there</b> & 'you'" in out  # no HTML escaping


def test_helpers_as_transformers_provides_them() -> None:
    assert render("{{ {'a': 'é<'}|tojson }}") == '{"a": "é<"}'
    assert render("{{ [1, 2]|tojson(indent=2) }}") == "[\n  1,\n  2\n]"
    assert len(render("{{ strftime_now('%Y-%m-%d') }}")) == 10
    assert render("{{ bos_token }}x", special={"bos_token": "<s>"}) == "<s>x"
    assert (
        render("{% for i in range(5) %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}")
        == "01"
    )
    assert render("{% generation %}ok{% endgeneration %}") == "ok"
    with pytest.raises(TemplateRefused, match="refuses the conversation: no system"):
        render("{{ raise_exception('no system') }}")


def test_concatenation_still_renders() -> None:
    assert render("{{ 'a' ~ 1 ~ none }}") == "a1None"
    assert render("{% set x = 'b' %}{{ x ~ x }}") == "bb"


def test_trim_and_lstrip_blocks() -> None:
    assert render("  {% if true %}\nx{% endif %}") == "x"


LOOPS = "{{% for i in range(100000) %}}{{% for j in range(100000) %}}{}{{% endfor %}}{{% endfor %}}"
HOSTILE = {
    "class escape": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "globals escape": "{{ raise_exception.__globals__ }}",
    "cycler escape": "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "namespace escape": "{{ namespace.__init__.__globals__ }}",
    "format escape": "{{ '{0.__class__.__mro__}'.format('') }}",
    "attr filter escape": "{{ ''|attr('__class__')|attr('__mro__') }}",
    "list mutation": "{% set x = [] %}{{ x.append(1) }}",
    "dict mutation": "{% set d = {} %}{{ d.update({'a': 1}) }}",
    "huge loops": LOOPS.format(""),
    "huge output": LOOPS.format("xxxxxxxx"),
    "huge range": "{% for i in range(10**12) %}x{% endfor %}",
    "string repeat": "{{ 'x' * 10000000000 }}",
    "list repeat": "{{ ([0] * 100000000)|length }}",
    "big power": "{{ 9 ** 999999 }}",
    "big product": "{% set n = 10 ** 1000 %}{{ n * n * n * n * n }}",
    "center width": "{{ 'x'|center(10000000000) }}",
    "method width": "{{ 'x'.ljust(10000000000) }}",
    "percent width": "{{ '%10000000000d' % 1 }}",
    "format width": "{{ '{:>10000000000}'.format(1) }}",
    "format filter width": "{{ '%10000000000s'|format('x') }}",
    "concat growth": "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(100) %}"
    "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
    "concat growth (~)": "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(100) %}"
    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
    "recursive loop": "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}",
    "map attribute escape": "{{ messages|map(attribute='__class__')|list }}",
    "recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "syntax error": "{% for x in %}",
    "undefined call": "{{ nothing() }}",
    "runtime error": "{{ messages[99]['content'] }}",
}


@pytest.mark.parametrize("template", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_template_refused_quickly(template: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(TemplateRefused) as info:
        render(template)
    assert time.monotonic() - t0 < 5.0
    message = str(info.value)
    assert "\n" not in message and message.startswith("the chat template") or "filter" in message


def test_no_code_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    tpl = (
        "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}"
        "{{ ''.__class__.__base__.__subclasses__() }}"
    )
    with pytest.raises(TemplateRefused):
        render(tpl)
    assert not marker.exists()


def test_time_limit_is_the_one_asked() -> None:
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    t0 = time.monotonic()
    with pytest.raises(TemplateRefused, match="longer than 0.2 s"):
        render(loop, RenderLimits(time_s=0.2))
    assert time.monotonic() - t0 < 2.0


def test_tracer_is_restored() -> None:
    import sys

    before = sys.gettrace()
    with pytest.raises(TemplateRefused):
        render("{{ raise_exception('x') }}")
    render("ok")
    assert sys.gettrace() is before


def test_template_size_bounded() -> None:
    with pytest.raises(TemplateRefused, match="characters"):
        render("x" * 100, RenderLimits(template_chars=50))
