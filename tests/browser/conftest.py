"""Browser tests: Debian's headless Chromium driven by Selenium through Debian's chromedriver, against
pytest-django's live server on the test PostgreSQL. Screenshots go to test-artifacts/screenshots/."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import ARTIFACTS

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SCREENSHOTS = ARTIFACTS / "screenshots"


@pytest.fixture(scope="session", autouse=True)
def _close_connections_after_requests() -> None:
    """The live server's request threads close their connections (CONN_MAX_AGE would keep them open and
    block dropping the test database at the end of the session)."""
    from django.db import connections

    connections.settings["default"]["CONN_MAX_AGE"] = 0


@pytest.fixture(scope="session")
def browser() -> Iterator[WebDriver]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail(f"{CHROMIUM} and {CHROMEDRIVER} are needed (scripts/bootstrap.sh installs them)")
    # Chromium's profile and its temporary files (its singleton socket folder, left in /tmp at every run
    # otherwise) in a folder of this session's, removed at its end.
    scratch = Path(tempfile.mkdtemp(prefix="srcnet-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1440,1000"):
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={scratch / 'profile'}")
    service = Service(CHROMEDRIVER, env={**os.environ, "TMPDIR": str(scratch)})
    try:
        driver = webdriver.Chrome(service=service, options=options)
        driver.set_page_load_timeout(30)
        try:
            yield driver
        finally:
            driver.quit()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def users(transactional_db, django_user_model):  # type: ignore[no-untyped-def]
    operator = django_user_model.objects.create_user("operator", password="operator-pw", is_staff=True)
    scientist = django_user_model.objects.create_user("scientist", password="scientist-pw")
    return {"operator": operator, "scientist": scientist}


@pytest.fixture
def login(browser: WebDriver, live_server) -> Callable[[str], None]:  # type: ignore[no-untyped-def]
    """Log in through the login form (a fresh session each time)."""

    def _login(username: str) -> None:
        browser.delete_all_cookies()
        browser.get(live_server.url + "/login/")
        browser.find_element(By.NAME, "username").send_keys(username)
        browser.find_element(By.NAME, "password").send_keys(f"{username}-pw")
        browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        WebDriverWait(browser, 15).until(ec.presence_of_element_located((By.CSS_SELECTOR, "span.user")))

    return _login


@pytest.fixture
def shoot(browser: WebDriver) -> Callable[[str], Path]:
    """Save a screenshot of the page as test-artifacts/screenshots/<name>.png."""

    def _shoot(name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        target = SCREENSHOTS / f"{name}.png"
        browser.save_screenshot(str(target))
        return target

    return _shoot


def details_heading(browser: WebDriver) -> str | None:
    """The map's details panel heading, read in one script: the panel is re-rendered on every click, so an
    element found first and read after may be the old panel's, gone stale in between."""
    return browser.execute_script(  # type: ignore[no-any-return]
        "const h = document.querySelector('#details h2'); return h ? h.textContent : null;"
    )


def wait(browser: WebDriver, css: str, timeout: float = 15) -> WebElement:
    return WebDriverWait(browser, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def press_and_wait_for_the_answer(browser: WebDriver, button: WebElement, timeout: float = 15) -> None:
    """Press a form's button and wait until the browser shows the page the server answered with.

    The old page is marked with a script variable that the new document will not have. Selenium's
    ``staleness_of`` is not enough: while Chrome swaps documents, asking about the old page's element can
    fail with "Node with given id does not belong to the document", an unknown error rather than a stale
    reference (CI, 2026-11-27). Any WebDriver error during the swap is asked again; a page that never comes
    still fails after ``timeout``."""
    browser.execute_script("window.srcnetPageBeforeSubmit = true;")
    button.click()

    def answered(driver: WebDriver) -> bool:
        return bool(
            driver.execute_script(
                "return window.srcnetPageBeforeSubmit === undefined && document.readyState === 'complete';"
            )
        )

    WebDriverWait(browser, timeout, ignored_exceptions=(WebDriverException,)).until(answered)
