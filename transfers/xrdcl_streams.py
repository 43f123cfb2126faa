"""The stream count of an XRootD third-party copy, which XrdCl takes from its process-wide settings.

gfal2 hands its ``nbstreams`` to XrdCl as a copy-job property that XrdCl 5.5's third-party copy never reads:
the copy asks the destination for as many streams as XrdCl's ``SubStreamsPerChannel`` setting says (the
destination passes it to its pull program as ``-S N``). So for the length of one copy the setting is the
copy's stream count, and afterwards what it was. The setting is per process, and so is a copy here: the
workers' prefork pool runs one copy per process at a time.

Side effect, measured (docs/transfers.md): channels XrdCl opens during the copy, the worker's own session
with the destination among them, get the same number of connections; they are idle and XrdCl closes them
after its time-to-live."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

SETTING = "SubStreamsPerChannel"


@contextmanager
def tpc_streams(streams: int) -> Iterator[int]:
    """XrdCl asks third-party copies for ``streams`` streams inside the block; yields the count it will
    ask for (an ``XRD_SUBSTREAMSPERCHANNEL`` in the environment wins over the call and is reported)."""
    from XRootD import client

    before = int(client.EnvGetInt(SETTING) or 1)
    client.EnvPutInt(SETTING, int(streams))
    try:
        yield int(client.EnvGetInt(SETTING) or 1)
    finally:
        client.EnvPutInt(SETTING, before)
