"""Headless Chromium for the browser tests: Debian's chromium driven by Playwright for Python.

Importing this module skips the importing test module when Playwright or Chromium is missing
(bin/test installs both; never `playwright install`, which downloads browsers)."""

import contextlib
import os

import pytest

CHROMIUM = os.environ.get("ICECHECK_CHROMIUM", "/usr/bin/chromium")
# The flags this machine needs: no sandbox as root, and no background connections, which the
# closed network refuses.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="Playwright for Python is not installed (pip install -e '.[browser]')")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium chromium-driver)",
                allow_module_level=True)


@contextlib.contextmanager
def chromium():
    """A launched headless Chromium browser, closed on exit."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
