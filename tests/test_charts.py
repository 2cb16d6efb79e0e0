"""The reports' charts (icecheck/charts.py, matplotlib): each is valid SVG with its title, axis
labels, legend and alternative text, and the same data give byte-identical files; the sweep's
charts and the benchmark report's (from reports/benchmarks.json as committed) are drawn and
linked from their pages."""

import json
import os
import xml.etree.ElementTree as ET

import pytest

from icecheck import charts as C
from icecheck.sweep.report import (CLEAN, COLOR, EXPECTED, KNOWN, LABEL, VIOLATION, charts,
                                   write_reports)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: str) -> str:
    """Every piece of text the SVG shows (fonttype 'none': labels are <text> elements)."""
    root = ET.fromstring(svg.encode("utf-8"))       # raises on malformed XML
    assert root.tag == SVG + "svg"
    return "\n".join("".join(t.itertext()) for t in root.iter(SVG + "text"))


def check(chart: C.Chart, *labels: str) -> str:
    """A chart is well-formed SVG, says what it is (title, aria-label), shows ``labels``, and
    carries no date or random id (the same chart drawn again is the same bytes)."""
    shown = texts(chart.svg)
    for label in labels:
        assert label in shown, (label, shown[:500])
    root = ET.fromstring(chart.svg.encode("utf-8"))
    assert root.get("role") == "img" and root.get("aria-label") == chart.alt
    assert root.find(SVG + "title").text == chart.alt
    assert "<dc:date>" not in chart.svg
    return shown


def result(profile, combo, isolation, status, props=(), states=10, seconds=0.01):
    return {"id": f"{profile}-{combo}-{status}", "status": status, "states": states,
            "seconds": seconds, "engine_used": "bfs", "complete": True,
            "cell": {"profile": profile, "combo": combo, "isolation": isolation,
                     "catalog": "cas", "format_version": 2},
            "findings": [{"property": p, "status": s} for p, s in props]}


RESULTS = [
    result("spark-3.5-mor-snapshot", "DELETE+UPDATE", "snapshot", KNOWN,
           [("undelete", KNOWN), ("isolation", EXPECTED)], states=587, seconds=0.2),
    result("spark-3.5-mor-snapshot", "UPDATE+UPDATE", "snapshot", EXPECTED,
           [("isolation", EXPECTED)]),
    result("spark-3.5-cow-serializable", "DELETE+UPDATE", "serializable", CLEAN, states=13),
    result("spark-3.5-cow-serializable+pyiceberg-0.12-serializable", "UPDATE+UPDATE",
           "serializable", VIOLATION, [("lost_write", VIOLATION)], states=40, seconds=0.05),
]


def test_primitives_are_labelled_valid_and_deterministic():
    made = [
        (lambda: C.stacked_bars(["a", "b"], [("one (3)", [1, 2], "#cf222e"),
                                             ("two (4)", [4, 0], "#0969da")],
                                title="T1", xlabel="X1", ylabel="Y1", alt="alt one"),
         ("T1", "X1", "Y1", "one (3)", "two (4)", "a", "b")),
        (lambda: C.stacked_histogram([("s", [1, 10, 100, 1000], "#1a7f37")], title="T2",
                                     xlabel="X2", ylabel="Y2", alt="alt two"),
         ("T2", "X2", "Y2", "s")),
        (lambda: C.bars(["p", "q"], [0.02, 0.5], title="T3", xlabel="X3", alt="alt three",
                        legend="L3", reference=(0.1, "R3")),
         ("T3", "X3", "L3", "R3", "p", "q", "0.02")),
        (lambda: C.lines([("w2", [1, 2], [10, 100], [False, True])], title="T4", xlabel="X4",
                         ylabel="Y4", alt="alt four", log=True, reference=(50, "R4"),
                         open_label="O4"),
         ("T4", "X4", "Y4", "w2", "R4", "O4")),
    ]
    for draw, labels in made:
        first = draw()
        check(first, *labels)
        assert draw().svg == first.svg          # byte-identical: no date, fixed hash salt


