"""The sweep's HTML report in headless Chromium (Playwright for Python, Debian's chromium):
it renders the matrix with the expected cells and its charts (a screenshot goes to a temporary
folder or $ICECHECK_SWEEP_SHOTS), and every link on it (and on the trace pages it links to)
resolves. Served by a local http.server on 127.0.0.1. Skipped with the reason
when Playwright or Chromium is missing; never runs ``playwright install``."""

import functools
import http.server
import os
import threading
from urllib.parse import urljoin, urlparse

import pytest

from _browser import chromium  # noqa: E402  (skips the module without a browser)

from icecheck.sweep.report import write_reports
from icecheck.sweep.runner import run_cell
from icecheck.sweep.space import Filters, cells, load_space



@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep-report")
    cs, na = cells(load_space(), Filters(
        profiles=("spark-3.5-mor-snapshot", "spark-3.5-cow-serializable", "pyiceberg-0.12-snapshot"),
        catalogs=("cas", "last_writer_wins"), formats=(2,),
        commands=("DELETE+UPDATE", "UPDATE+COMPACT")))
    results = [run_cell(c) for c in cs]
    (out / "results.parquet").mkdir()       # the report links the Parquet folder
    write_reports(results, na, str(out), {"master": "test", "wall_seconds": 0})
    return out, results, na


@pytest.fixture(scope="module")
def server(report):
    out = report[0]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """Where the screenshots go: a temporary folder, or $ICECHECK_SWEEP_SHOTS."""
    folder = os.environ.get("ICECHECK_SWEEP_SHOTS") or str(tmp_path_factory.mktemp("shots"))
    os.makedirs(folder, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def page():
    with chromium() as b:
        pg = b.new_page()
        pg.set_default_timeout(30000)
        yield pg


def test_matrix_renders_expected_cells(page, server, report):
    _, results, na = report
    resp = page.goto(server + "index.html")
    assert resp.status == 200
    cells_ = page.locator("#matrix td.cell[data-status]")
    assert cells_.count() == len(results)
    status = {(c.get_attribute("data-profile"), c.get_attribute("data-catalog"),
               c.get_attribute("data-combo")): c.get_attribute("data-status")
              for c in cells_.all()}
    assert status[("spark-3.5-mor-snapshot", "cas", "DELETE+UPDATE")] == "known_finding"
    assert status[("spark-3.5-cow-serializable", "cas", "DELETE+UPDATE")] == "clean"
    assert status[("spark-3.5-cow-serializable", "last_writer_wins", "DELETE+UPDATE")] == "expected"
    assert page.locator("#matrix td.cell", has_text="n/a").count() == len(na)
    assert page.locator("#matrix").is_visible()


def test_charts_are_drawn_in_the_page(page, server, shots):
    """The charts (SVG files under charts/, drawn by matplotlib) load as images and show in a
    screenshot: the known finding's orange and the expected anomaly's blue, the page's own
    colours, are among the pixels of the chart area."""
    import io

    from PIL import Image

    from icecheck.sweep.report import COLOR, EXPECTED, KNOWN

    page.goto(server + "index.html")
    imgs = page.locator("#charts img")
    assert imgs.count() == 6
    for img in imgs.all():
        assert img.get_attribute("alt")
        assert img.evaluate("i => i.complete && i.naturalWidth > 0"), img.get_attribute("src")
    area = page.locator("#charts")
    area.scroll_into_view_if_needed()
    assert area.is_visible()
    png = area.screenshot(path=os.path.join(shots, "sweep-charts.png"))
    pixels = {rgb for _, rgb in Image.open(io.BytesIO(png)).convert("RGB").getcolors(1 << 24)}
    for status in (KNOWN, EXPECTED):
        h = COLOR[status]
        assert tuple(int(h[i:i + 2], 16) for i in (1, 3, 5)) in pixels, status


def test_every_link_resolves(page, server):
    page.goto(server + "index.html")
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    assert hrefs
    trace_pages = []
    for href in sorted(set(hrefs)):
        url = urljoin(server + "index.html", href)
        if href.startswith("#"):
            assert page.locator(f"[id='{href[1:]}']").count() == 1, href
            continue
        assert urlparse(url).hostname == "127.0.0.1", href     # no external link
        resp = page.request.get(url)
        assert resp.status == 200, href
        if href.startswith("traces/") and href.endswith(".html"):
            trace_pages.append(url)
    assert trace_pages
    # click the known finding's cell: its timeline page, with text and SVG timelines
    page.locator("#matrix td[data-status='known_finding'] a").first.click()
    page.wait_for_load_state()
    assert "/traces/" in page.url
    assert "undelete" in page.locator("#timeline-text").inner_text() or \
        "VIOLATED" in page.locator("#timeline-text").inner_text()
    for url in trace_pages:
        resp = page.goto(url)
        assert resp.status == 200
        assert page.locator("#timeline-text").count() == 1
        for href in page.eval_on_selector_all("a[href]",
                                              "els => els.map(e => e.getAttribute('href'))"):
            target = urljoin(url, href)
            if "#" in href:
                target, frag = target.split("#", 1)
                page.goto(target)
                assert page.locator(f"[id='{frag}']").count() == 1, href
            else:
                assert page.request.get(target).status == 200, href


def test_cell_list_filters_and_sorts(page, server, report):
    """The cell list is a table one can filter (any text of a row) and sort (numbers by value)."""
    _, results, _ = report
    page.goto(server + "index.html")
    rows = page.locator("#details tbody tr")
    assert rows.count() == len(results)
    page.fill("#filter", "last_writer_wins")
    visible = [r for r in rows.all() if r.is_visible()]
    assert visible and len(visible) < len(results)
    assert all("last_writer_wins" in r.inner_text() for r in visible)
    assert page.locator("#shown").inner_text().startswith(f"{len(visible)} of {len(results)}")
    page.fill("#filter", "")
    page.locator("#details thead th", has_text="states").click()
    states = [int(r.locator("td").nth(6).inner_text()) for r in rows.all()]
    assert states == sorted(states)
    page.locator("#details thead th", has_text="states").click()
    states = [int(r.locator("td").nth(6).inner_text()) for r in rows.all()]
    assert states == sorted(states, reverse=True)


def test_known_and_expected_have_distinct_colours():
    from icecheck.sweep.report import BG, COLOR, EXPECTED, KNOWN

    def rgb(h):
        return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))

    def dist(a, b):
        return sum((x - y) ** 2 for x, y in zip(rgb(a), rgb(b))) ** 0.5

    assert dist(COLOR[KNOWN], COLOR[EXPECTED]) > 150 and dist(BG[KNOWN], BG[EXPECTED]) > 20
