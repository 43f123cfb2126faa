"""Malformed wanio directives stop the server at start, naming the line."""

import pytest
import wanio_harness as h


@pytest.mark.parametrize(
    "directive,fragment",
    [
        ("wanio.wb.thraeds 4", "unknown directive wanio.wb.thraeds"),
        ("wanio.wb.chunk 3m7", "invalid value '3m7' for wanio.wb.chunk"),
        ("wanio.wb.maxmem", "directive wanio.wb.maxmem expects exactly one value"),
    ],
)
def test_bad_directive_stops_server_and_names_line(scratch, directive, fragment):
    server = h.XrootdServer(scratch, "badcfg", extra=[directive])
    try:
        line = server.config_lines.index(directive) + 1
        rc = server.start(expect_failure=True)
        assert rc != 0
        log = server.log()
        assert f"line {line}: {fragment}" in log, log[-2000:]
        assert "wanio OSS wrapper initialization failed" in log
    finally:
        server.stop()


def test_bad_osslib_parameter_stops_server(scratch):
    server = h.XrootdServer(
        scratch, "badparm", plugin=False, extra=[f"ofs.osslib ++ {h.PLUGIN_REF} wb.threads=0"]
    )
    try:
        assert server.start(expect_failure=True) != 0
        assert "osslib parameter: invalid value '0' for wanio.wb.threads" in server.log()
    finally:
        server.stop()


def test_osslib_parameters_override_directives(scratch):
    server = h.XrootdServer(
        scratch,
        "goodparm",
        plugin=False,
        extra=["wanio.wb.threads 3", f"ofs.osslib ++ {h.PLUGIN_REF} wb.threads=5 wb.chunk=4m"],
    )
    with server:
        log = server.log()
        assert "=====> wanio.wb.threads 5" in log
        assert "=====> wanio.wb.chunk 4194304" in log
