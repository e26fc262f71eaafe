"""Charts under the tables (--chart), each the terminal form of a figure of the seed article.

A report type `FooReport` is served by a function `chart_foo_report(report, console)` here;
`tokenwalk.render.render` finds it by name."""

from __future__ import annotations
