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


def wait_replaced(driver, element, timeout: float = 20) -> None:
    """Wait until a navigation has replaced the document holding `element`, and the new one has loaded.

    Selenium's staleness_of asks the old element whether it is enabled; while the old document is being
    torn down ChromeDriver can answer "Node with given id does not belong to the document" (an unknown
    error, not a stale element), which says the same thing: the element's document is gone."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def gone(_driver) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e):
                return True
            raise
        return False

    WebDriverWait(driver, timeout).until(gone)
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.readyState") == "complete")
