"""The arithmetic behind each answer (--explain): formula first, then the numbers in it.

A report type `FooReport` is served by a function `explain_foo_report(report, console)` here;
`tokenwalk.render.render` finds it by name."""

from __future__ import annotations
