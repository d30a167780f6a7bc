"""Headless Chromium through ChromeDriver (Debian's chromium and chromium-driver), as the browser tier
drives it. tests/support/preflight.sh installs them for `make test`; tests/conftest.py stops the run in
one line before any test when a selected test needs them and they are missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("VOXWATCH_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("VOXWATCH_TEST_CHROMEDRIVER", "/usr/bin/chromedriver"))
FIXTURE = "browser"  # a test that uses it is in the browser tier (marker `browser`)


def missing() -> list[str]:
    return [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert not missing(), f"missing {', '.join(missing())}: apt-get install chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--window-size=1500,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
