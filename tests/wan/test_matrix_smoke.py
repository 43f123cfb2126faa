"""bench/wan/matrix.py at tiny sizes (its smoke run in `make test`): every tool copies across an emulated
path between token-enforcing sites with the tokens it needs, and between sites without tokens, checksums
checked; what it cannot do with tokens it refuses up front."""

import json
import os
import subprocess
import sys

MATRIX = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench/wan/matrix.py")
)
FILE_TOOLS = ("xrdcp-up", "xrdcp-down", "xrd-tpc", "gfal-copy", "davix-put", "davix-get")


def _matrix(test_state, *options: str, timeout: float = 80) -> subprocess.CompletedProcess:
    # The sites trust the session's issuer: the matrix asks for the issuer of the state SRCNET_STATE names.
    env = dict(os.environ, SRCNET_STATE=test_state.path.name)
    return subprocess.run(
        [sys.executable, MATRIX, *options],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_every_tool_copies_with_and_without_tokens(tmp_path, test_state, wan_issuer):
    out = tmp_path / "matrix.json"
    run = _matrix(
        test_state,
        "--rtt", "7.5", "--rate", "200", "--tools", "iperf3," + ",".join(FILE_TOOLS), "--iperf-seconds", "2",
        "--sizes", "1M", "--batch", "2x1M", "--batch-tool", "xrdcp-up", "--batch-modes", "simultaneous",
        "--plugin", "on", "--tokens", "on,off", "--out", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    cells = json.loads(out.read_text())["cells"]
    copies = {(c["tool"], c["mode"], c["tokens"]): c for c in cells if c["tool"] != "iperf3"}
    wanted = {(tool, "single", tokens) for tool in FILE_TOOLS for tokens in ("on", "off")}
    wanted |= {("xrdcp-up", "simultaneous", tokens) for tokens in ("on", "off")}
    assert set(copies) == wanted
    failed = {key: c["error"] for key, c in copies.items() if not (c["ok"] and c["adler32_ok"])}
    assert failed == {}
    # Nothing a tool said, nor the results, holds a token.
    assert "eyJ" not in out.read_text() and "eyJ" not in run.stdout
    # The Markdown table says which rows had tokens.
    assert "| tokens |" in run.stdout and "| on | on | single |" in run.stdout


def test_a_recursive_batch_with_tokens_is_refused_with_the_reason(tmp_path, test_state):
    run = _matrix(
        test_state, "--batch-modes", "recursive", "--tokens", "on", "--out", str(tmp_path / "m.json")
    )
    assert run.returncode == 2
    assert "--batch-modes recursive needs --tokens off" in run.stderr
    assert not (tmp_path / "m.json").exists()
