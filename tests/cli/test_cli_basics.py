"""srcnet: the exit code table, usage errors, configuration, connection and auth failures."""

from __future__ import annotations

import io
import re
from pathlib import Path

from cli.exit_codes import DESCRIPTIONS, ExitCode, markdown_table
from cli.main import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_doc_exit_code_table_matches_the_enum():
    text = DOC.read_text()
    assert markdown_table() in text
    documented = {int(code): name for code, name in re.findall(r"^\| (\d+) \| `([A-Z_]+)` \|", text, re.M)}
    assert documented == {code.value: code.name for code in ExitCode}
    assert set(DESCRIPTIONS) == set(ExitCode)


def test_exit_codes_are_distinct_and_as_documented():
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 130]
    assert len({int(c) for c in ExitCode}) == len(ExitCode)


def _run(argv, env=None):  # type: ignore[no-untyped-def]
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, env=env or {}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_usage_errors_exit_2_with_argparse_message_on_stderr():
    code, out, err = _run(["bogus"])
    assert code == ExitCode.USAGE == 2
    assert out == ""
    assert "invalid choice: 'bogus'" in err
    code, _, err = _run(["paths"])  # a noun without a verb
    assert code == ExitCode.USAGE
    assert "required: VERB" in err
    code, _, err = _run(["jobs", "show", "not-a-uuid"])
    assert code == ExitCode.USAGE
    assert "not a job id" in err
    code, _, err = _run(
        ["products", "create", "--scope", "s", "--name", "n", "--telescope", "T", "--file", "only-a-name"]
    )
    assert code == ExitCode.USAGE
    assert "expected NAME:SIZE:ADLER32" in err
    code, _, err = _run(["sites", "list", "--output", "yaml"])
    assert code == ExitCode.USAGE
    assert "invalid choice: 'yaml'" in err


def test_help_goes_to_stdout_and_exits_0():
    code, out, err = _run(["transfers", "watch", "--help"])
    assert code == ExitCode.OK
    assert "--timeout SEC" in out
    assert err == ""


def test_unreadable_topology_file_is_a_usage_error(tmp_path, closed_port_url):
    code, _, err = _run(
        ["topology", "import", str(tmp_path / "missing.yaml")], env={"SRCNET_URL": closed_port_url}
    )
    assert code == ExitCode.USAGE
    assert f"srcnet: cannot read {tmp_path / 'missing.yaml'}: No such file or directory" in err


def test_connection_refused_exits_6_and_names_the_url(closed_port_url):
    code, out, err = _run(["sites", "list"], env={"SRCNET_URL": closed_port_url})
    assert code == ExitCode.CONNECTION == 6
    assert out == ""
    assert err.strip() == (
        f"srcnet: cannot reach {closed_port_url}/api/topology/sites/: connection refused (check SRCNET_URL)"
    )


def test_connection_refused_with_url_flag_and_default_url_hints(closed_port_url):
    code, _, err = _run(["--url", closed_port_url, "policies", "list"])
    assert code == ExitCode.CONNECTION
    assert "connection refused (check --url)" in err
    code, _, err = _run(["policies", "list", "--url", closed_port_url])  # the flag also after the verb
    assert code == ExitCode.CONNECTION
    assert f"cannot reach {closed_port_url}/api/replicas/policies/" in err


def test_no_token_exits_5(srcnet):
    result = srcnet("sites", "list", token=None)
    assert result.code == ExitCode.AUTH == 5
    assert result.out == ""
    assert "srcnet: not authenticated: Authentication credentials were not provided." in result.err
    assert "(set SRCNET_TOKEN or pass --token, or run `srcnet auth login`)" in result.err


def test_wrong_token_exits_5(srcnet):
    result = srcnet("sites", "list", token="srcnet_" + "0" * 43)
    assert result.code == ExitCode.AUTH
    assert "not authenticated: Unknown token." in result.err


def test_token_flag_overrides_the_environment(srcnet, operator_token):
    result = srcnet("--token", operator_token, "policies", "list", token="0" * 40)
    assert result.code == ExitCode.OK, result.err


def test_scientist_reads_but_cannot_write(srcnet, scientist_token, topology, tmp_path):
    assert srcnet("sites", "list", token=scientist_token).code == ExitCode.OK
    result = srcnet(
        "products",
        "create",
        "--scope",
        "ska1-low",
        "--name",
        "obs-1",
        "--telescope",
        "SKA1-Low",
        "--file",
        "a.fits:10:0a1b2c3d",
        token=scientist_token,
    )
    assert result.code == ExitCode.AUTH
    assert "permission denied: You do not have permission to perform this action." in result.err
    assert "writes need an operator's token" in result.err
    bad = tmp_path / "t.yaml"
    bad.write_text("version: 1\n")
    assert srcnet("topology", "import", str(bad), token=scientist_token).code == ExitCode.AUTH


def test_wrong_base_url_exits_4(srcnet, live_server):
    result = srcnet("sites", "list", url=f"{live_server.url}/nowhere")
    assert result.code == ExitCode.NOT_FOUND
    assert f"srcnet: not found: GET {live_server.url}/nowhere/api/topology/sites/" in result.err


def test_an_answer_that_is_not_json_exits_1(srcnet, live_server):
    # The base URL ends in the export endpoint and a '?', so the list request gets the YAML export (HTTP 200).
    result = srcnet("sites", "list", url=f"{live_server.url}/api/topology/export/?")
    assert result.code == ExitCode.ERROR == 1
    assert "did not answer with JSON (is SRCNET_URL the control plane?)" in result.err


def test_every_command_is_documented():
    from cli.main import build_parser

    parser = build_parser()
    nouns = next(a for a in parser._actions if a.dest == "noun")
    doc = DOC.read_text()
    commands = [
        f"srcnet {noun} {verb}"
        for noun, sub in nouns.choices.items()  # type: ignore[union-attr]
        for verb in next(a for a in sub._actions if a.dest == "verb").choices  # type: ignore[union-attr]
    ]
    assert len(commands) >= 15
    assert [c for c in commands if c not in doc] == []
