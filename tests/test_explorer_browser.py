"""The explorer page in headless Chromium (Debian's chromium, driven by Playwright for Python),
served by the real command: ``icecheck explore --interactive ... --port 0``.

Needs ``/usr/bin/chromium`` (apt-get install chromium chromium-driver) and the ``browser`` extra
(``pip install -e .[browser]``); skipped with the reason otherwise. Never runs
``playwright install``. Screenshots go to a temporary folder, or to $ICECHECK_EXPLORER_SHOTS.
"""

import os
import re
import subprocess
import sys
import time

import pytest

from _browser import chromium  # noqa: E402  (skips the module without a browser)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNDELETE_TRACE = os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json")
UNDELETE = ["w1.begin#1", "w1.refresh", "w2.begin", "w1.cas", "w2.refresh", "w2.cas"]
RED = "rgb(207, 34, 46)"   # .prop.violated in static/explorer.css


def start_explorer(*args):
    """Run ``icecheck explore --interactive ARGS --port 0``; return (process, base URL)."""
    proc = subprocess.Popen([sys.executable, "-m", "icecheck", "explore", "--interactive",
                             "--port", "0", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise AssertionError(f"the explorer did not print its URL: {proc.stderr.read()}")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture()
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(30000)
    yield pg
    ctx.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = os.environ.get("ICECHECK_EXPLORER_SHOTS") or str(tmp_path_factory.mktemp("shots"))
    os.makedirs(folder, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def trace_server():
    proc, url = start_explorer("--trace", UNDELETE_TRACE)
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    save_dir = tmp_path_factory.mktemp("saved")
    proc, url = start_explorer("--profile", "spark-3.5-mor-snapshot", "--writers", "2",
                               "--ops", "1", "--mix", "delete,update,insert",
                               "--save-trace", str(save_dir))
    yield url, save_dir
    stop(proc)


def step_no(page) -> int:
    return int(page.locator("body").get_attribute("data-step"))


def property_item(page, name):
    return page.locator(f'li.prop[data-property="{name}"]')


def test_step_through_the_undelete_trace(page, trace_server, shots):
    page.goto(trace_server)
    # it opens where the anomaly shows: the last step, the row that came back marked in red
    assert step_no(page) == 6
    assert "violated" in property_item(page, "undelete").get_attribute("class")
    assert page.locator("#violation").inner_text() == "undelete is first violated at step 6 (this step)"
    back = page.locator('#table tr.anomaly[data-anomaly="undelete"]')
    assert back.count() == 1 and back.locator("td").first.inner_text() == "1"
    assert "came back: w2.1 deleted id=1" in back.locator("td.note").inner_text()
    assert back.locator("td").first.evaluate("e => getComputedStyle(e).backgroundColor") \
        == "rgb(255, 235, 233)"
    page.screenshot(path=os.path.join(shots, "explorer-undelete-opened.png"), full_page=True)
    page.click("#start")
    page.wait_for_load_state()
    assert step_no(page) == 0
    assert page.locator("#stepno").inner_text() == "step 0 of 6"
    page.screenshot(path=os.path.join(shots, "explorer-undelete-step0.png"), full_page=True)
    for k, action in enumerate(UNDELETE, 1):
        assert "holds" in property_item(page, "undelete").get_attribute("class")
        page.click(f'a.action[data-action="{action}"]')
        page.wait_for_load_state()
        assert step_no(page) == k
        assert page.locator("#diff .event").inner_text().startswith(f"step {k}: {action}")
    undelete = property_item(page, "undelete")
    assert "violated" in undelete.get_attribute("class")
    assert undelete.evaluate("e => getComputedStyle(e).color") == RED
    assert "deleted id=1" in undelete.inner_text()
    assert "known_finding" in undelete.inner_text()
    assert page.locator(".cycle").first.inner_text().startswith("cycle (G-single)")
    assert page.locator("#actions").inner_text().count("none: a final state") == 1
    # the diff of the last step is highlighted: the new snapshot, the moved pointer
    assert page.locator('#snapshots tr.d-add[data-key="snap:2001"]').count() == 1
    assert page.locator('#table .kv.d-chg[data-key="catalog"]').count() == 1
    page.screenshot(path=os.path.join(shots, "explorer-undelete-step6.png"), full_page=True)
    # back and forward move along the path; the URL encodes it, so a reload shows the same
    page.click("#back")
    page.wait_for_load_state()
    assert step_no(page) == 5
    assert "holds" in property_item(page, "undelete").get_attribute("class")
    url = page.url
    page.goto(url)
    assert step_no(page) == 5 and "at=5" in url
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(r".*path=.*w2\.cas(?!.*at=)"))
    assert step_no(page) == 6
    assert "violated" in property_item(page, "undelete").get_attribute("class")


def test_click_an_interleaving_save_it_and_replay_it(page, fresh_server, shots):
    url, save_dir = fresh_server
    page.goto(url)
    assert step_no(page) == 0
    path = ["w2.begin#1", "w1.begin", "w2.refresh", "w2.cas", "w1.refresh", "w1.cas"]
    for k, action in enumerate(path, 1):
        page.click(f'a.action[data-action="{action}"]')
        page.wait_for_load_state()
        assert step_no(page) == k
    assert "violated" in property_item(page, "undelete").get_attribute("class")
    # download the trace
    with page.expect_download() as dl:
        page.click("#download")
    downloaded = os.path.join(str(save_dir), "downloaded.json")
    dl.value.save_as(downloaded)
    # save it into the --save-trace directory
    page.fill("#name", "clicked-undelete")
    page.click('#save button[type="submit"]')
    page.wait_for_load_state()
    assert "saved the trace to" in page.locator("#notice").inner_text()
    page.screenshot(path=os.path.join(shots, "explorer-saved.png"), full_page=True)
    saved = os.path.join(str(save_dir), "clicked-undelete.json")
    assert os.path.exists(saved)
    for trace in (saved, downloaded):
        proc = subprocess.run([sys.executable, "-m", "icecheck", "replay", trace], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "undelete reproduces" in proc.stdout


def test_find_a_path_to_a_violation(page, fresh_server, shots):
    url, _ = fresh_server
    page.goto(url)
    page.click('a.action[data-action="w1.begin"]')
    page.wait_for_load_state()
    page.select_option("#goal", "property:undelete")
    page.click('#find button[type="submit"]')
    page.wait_for_load_state()
    assert "a violation of undelete: found 5 step(s) from step 1" in page.locator("#notice").inner_text()
    assert step_no(page) == 6
    assert "violated" in property_item(page, "undelete").get_attribute("class")
    page.select_option("#goal", "property:lost_write")
    page.click('#find button[type="submit"]')
    page.wait_for_load_state()
    assert "no path from step 6" in page.locator("#notice.bad").inner_text()


def test_error_page_in_the_browser(page, trace_server, shots):
    r = page.goto(trace_server + "?config=undelete-v2-mor-snapshot&path=w1.begin~w1.teleport")
    assert r.status == 400
    assert "unknown action at step 2" in page.locator("#reason").inner_text()
    r = page.goto(trace_server + "?config=undelete-v2-mor-snapshot&path=w1.begin~w2.cas")
    assert r.status == 400
    assert "action w2.cas is not enabled at step 2" in page.locator("#reason").inner_text()
    page.screenshot(path=os.path.join(shots, "explorer-error.png"), full_page=True)


def test_long_text_wraps_in_a_narrow_window(browser, trace_server):
    """Violation messages, reasons, file names and paths wrap: at 700 px wide, at the
    violating step, no panel is wider than the window."""
    ctx = browser.new_context(viewport={"width": 700, "height": 900})
    pg = ctx.new_page()
    try:
        pg.goto(trace_server + "?" + "config=undelete-v2-mor-snapshot&path="
                + "~".join(UNDELETE).replace("#", "%23"))
        assert pg.locator(".prop.violated").count() >= 1
        assert pg.locator("#table tr.anomaly").count() == 1
        widths = pg.evaluate("""() => Array.from(document.querySelectorAll(
            '.vmsg, .vwhy, .notice, section.card, #inevitable, #violation, #graph-legend'
            )).map(e => e.scrollWidth - e.clientWidth)""")
        assert widths and max(widths) <= 1, widths
        page_width = pg.evaluate("() => document.documentElement.scrollWidth")
        assert page_width <= 700, page_width
    finally:
        ctx.close()


def test_the_step_where_the_anomaly_became_inevitable(page, trace_server, shots):
    """The path bar outlines step 4 (w1's UPDATE committed: from there every completion
    undeletes) and the line under it links there; the link lands on step 4, where the property
    still holds."""
    page.goto(trace_server)
    shows = page.locator(".path a.violation")
    assert shows.count() == 1 and shows.get_attribute("data-k") == "6"
    assert "here" in shows.get_attribute("class")
    line = page.locator("#inevitable")
    assert "undelete" in line.inner_text() and "after step 4" in line.inner_text()
    marked = page.locator(".path a.inevitable")
    assert marked.count() == 1 and marked.get_attribute("data-k") == "4"
    assert marked.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
    line.locator("a").click()
    page.wait_for_load_state()
    assert step_no(page) == 4
    assert "holds" in property_item(page, "undelete").get_attribute("class")
    page.screenshot(path=os.path.join(shots, "explorer-undelete-inevitable.png"), full_page=True)


def test_a_mixed_engine_trace_named_by_its_shipped_name(page, shots):
    """``--trace NAME`` finds the shipped trace; the page opens at its violating step with the
    duplicated key's two rows marked, names each writer's engine profile, and explains the
    dependency graph's edge kinds beside it."""
    proc, url = start_explorer("--trace", "duplicate-keys-mixed-spark-merge-pyiceberg-upsert")
    try:
        page.goto(url)
        assert step_no(page) == 8
        rows = page.locator('#table tr.anomaly[data-anomaly="duplicate_keys"]')
        assert rows.count() == 2
        assert sorted(rows.nth(i).locator("td").nth(1).inner_text() for i in range(2)) \
            == ["w1.1", "w2.1"]
        assert page.locator("#profiles").inner_text() == (
            "profiles (mixed engines): w1 spark-3.5-cow-serializable, "
            "w2 pyiceberg-0.12-serializable")
        assert page.locator('.writer[data-writer="w2"] .profile').inner_text() \
            == "pyiceberg-0.12-serializable"
        legend = page.locator("#graph-legend")
        assert legend.is_visible()
        for kind in ("ww", "wr", "rw", "co"):
            assert legend.locator(f"dt.e-{kind}").inner_text() == kind
        assert "commit order" in legend.locator("dt.e-co + dd").inner_text()
        page.screenshot(path=os.path.join(shots, "explorer-mixed-duplicate.png"), full_page=True)
    finally:
        stop(proc)
