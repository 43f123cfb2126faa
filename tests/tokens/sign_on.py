"""A person at the local issuer's web pages, as a browser would be: its login form, and the device
verification and consent pages. Only what Keycloak's pages need; the platform's side is never short-cut."""

from __future__ import annotations

import html
import re
from urllib.parse import urljoin

import requests

FORM = re.compile(r"<form\b[^>]*\baction=\"([^\"]+)\"[^>]*>(.*?)</form>", re.S | re.I)
INPUT = re.compile(r"<input\b[^>]*>", re.I)
ATTRIBUTE = re.compile(r"(\w[\w-]*)=\"([^\"]*)\"")


def forms(page: str) -> list[tuple[str, dict[str, str], str]]:
    """Each form's action, its hidden and named inputs' values, and its body."""
    found = []
    for action, body in FORM.findall(page):
        values = {}
        for tag in INPUT.findall(body):
            attrs = dict(ATTRIBUTE.findall(tag))
            if "name" in attrs and attrs.get("type", "text") not in ("submit", "button"):
                values[attrs["name"]] = html.unescape(attrs.get("value", ""))
        found.append((html.unescape(action), values, body))
    return found


def log_in(
    browser: requests.Session, page: requests.Response, username: str, password: str
) -> requests.Response:
    """Fill the issuer's login form on ``page``; returns the answer (a redirect, not followed)."""
    login = [f for f in forms(page.text) if "password" in f[1]]
    assert login, f"no login form at {page.url}: {page.text[:500]}"
    action, values, _ = login[0]
    values.update(username=username, password=password)
    return browser.post(urljoin(page.url, action), data=values, allow_redirects=False, timeout=30)


def approve_device(browser: requests.Session, verification_uri: str, username: str, password: str) -> str:
    """Sign on at the device verification page and grant the CLI's request; returns the final page."""
    page = browser.get(verification_uri, timeout=30)
    for _ in range(6):
        found = forms(page.text)
        if any("password" in values for _, values, _ in found):
            page = log_in(browser, page, username, password)
        elif any('name="accept"' in body for _, _, body in found):
            action, values, _ = next(f for f in found if 'name="accept"' in f[2])
            page = browser.post(urljoin(page.url, action), data={**values, "accept": "Yes"}, timeout=30)
            continue
        else:
            return page.text
        while page.is_redirect:
            page = browser.get(urljoin(page.url, page.headers["Location"]), timeout=30)
    return page.text
