"""The Fast Open preload (xrootd-plugins/src/preload/FastOpenPreload.cc), which the sites' xrootd runs
with: every outgoing TCP connection of the process asks for TCP Fast Open before its connect(), and any
other socket connects as before. A real process (Python) with the built library preloaded."""

import subprocess
import sys

import wanio_harness as h

PRELOAD = h.BUILD_DIR / "libwanio_fastopen.so"
TCP_FASTOPEN_CONNECT = 30  # linux/tcp.h

# Connects a TCP socket, a Unix stream socket and a UDP socket; prints the TCP socket's Fast Open option,
# and that the others connected.
PROGRAM = f"""
import os, socket, tempfile
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
tcp = socket.socket()
tcp.connect(server.getsockname())
accepted, _ = server.accept()
tcp.sendall(b"x")
assert accepted.recv(1) == b"x"
print(tcp.getsockopt(socket.IPPROTO_TCP, {TCP_FASTOPEN_CONNECT}))
path = os.path.join(tempfile.mkdtemp(), "s")
unix_server = socket.socket(socket.AF_UNIX)
unix_server.bind(path)
unix_server.listen()
unix = socket.socket(socket.AF_UNIX)
unix.connect(path)
print("unix connected")
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.connect(("127.0.0.1", 9))
print("udp connected")
"""


def run(preload: bool) -> list[str]:
    env = {"PATH": "/usr/bin:/bin", **({"LD_PRELOAD": str(PRELOAD)} if preload else {})}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.split("\n")[:3]


def test_a_preloaded_process_asks_fast_open_on_its_tcp_connections_and_connects_the_rest_as_before():
    assert PRELOAD.exists(), f"{PRELOAD} is not built (bash xrootd-plugins/build.sh)"
    assert run(preload=True) == ["1", "unix connected", "udp connected"]
    # The same program without it: the option is the preload's doing.
    assert run(preload=False) == ["0", "unix connected", "udp connected"]