def test_sweep_charts_show_outcomes_by_profile_commands_property_and_isolation():
    drawn = charts(RESULTS, ["UPDATE+UPDATE", "DELETE+UPDATE"])
    assert list(drawn) == ["outcomes-by-profile", "outcomes-by-commands",
                           "findings-by-property", "outcomes-by-isolation", "states-per-cell",
                           "time-per-cell"]
    shown = check(drawn["outcomes-by-profile"], "Cells per outcome, by profile", "cells",
                  "spark-3.5-mor-snapshot", "spark-3.5-cow-serializable +",
                  f"{LABEL[KNOWN]} (1)", f"{LABEL[EXPECTED]} (1)", f"{LABEL[VIOLATION]} (1)",
                  f"{LABEL[CLEAN]} (1)")
    assert shown.index("spark-3.5-cow-serializable\n") < shown.index("spark-3.5-mor-snapshot")
    shown = check(drawn["outcomes-by-commands"], "concurrent commands", "DELETE+UPDATE")
    # combinations in the matrix's column order, top to bottom
    assert shown.index("UPDATE+UPDATE") < shown.index("DELETE+UPDATE")
    check(drawn["findings-by-property"], "Findings per property", "undelete", "isolation",
          "lost_write", f"{LABEL[EXPECTED]} (2)", f"{LABEL[KNOWN]} (1)")
    check(drawn["outcomes-by-isolation"], "isolation level", "serializable", "snapshot")
    check(drawn["states-per-cell"], "distinct states explored (log scale)", "cells")
    check(drawn["time-per-cell"], "seconds inside its task (log scale)")
    # "known" and "expected" keep the page's own (distinct) colours in the charts
    svg = drawn["findings-by-property"].svg
    assert COLOR[KNOWN] in svg and COLOR[EXPECTED] in svg


def test_sweep_charts_without_any_finding():
    drawn = charts([result("p", "INSERT+INSERT", "serializable", CLEAN)])
    check(drawn["findings-by-property"], "(no finding)")


def test_sweep_pages_show_and_link_the_charts(tmp_path):
    write_reports(RESULTS, [], str(tmp_path), {"master": "test", "wall_seconds": 0})
    html = (tmp_path / "index.html").read_text()
    md = (tmp_path / "index.md").read_text()
    names = sorted(os.listdir(tmp_path / "charts"))
    assert len(names) == 6
    for name in names:
        svg = (tmp_path / "charts" / name).read_text()
        texts(svg)
        alt = ET.fromstring(svg.encode("utf-8")).get("aria-label")
        assert f'<img src="charts/{name}" alt="{alt}">' in html
        assert f"![{alt}](charts/{name})" in md


@pytest.fixture(scope="module")
def committed():
    with open(os.path.join(ROOT, "reports", "benchmarks.json")) as f:
        return json.load(f)


def test_benchmark_charts_from_the_committed_report(committed, tmp_path):
    from benchmarks.run import CHART_FILES, charts as bench_charts, render_md, write_report

    drawn = bench_charts(committed)
    assert set(drawn) == {"ratio", "growth"}
    shown = check(drawn["ratio"], "Speed relative to the baseline",
                  "ratio: states/s per core", "target 0.1 (issue 13)",
                  *(b["id"] for b in committed["configs"]))
    assert str(committed["configs"][0]["reduced"]["ratio"]) in shown
    writers = {c["writers"] for c in committed["growth"]["cells"]}
    check(drawn["growth"], "Growth: distinct states", "operations per writer",
          "distinct states (log scale)", "max_states bound",
          "cut: stopped at the bound", *(f"{w} writers" for w in writers))
    assert bench_charts(committed)["growth"].svg == drawn["growth"].svg

    written = write_report(committed, str(tmp_path))
    md = (tmp_path / "benchmarks.md").read_text()
    for name, file in CHART_FILES.items():
        assert str(tmp_path / file) in written
        assert f"![{drawn[name].alt}]({file})" in md
        assert (tmp_path / file).read_text() == drawn[name].svg
    assert json.loads((tmp_path / "benchmarks.json").read_text()) == committed
    # the committed report is this renderer's output, charts included
    with open(os.path.join(ROOT, "reports", "benchmarks.md")) as f:
        assert f.read() == render_md(committed, drawn)
    for file in CHART_FILES.values():
        with open(os.path.join(ROOT, "reports", file)) as f:
            assert f.read() == (tmp_path / file).read_text(), file


def test_benchmark_report_without_growth_or_configs_has_no_chart():
    from benchmarks.run import charts as bench_charts, render_md

    doc = {"machine": "m", "cores": 1, "python": "3", "date": "d", "targets": []}
    assert bench_charts(doc) == {}
    assert "![" not in render_md(doc, {})
