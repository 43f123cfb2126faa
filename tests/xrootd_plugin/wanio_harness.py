"""Real-process harness for the wanio XRootD plugin integration tests.

Starts real `xrootd` servers on 127.0.0.1 (as the unprivileged `xrootd` user),
runs real `xrdcp`/`xrdfs`/`gfal-copy` clients, and always cleans up: servers
are stopped by the PID we started, mounts are unmounted, temp dirs removed.
Only the Python standard library and subprocess are used.
"""

import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "xrootd-plugins"
BUILD_DIR = PLUGIN_DIR / "build"
PLUGIN_LIB = BUILD_DIR / "libXrdWanIO-5.so"
# The loader is given the unversioned name and finds the "-5" file itself.
PLUGIN_REF = BUILD_DIR / "libXrdWanIO.so"
TPC_PROGRAM = BUILD_DIR / "xrdcp-wan"

CLIENT_ENV = {
    "XRD_CONNECTIONRETRY": "1",
    "XRD_CONNECTIONWINDOW": "3",
    "XRD_REQUESTTIMEOUT": "120",
    "XRD_STREAMTIMEOUT": "60",
    "GFAL_PYTHONBIN": "/usr/bin/python3",
}
SERVER_USER = "xrootd"
MiB = 1 << 20
GiB = 1 << 30


def ensure_built():
    """Builds the plugin with the project's build script (a fast no-op when up to date)."""
    subprocess.run([str(PLUGIN_DIR / "build.sh")], check=True, stdout=subprocess.DEVNULL, timeout=1800)
    assert PLUGIN_LIB.exists() and TPC_PROGRAM.exists()


def client_env(**extra):
    env = dict(os.environ)
    env.update(CLIENT_ENV)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(cmd, timeout=300, check=True, env=None, **kw):
    """Runs a client command with a hard time limit; returns CompletedProcess."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or client_env(), **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed rc={proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}")
    return proc


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def adler32_file(path, block=8 * MiB):
    value = 1
    with open(path, "rb") as f:
        while True:
            data = f.read(block)
            if not data:
                return f"{value:08x}"
            value = zlib.adler32(data, value)


def make_file(path, size, seed=1):
    """Writes `size` pseudo-random bytes (fast: repeats a random 1 MiB block with a
    per-block counter so no two blocks are equal)."""
    base = bytes(random_block(seed))
    with open(path, "wb") as f:
        left, n = size, 0
        while left > 0:
            block = n.to_bytes(8, "little") + base[8:]
            f.write(block[: min(left, len(block))])
            left -= min(left, len(block))
            n += 1
    return path


def random_block(seed):
    import random

    rng = random.Random(seed)
    return rng.randbytes(MiB)


def chown_tree(path):
    pw = pwd.getpwnam(SERVER_USER)
    for root, _dirs, files in os.walk(path):
        for entry in [root] + [os.path.join(root, f) for f in files]:
            with contextlib.suppress(FileNotFoundError):
                os.lchown(entry, pw.pw_uid, pw.pw_gid)


class XrootdServer:
    """One real xrootd process on 127.0.0.1:<port>, with or without the plugin."""

    def __init__(self, base, name, plugin=True, extra=(), tpc_program=None, data_dir=None, http_port=None):
        unique, n = name, 1
        while (Path(base) / unique).exists():  # several servers of one name per module
            n += 1
            unique = f"{name}{n}"
        name = unique
        self.base = Path(base) / name
        self.name = name
        self.port = free_port()
        self.http_port = http_port
        self.data = Path(data_dir) if data_dir else self.base / "data"
        self.plugin = plugin
        self.proc = None
        for d in ("admin", "run", "logs"):
            (self.base / d).mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        if tpc_program is None:
            tpc_program = str(TPC_PROGRAM) + " --server" if plugin else "/usr/bin/xrdcp --server"
        lines = [
            "all.export /",
            f"oss.localroot {self.data}",
            f"all.adminpath {self.base}/admin",
            f"all.pidpath {self.base}/run",
            f"all.sitename {name}",
            f"xrd.port {self.port}",
            "xrd.network nodnr",
            "xrootd.chksum adler32",
            f"ofs.tpc autorm echo pgm {tpc_program}",
        ]
        if plugin:
            lines.append(f"ofs.osslib ++ {PLUGIN_REF}")
        lines.extend(extra)
        self.config_lines = lines
        self.config = self.base / "xrootd.cfg"
        self.config.write_text("\n".join(lines) + "\n")
        chown_tree(self.base)
        chown_tree(self.data)

    @property
    def url(self):
        return f"root://127.0.0.1:{self.port}/"

    @property
    def log_path(self):
        # The server's stderr: no -l, whose log-rotation thread races XRootD 5.5's start-up putenv calls
        # (localnet/xrootd.py says how).
        return self.base / "logs" / "xrootd.log"

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self, expect_failure=False, timeout=20, popen=subprocess.Popen, ready=None):
        """Starts xrootd; `popen`/`ready` let a caller run it elsewhere (e.g. inside a
        network namespace of bench/wan) and probe its port there."""
        ready = ready or (lambda: port_open(self.port))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = popen(
                ["xrootd", "-R", SERVER_USER, "-c", str(self.config), "-n", self.name],
                cwd=str(self.base),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if expect_failure:
                    return self.proc.returncode
                raise AssertionError(f"xrootd exited rc={self.proc.returncode}\n{self.log()}")
            if not expect_failure and ready():
                return 0
            time.sleep(0.1)
        if expect_failure:
            raise AssertionError("xrootd kept running although its config is invalid")
        raise AssertionError(f"xrootd did not open port {self.port}\n{self.log()}")

    def kill(self):
        """SIGKILL, as a crash would."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=20)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.proc = None

    def cpu_seconds(self):
        """utime+stime of the server process (clock ticks -> seconds)."""
        if self.proc is None:
            raise RuntimeError("the server is not running")
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def query_checksum(self, path):
        out = run(["xrdfs", f"127.0.0.1:{self.port}", "query", "checksum", path], timeout=120).stdout.split()
        assert out[0] == "adler32", out
        return out[1]

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


