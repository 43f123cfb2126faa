"""A person's browser on the booted hosts' network: run in that network's namespace (``ip netns exec <lan>
python -m tests.deploy.lan_browser ...``), since the hosts' addresses are reachable only there. It uses the
same pages as tests/tokens/sign_on.py (the issuer's login form, the device verification and consent pages),
verifies every certificate with the deployment's CA, keeps cookies, and prints what it saw as JSON.

    portal WEB CA USER PASSWORD    sign on through the portal (authorization code): /sso/login/, the issuer's
                                   login form, the callback; then GET /api/ in that session
    approve URI CA USER PASSWORD   sign on at the device verification page and grant the CLI's request
"""

from __future__ import annotations

import json
import sys
from urllib.parse import parse_qs, urlsplit

import requests

from tests.tokens.sign_on import approve_device, log_in


def browser(ca_file: str) -> requests.Session:
    session = requests.Session()
    session.verify = ca_file
    session.trust_env = False
    return session


def portal(web: str, ca_file: str, username: str, password: str) -> dict[str, object]:
    """The browser's round through the portal's sign-on, each step's answer recorded."""
    person = browser(ca_file)
    seen: dict[str, object] = {}
    start = person.get(f"{web}/sso/login/", params={"next": "/rules/"}, allow_redirects=False, timeout=30)
    seen["login_status"] = start.status_code
    to_issuer = start.headers.get("Location", "")
    seen["to_issuer"] = to_issuer
    seen["asked"] = {k: v[0] for k, v in parse_qs(urlsplit(to_issuer).query).items()}
    if start.status_code != 302:
        seen["body"] = start.text[:2000]
        return seen
    back = log_in(person, person.get(to_issuer, timeout=30), username, password)
    seen["issuer_status"] = back.status_code
    seen["to_callback"] = back.headers.get("Location", "")
    if back.status_code != 302:
        seen["body"] = back.text[:2000]
        return seen
    landed = person.get(back.headers["Location"], allow_redirects=False, timeout=30)
    seen["callback_status"] = landed.status_code
    seen["landed"] = landed.headers.get("Location", "")
    if landed.status_code != 302:
        seen["body"] = landed.text[:2000]
    api = person.get(f"{web}/api/", timeout=30)
    seen["api_status"] = api.status_code
    seen["api"] = api.json() if api.headers.get("Content-Type", "").startswith("application/json") else {}
    return seen


def main(argv: list[str]) -> int:
    command, where, ca_file, username, password = argv
    if command == "portal":
        print(json.dumps(portal(where, ca_file, username, password)))
    elif command == "approve":
        print(approve_device(browser(ca_file), where, username, password))
    else:
        print(f"unknown command {command!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
