"""What scraping the control plane's /metrics costs, in CPU: run it beside a running local network.

    .venv/bin/python bench/metrics_cost.py --state demo --scrapes 40 [--interval 15]

It reads the web server's PID (``<state>/pids/web.pid``) and the PostgreSQL postmaster's, then measures the
CPU time (user + system, from /proc) of the web server's processes and of every PostgreSQL process over
two spans of the same length: one with back-to-back scrapes, one without. The difference over the
scrapes is the cost of one scrape; at one scrape per ``--interval`` seconds it is that share of one core.
Whatever else runs (a campaign) is in both spans, so it cancels out, up to its own variation."""

from __future__ import annotations

import argparse
import os
import ssl
import time
import urllib.request
from pathlib import Path

from localnet.stack import web_ca, web_url
from localnet.state import StateDir

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process, 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def postmaster(state: StateDir) -> int:
    return int((state.path / "pg" / "data" / "postmaster.pid").read_text().split()[0])


def usage(state: StateDir) -> tuple[float, float]:
    web = int((state.path / "pids" / "web.pid").read_text())
    return (
        sum(cpu_seconds(p) for p in tree(web)),
        sum(cpu_seconds(p) for p in tree(postmaster(state))),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", default="demo")
    parser.add_argument("--scrapes", type=int, default=40)
    parser.add_argument("--interval", type=float, default=15.0, help="the deployment's scrape interval (s)")
    args = parser.parse_args()
    state = StateDir.named(args.state)
    url = f"{web_url(state)}/metrics"
    # The web server speaks HTTPS only, with the local network's CA.
    tls = ssl.create_default_context(cafile=str(web_ca(state)))
    web0, pg0 = usage(state)
    started = time.monotonic()
    for _ in range(args.scrapes):
        with urllib.request.urlopen(url, timeout=30, context=tls) as answer:
            answer.read()
    span = time.monotonic() - started
    web1, pg1 = usage(state)
    time.sleep(span)
    web2, pg2 = usage(state)
    scrape_web = ((web1 - web0) - (web2 - web1)) / args.scrapes
    scrape_pg = ((pg1 - pg0) - (pg2 - pg1)) / args.scrapes
    per_scrape = scrape_web + scrape_pg
    print(f"{args.scrapes} scrapes in {span:.1f} s ({span / args.scrapes * 1000:.0f} ms each, wall)")
    print(f"web server CPU: {web1 - web0:.2f} s with the scrapes, {web2 - web1:.2f} s in as long without")
    print(f"PostgreSQL CPU: {pg1 - pg0:.2f} s with the scrapes, {pg2 - pg1:.2f} s in as long without")
    print(f"per scrape: {scrape_web * 1000:.1f} ms web + {scrape_pg * 1000:.1f} ms PostgreSQL")
    print(f"at one scrape every {args.interval:g} s: {per_scrape / args.interval * 100:.2f} % of one core")


if __name__ == "__main__":
    main()
