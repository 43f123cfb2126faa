#!/usr/bin/env python3
"""UDP round-trip probe (no ping binary on the target machines).

``rttprobe.py serve PORT`` echoes datagrams; ``rttprobe.py probe HOST PORT
COUNT INTERVAL_S`` sends COUNT probes and prints one JSON line with the RTTs
in ms (min/median/mean/max and how many were lost).  Run each side inside a
namespace with EmulatedPath.popen_b / run_a.
"""

import json
import socket
import statistics
import sys
import time


def serve(port: int, idle_timeout: float = 60.0) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    s.settimeout(idle_timeout)  # never outlive a forgotten test by much
    while True:
        try:
            data, peer = s.recvfrom(2048)
        except TimeoutError:
            return
        if data == b"quit":
            return
        s.sendto(data, peer)


def probe(host: str, port: int, count: int, interval: float) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    rtts = []
    for i in range(count):
        tag = i.to_bytes(4, "big")
        t0 = time.perf_counter()
        s.settimeout(max(2.0, interval * 4))
        try:
            s.send(tag + b"x" * 60)
            while True:
                data = s.recv(2048)
                if data[:4] == tag:  # ignore late answers to older probes
                    rtts.append((time.perf_counter() - t0) * 1e3)
                    break
        except (TimeoutError, ConnectionRefusedError):
            pass  # lost, or the echo server is not listening yet
        rest = interval - (time.perf_counter() - t0)
        if rest > 0:
            time.sleep(rest)
    q = statistics.quantiles(rtts, n=10) if len(rtts) >= 2 else [None] * 9
    return {
        "count": count,
        "received": len(rtts),
        "p10_ms": q[0],
        "p90_ms": q[8],
        "min_ms": min(rtts) if rtts else None,
        "median_ms": statistics.median(rtts) if rtts else None,
        "mean_ms": statistics.fmean(rtts) if rtts else None,
        "max_ms": max(rtts) if rtts else None,
    }


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif sys.argv[1] == "probe":
        print(json.dumps(probe(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))))
    else:
        sys.exit("usage: rttprobe.py serve PORT | probe HOST PORT COUNT INTERVAL_S")