def port_open(port):
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def scratch_dir(prefix="wanio-it-"):
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def small_tmpfs(path, size):
    """Mounts a tmpfs of `size` at `path` and always unmounts it."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)], check=True, timeout=30
    )
    try:
        yield path
    finally:
        rc = subprocess.run(["umount", str(path)], timeout=60).returncode
        if rc != 0:
            subprocess.run(["umount", "-l", str(path)], timeout=60)


def wait_for(predicate, timeout, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def stored_xattr(path):
    """Decodes user.XrdCks.adler32 (as XrdCksData) -> (adler hex, fmTime) or None."""
    try:
        raw = os.getxattr(path, "user.XrdCks.adler32")
    except OSError:
        return None
    name = raw[:16].split(b"\0")[0].decode()
    fm_time = int.from_bytes(raw[16:24], "big")
    length = raw[31]
    value = raw[32 : 32 + length].hex()
    assert name == "adler32" and length == 4, raw
    return value, fm_time


def strace_server(server, action, syscalls, options, out_name):
    """Runs action() with strace (`options` plus the syscalls to trace) attached to every
    thread of the server and following new ones; returns strace's output text."""
    out = server.base / out_name
    tids = os.listdir(f"/proc/{server.proc.pid}/task")
    cmd = ["strace", "-f", *options, "-e", "trace=" + ",".join(syscalls), "-o", str(out)]
    for tid in tids:
        cmd += ["-p", tid]
    tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # let strace attach to all threads
        action()
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=30)
    return out.read_text()


def count_syscalls(server, action, syscalls):
    """Runs action() under strace -c; returns {syscall: calls} over all server threads."""
    counts = {}
    for line in strace_server(server, action, syscalls, ["-c"], "strace.txt").splitlines():
        parts = line.split()
        if parts and parts[-1] in syscalls and len(parts) >= 5:
            counts[parts[-1]] = int(parts[3])
    return counts


def trace_syscalls(server, action, syscalls):
    """Runs action() under strace; returns the calls as (thread id, name, arguments) in the
    order strace saw them."""
    calls = []
    for line in strace_server(server, action, syscalls, ["-s", "0"], "strace-calls.txt").splitlines():
        m = re.match(r"(\d+)\s+(?:<\.\.\. )?(\w+)\(?(.*)", line)
        if m and m.group(2) in syscalls:
            calls.append((int(m.group(1)), m.group(2), m.group(3)))
    return calls


def evict(path):
    """Drops a file's pages from the page cache, so the next read comes from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # only clean pages can be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
