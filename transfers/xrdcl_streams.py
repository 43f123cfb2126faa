"""The stream count of an XRootD third-party copy when the environment sets it.

The worker's own rendezvous (xrootd_tpc.py) asks the destination for the copy's streams (``tpc.str``; the
destination passes them to its pull program as ``-S N``). XrdCl's copy job, which gfal2 runs, asked for its
process-wide ``SubStreamsPerChannel`` instead, whatever gfal2's ``nbstreams`` said, and an
``XRD_SUBSTREAMSPERCHANNEL`` in the environment set that for every copy; it still wins over the copy's own
count (docs/transfers.md, "What runs on the wire"), so a deployment that pins it keeps what it pinned."""

from __future__ import annotations

import os

ENVIRONMENT = "XRD_SUBSTREAMSPERCHANNEL"


def streams_from_environment() -> int | None:
    """The streams an ``XRD_SUBSTREAMSPERCHANNEL`` in the environment asks every XRootD copy for, or None."""
    value = os.environ.get(ENVIRONMENT, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None
