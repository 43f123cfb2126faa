"""One of Rucio's conveyor daemons (submitter, poller or finisher), running until SIGTERM.

Started and stopped by ``localnet.rucio`` with the Rucio server (one process each, beside Rucio's own
``rucio-judge-evaluator`` and ``rucio-judge-repairer`` scripts), with the server's interpreter and
configuration:

    RUCIO_CONFIG=<state>/rucio/<instance>/rucio.cfg PYTHONPATH=rucio/policy \\
        .venv-rucio/bin/python rucio/conveyor.py submitter --sleep-time 2 --topology-ttl 0

It calls the daemon function of the installed Rucio (``rucio.daemons.conveyor.<daemon>``) as its
command-line script (``rucio-conveyor-submitter`` etc.) does: Rucio's logging set-up, the database
revision check, SIGTERM to the daemon's own ``stop()``, ``once=False``. It sets three things the scripts do
not let one set:

- ``partition_wait_time=0``: the scripts wait 10 s before the first cycle, so that several instances of a
  daemon can share the work by heartbeats; the local network runs one instance of each;
- the lifetime of the daemon's topology cache (RSE attributes such as the ``fts`` endpoint, protocols,
  distances): the scripts keep it 300 s, so for five minutes after an RSE changed a transfer may still be
  sent to its former FTS3 endpoint (and stay SUBMISSION_FAILED for two hours). The local network changes
  RSEs often (each test session syncs them), so ``--topology-ttl`` is 0 by default: a topology read
  afresh each cycle, which sees every change made before the rule;
- how soon the poller asks again about a transfer it asked about (``--poll-again-after``, 3 s). Rucio's
  poller, in its long-running loop, leaves a transfer it asked about alone for 600 s
  (``rucio.core.request.get_and_mark_next(processed_at_delay=600)``, a parameter the poller does not pass
  on): a production deployment hears of finished transfers at once from FTS3's messages
  (``rucio-conveyor-receiver``, through a message broker) and polls only as a fallback. The platform's FTS3
  service sends no messages, so here the poller is how Rucio learns, and it must ask sooner: the poller's
  calls get ``processed_at_delay`` set to this value.

The daemons talk to the database directly and to the FTS3 endpoint named in each RSE's ``fts`` attribute,
presenting ``[conveyor] usercert`` to an ``https://`` endpoint.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import signal
import sys
from typing import Any

DAEMONS = ("submitter", "poller", "finisher")


def poll_again_after(seconds: int) -> None:
    """Make the poller ask about a transfer again ``seconds`` after it last asked (Rucio: 600 s; see the
    module's docstring): its calls to ``get_and_mark_next`` get ``processed_at_delay=seconds``."""
    from rucio.core import request as request_core

    fetch = request_core.get_and_mark_next

    @functools.wraps(fetch)
    def get_and_mark_next(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("processed_at_delay", seconds)
        return fetch(*args, **kwargs)

    request_core.get_and_mark_next = get_and_mark_next


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("daemon", choices=DAEMONS)
    parser.add_argument("--sleep-time", type=int, default=2, help="seconds between cycles with little work")
    parser.add_argument("--topology-ttl", type=int, default=0, help="seconds the RSE topology is cached")
    parser.add_argument(
        "--group-bulk", type=int, default=200, help="submitter: files of a rule and destination per FTS3 job"
    )
    parser.add_argument(
        "--older-than", type=int, default=0, help="poller: poll transfers submitted this many seconds ago"
    )
    parser.add_argument(
        "--poll-again-after",
        type=int,
        default=3,
        help="poller: seconds before it asks about a transfer again",
    )
    args = parser.parse_args(argv)

    import rucio.db.sqla.util
    from rucio.common.logging import setup_logging
    from rucio.core.topology import ExpiringObjectCache, Topology

    module = importlib.import_module(f"rucio.daemons.conveyor.{args.daemon}")
    signal.signal(signal.SIGTERM, module.stop)
    setup_logging(process_name=module.DAEMON_NAME)
    if rucio.db.sqla.util.is_old_db():
        print("the Rucio database was not upgraded: the daemon does not start", file=sys.stderr)
        return 1
    common = {
        "once": False,
        "partition_wait_time": 0,
        "sleep_time": args.sleep_time,
        "cached_topology": ExpiringObjectCache(ttl=args.topology_ttl, new_obj_fnc=Topology),
    }
    try:
        if args.daemon == "submitter":
            module.submitter(group_bulk=args.group_bulk, **common)
        elif args.daemon == "poller":
            poll_again_after(args.poll_again_after)
            module.poller(older_than=args.older_than, **common)
        else:
            module.finisher(**common)
    except KeyboardInterrupt:
        module.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
