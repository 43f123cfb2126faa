"""Run Rucio's real conveyor daemons in-process: submitter, then poller + finisher until done.

Run with the Rucio server's interpreter and configuration (``localnet.rucio.run_conveyor`` does this):

    RUCIO_CONFIG=<state>/rucio/<instance>/rucio.cfg PYTHONPATH=rucio/policy \\
        .venv-rucio/bin/python rucio/conveyor.py --rounds 1 [--until-rule RULE_ID ...] [--timeout 120]

In-process calls avoid the CLI daemons' fixed partition waits (``partition_wait_time=0``) and let the
poller look at requests of any age (``older_than=0``). The daemons talk to the database directly and to
the FTS3 endpoint named in each RSE's ``fts`` attribute. Prints one JSON line: rounds run and rule states.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time


def _rule_states(rule_ids: list[str]) -> dict[str, str]:
    from rucio.core.rule import get_rule

    return {rule_id: str(get_rule(rule_id)["state"].name) for rule_id in rule_ids}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=1, help="cycles to run when no --until-rule is given")
    parser.add_argument(
        "--until-rule", action="append", default=[], help="run until this rule leaves REPLICATING"
    )
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--interval", type=float, default=0.5, help="pause between poll cycles")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    from rucio.daemons.conveyor.finisher import finisher
    from rucio.daemons.conveyor.poller import poller
    from rucio.daemons.conveyor.submitter import submitter

    deadline = time.monotonic() + args.timeout
    rounds = 0
    states: dict[str, str] = {}
    while True:
        rounds += 1
        submitter(once=True, partition_wait_time=0)
        poller(once=True, older_than=0, partition_wait_time=0)
        finisher(once=True, partition_wait_time=0)
        if args.until_rule:
            states = _rule_states(args.until_rule)
            if all(state != "REPLICATING" for state in states.values()):
                break
        elif rounds >= args.rounds:
            break
        if time.monotonic() > deadline:
            break
        time.sleep(args.interval)
    if args.until_rule:
        states = _rule_states(args.until_rule)
    print(json.dumps({"rounds": rounds, "rules": states}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
