"""The SciTags flow label on the wire (issue 35 item 3), read from the packets themselves: a root://
third-party copy over IPv6 across the emulated path, pulled by the plugin's copy program (xrdcp-wan), whose
connections to the source carry the IPv6 flow label of the copy's flow identifier (the SciTags layout,
docs/network.md); the source's host reflects it (net.ipv6.flowlabel_reflect=1, as the dtn_tuning role sets
it). The emulator sees every packet and counts them per flow label and direction (its stats file,
``flow_labels``).

The scitag reaches the pull as XRootD hands a source's CGI to its copy program: the destination URL's
``tpc.scgi`` (``scitag.flow=N``) is copied into the source URL the program is given."""

import filecmp
import os

from wanpath import emulated_path
from xrdsite import XRD_ENV, XrootdSite, plugin_built

SCITAG = 42 << 6 | 2  # 2690: the local network's experiment (42) and its telescope push (2)
MEANING = 0x3FEFC  # the label's bits that carry the experiment and the activity; the other five are entropy
SIZE = 4 << 20


def scitag_label(scitag: int) -> int:
    """The meaning bits of ``scitag``'s flow label, written from the layout's table (docs/network.md), not
    from the program's code: the experiment's 9 bits least significant first from bit 17 down, the
    activity's 6 bits at bits 7-2."""
    experiment, activity = scitag >> 6, scitag & 63
    reversed_experiment = int(f"{experiment:09b}"[::-1], 2)
    return reversed_experiment << 9 | activity << 2


def _labels(stats: dict, direction: str) -> dict[int, tuple[int, int]]:
    return {row["label"]: (row["pkts"], row["bytes"]) for row in stats[direction]["flow_labels"]}


def _grown(before: dict, after: dict, direction: str) -> dict[int, tuple[int, int]]:
    """Packets and bytes per flow label that crossed the emulator in ``direction`` between two snapshots."""
    old = _labels(before, direction)
    grown = {}
    for label, (pkts, nbytes) in _labels(after, direction).items():
        was = old.get(label, (0, 0))
        if pkts > was[0]:
            grown[label] = (pkts - was[0], nbytes - was[1])
    return grown


def _marked(grown: dict[int, tuple[int, int]], scitag: int) -> dict[int, tuple[int, int]]:
    return {label: counts for label, counts in grown.items() if label & MEANING == scitag_label(scitag)}


def test_a_copys_packets_carry_its_scitags_flow_label_both_ways(tmp_path):
    assert plugin_built(), "xrootd-plugins/build.sh first"
    assert scitag_label(SCITAG) == 0x15008  # experiment 42 = 0b000101010 -> 0b010101000 (168) << 9 | 2 << 2
    with (
        emulated_path(rtt_ms=20, rate_mbit=200, ipv6=True) as path,
        XrootdSite(path, "a", ipv6=True) as source,
        XrootdSite(path, "b", plugin=True, ipv6=True) as destination,
    ):
        for name in ("plain.bin", "marked.bin"):
            with open(source.local_path(name), "wb") as f:
                f.write(os.urandom(SIZE))
            os.chmod(source.local_path(name), 0o644)

        def tpc(name: str, scitag: int | None, ipv4: bool = False):
            src, dst = source.root_url(name), destination.root_url(name)
            if (
                ipv4
            ):  # both ends by their IPv4 addresses (the source expects the puller where the client said)
                src, dst = src.replace(source.host, path.ip_a, 1), dst.replace(destination.host, path.ip_b, 1)
            if scitag is not None:
                # The source's own (scitag.flow, the root:// convention), and the pull's: the destination's
                # tpc.scgi is the CGI the server puts into the source URL it hands to xrdcp-wan.
                src, dst = f"{src}?scitag.flow={scitag}", f"{dst}?tpc.scgi=scitag.flow={scitag}"
            done = path.run_b(
                ["xrdcp", "-f", "--tpc", "only", src, dst],
                capture_output=True,
                text=True,
                env=XRD_ENV,
                timeout=30,
            )
            assert done.returncode == 0, done.stderr[-2000:] + destination.log_tail()
            assert filecmp.cmp(source.local_path(name), destination.local_path(name), shallow=False)

        start = path.stats()
        tpc("plain.bin", None)
        middle = path.stats()
        tpc("marked.bin", SCITAG)
        end = path.stats()
        # Over IPv4 the program connects as before, scitag or not (only IPv6 connections get a label).
        tpc("marked.bin", SCITAG, ipv4=True)

    # Without a scitag the copy moved its bytes over IPv6 with the kernel's own labels (hashes), none of which
    # is the scitag's (a hash matches the 15 meaning bits by chance once in 32 768 connections; the copy
    # makes four or five).
    plain_ab, plain_ba = _grown(start, middle, "ab"), _grown(start, middle, "ba")
    assert sum(b for _, b in plain_ab.values()) >= SIZE, plain_ab
    assert not _marked(plain_ab, SCITAG) and not _marked(plain_ba, SCITAG), (plain_ab, plain_ba)

    # With it: the data (source A -> puller B) travels under the scitag's label, and so do the puller's
    # packets (B -> A); each connection to the source has its own entropy bits, the same both ways.
    marked_ab, marked_ba = _grown(middle, end, "ab"), _grown(middle, end, "ba")
    data = _marked(marked_ab, SCITAG)
    acks = _marked(marked_ba, SCITAG)
    assert sum(b for _, b in data.values()) >= SIZE, marked_ab
    # Almost everything that crossed A -> B was the copy's: the client's control connection is the rest.
    assert sum(b for _, b in data.values()) >= 0.95 * sum(b for _, b in marked_ab.values()), marked_ab
    assert sum(p for p, _ in acks.values()) > 0, marked_ba
    assert set(data) == set(acks), (data, acks)
    assert all(label <= 0xFFFFF for label in data)
