"""Charts for the reports people read: the sweep's ``index.html``/``index.md`` (sweep/report.py)
and the benchmark report ``reports/benchmarks.md`` (benchmarks/run.py). One implementation,
matplotlib, for both, so every chart has a title, labelled axes and a legend drawn by a
plotting library rather than hand-placed SVG.

Every chart is returned as SVG text (``Chart.svg``) with its alternative text (``Chart.alt``,
also the SVG's ``<title>``), for an ``<img alt>`` in a page or ``![alt](file)`` in Markdown.

Rendering is deterministic: the same data give byte-identical SVG, on any machine with the
pinned matplotlib (pyproject.toml). The figures are drawn on the non-interactive Agg canvas
(no pyplot, no GUI backend, no global state: a notebook's backend is left alone), inside an
``rc_context`` that fixes the style, the font (DejaVu Sans, shipped with matplotlib, so the
layout does not depend on the fonts installed), ``svg.hashsalt`` (the ids of clip paths are
otherwise random) and ``svg.fonttype='none'`` (text stays text: smaller files, selectable
labels); the SVG metadata carries no date. matplotlib is imported on first use, so importing
a report module stays cheap.
"""

from __future__ import annotations

import contextlib
import html
import io
from dataclasses import dataclass

#: The style of every chart (GitHub-like greys, as the sweep page's CSS).
STYLE = {
    "svg.hashsalt": "icecheck-charts",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelsize": 9,
    "axes.edgecolor": "#57606a",
    "axes.labelcolor": "#1f2328",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#d8dee4",
    "grid.linewidth": 0.6,
    "text.color": "#1f2328",
    "xtick.color": "#57606a",
    "ytick.color": "#57606a",
    "legend.frameon": False,
    "legend.fontsize": 8.5,
}
WIDTH = 7.5          # inches; the pages scale the SVG to their width
#: The colour of a series that has no colour of its own (benchmarks)
INK = "#0969da"
MARKS = "osD^v<>"


@dataclass(frozen=True)
class Chart:
    """A rendered chart: SVG text (starting with ``<?xml``) and the text that stands for it."""
    svg: str
    alt: str


@contextlib.contextmanager
def _figure(height: float, width: float = WIDTH):
    """A matplotlib Figure on the Agg canvas, under the charts' rcParams (they apply when the
    artists are made and when the SVG is written, so the whole chart is built inside)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
        yield fig


def _render(fig, alt: str) -> Chart:
    """The figure as SVG text: no date in the metadata, the alternative text as the root
    ``<title>`` and ``aria-label``."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Title": alt})
    svg = buf.getvalue()
    start = svg.index("<svg")
    end = svg.index(">", start)
    label = html.escape(alt, quote=True)
    svg = (svg[:end] + f' role="img" aria-label="{label}">\n <title>{label}</title>'
           + svg[end + 1:])
    return Chart(svg=svg, alt=alt)


def _legend(fig, ax, handles=None, labels=None) -> None:
    """The legend under the plot, centred on the figure (the layout makes room for it)."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(handles), 3))


def stacked_bars(categories: list[str], series: list[tuple[str, list[float], str]], *,
                 title: str, xlabel: str, ylabel: str, alt: str) -> Chart:
    """Horizontal stacked bars: a bar per category (top to bottom in the order given), a
    segment per series ``(label, values, colour)``; each segment wide enough to hold its count
    is labelled with it, and each bar with its total."""
    from matplotlib.ticker import MaxNLocator

    with _figure(1.5 + 0.3 * max(1, len(categories))) as fig:
        ax = fig.add_subplot()
        ys = list(range(len(categories)))
        left = [0.0] * len(categories)
        total = max([sum(v[i] for _, v, _ in series) for i in ys] + [1])
        for label, values, colour in series:
            bars = ax.barh(ys, values, left=left, color=colour, label=label, height=0.7,
                           edgecolor="white", linewidth=0.5)
            ax.bar_label(bars, labels=[f"{v:g}" if v >= 0.04 * total else "" for v in values],
                         label_type="center", color="white", fontsize=8)
            left = [a + b for a, b in zip(left, values)]
        for y, x in zip(ys, left):
            ax.text(x + 0.005 * total, y, f"{x:g}", va="center", fontsize=8, color="#57606a")
        ax.set_yticks(ys, categories)
        ax.invert_yaxis()
        ax.set_xlim(0, total * 1.06)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
        ax.grid(axis="y", visible=False)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        _legend(fig, ax)
        return _render(fig, alt)


def stacked_histogram(series: list[tuple[str, list[float], str]], *, title: str, xlabel: str,
                      ylabel: str, alt: str, log: bool = True) -> Chart:
    """How the values of several series ``(label, values, colour)`` are distributed, stacked:
    on a log scale (bins of a quarter decade, whole decades shown) when ``log``; values <= 0
    count in the first bin."""
    import numpy as np
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    values = [v for _, vs, _ in series for v in vs]
    with _figure(3.2) as fig:
        ax = fig.add_subplot()
        if log:
            floor = min((v for v in values if v > 0), default=1.0)
            lo = np.floor(np.log10(floor))
            hi = max(np.ceil(np.log10(max(values + [floor]))), lo + 1)
            edges = 10 ** np.arange(lo, hi + 0.125, 0.25)
            data = [[max(v, edges[0]) for v in vs] for _, vs, _ in series]
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:
            edges = np.histogram_bin_edges(values or [0, 1], bins=20)
            data = [list(vs) for _, vs, _ in series]
        ax.hist(data, bins=edges, stacked=True, color=[c for _, _, c in series],
                label=[label for label, _, _ in series], edgecolor="white", linewidth=0.5)
        ax.set_xlim(edges[0], edges[-1])     # a log axis would widen to whole decades
        ax.yaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(axis="x", visible=False)
        _legend(fig, ax)
        return _render(fig, alt)


def bars(labels: list[str], values: list[float], *, title: str, xlabel: str, alt: str,
         legend: str, reference: tuple[float, str] | None = None, colour: str = INK,
         value_format: str = "{:g}") -> Chart:
    """Horizontal bars, one per label (top to bottom), each labelled with its value, named
    ``legend`` in the legend; an optional ``reference`` ``(value, label)`` drawn as a dashed
    line with a legend entry of its own."""
    with _figure(1.5 + 0.32 * max(1, len(labels))) as fig:
        ax = fig.add_subplot()
        ys = list(range(len(labels)))
        got = ax.barh(ys, values, color=colour, height=0.6, label=legend)
        ax.bar_label(got, labels=[value_format.format(v) for v in values], padding=3,
                     fontsize=8)
        top = max(list(values) + [reference[0] if reference else 0] + [1e-12])
        if reference:
            ax.axvline(reference[0], color="#cf222e", linestyle="--", linewidth=1.2,
                       label=reference[1])
        ax.set_xlim(0, top * 1.15)
        ax.set_yticks(ys, labels)
        ax.invert_yaxis()
        ax.grid(axis="y", visible=False)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        _legend(fig, ax)
        return _render(fig, alt)


def lines(series: list[tuple[str, list[float], list[float], list[bool]]], *, title: str,
          xlabel: str, ylabel: str, alt: str, log: bool = False,
          reference: tuple[float, str] | None = None, open_label: str = "") -> Chart:
    """A line per series ``(label, xs, ys, open)``: a point whose ``open`` flag is set is drawn
    hollow (``open_label`` in the legend says what that means); an optional ``reference``
    ``(y, label)`` as a dashed horizontal line. Integer x ticks where every x is an integer."""
    from matplotlib.lines import Line2D

    with _figure(3.6) as fig:
        ax = fig.add_subplot()
        for i, (label, xs, ys, hollow) in enumerate(series):
            mark = MARKS[i % len(MARKS)]
            line, = ax.plot(xs, ys, marker=mark, label=label, linewidth=1.6, markersize=6)
            for x, y, h in zip(xs, ys, hollow):
                if h:
                    ax.plot([x], [y], marker=mark, markersize=9, markerfacecolor="white",
                            markeredgecolor=line.get_color(), markeredgewidth=1.6,
                            linestyle="none")
        if log:
            ax.set_yscale("log")
        if reference:
            ax.axhline(reference[0], color="#cf222e", linestyle="--", linewidth=1.2,
                       label=reference[1])
        xs_all = sorted({x for _, xs, _, _ in series for x in xs})
        if xs_all and all(float(x).is_integer() for x in xs_all):
            ax.set_xticks(xs_all)
        handles, names = ax.get_legend_handles_labels()
        if open_label and any(h for *_, hollow in series for h in hollow):
            handles.append(Line2D([], [], marker="o", linestyle="none", markersize=9,
                                  markerfacecolor="white", markeredgecolor="#57606a"))
            names.append(open_label)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        _legend(fig, ax, handles, names)
        return _render(fig, alt)

