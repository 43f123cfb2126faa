"""How a copy's flow identifier is put on its URLs and headers (transfers/flow_marks.py)."""

from __future__ import annotations

import pytest

from transfers.flow_marks import http_header_group, mark_http_copy, marked_root_urls, valid


class Context:
    """What mark_http_copy asks of a gfal2 context."""

    def __init__(self) -> None:
        self.options: dict[tuple[str, str], list[str]] = {}

    def set_opt_string_list(self, group: str, key: str, values: list[str]) -> None:
        self.options[(group, key)] = values


def test_a_root_copy_carries_the_flow_on_the_source_and_in_the_destinations_scgi() -> None:
    source, destination = marked_root_urls("root://a:1094//p/f?authz=x", "root://b:1094//p/f", 2690)
    assert source == "root://a:1094//p/f?authz=x&scitag.flow=2690"
    assert destination == "root://b:1094//p/f?tpc.scgi=scitag.flow=2690"


@pytest.mark.parametrize(
    ("source", "destination", "scitag"),
    [
        ("root://a//f", "root://b//f", None),
        ("root://a//f", "root://b//f", 64),  # not a flow identifier
        ("root://a//f", "root://b//f", 65536),
        ("davs://a/f", "davs://b/f", 2690),  # HTTP: headers, not URLs
        ("root://a//f?scitag.flow=70", "root://b//f", 2690),  # a client's own mark is kept
    ],
)
def test_urls_stay_as_they_are_without_a_root_copys_flow(
    source: str, destination: str, scitag: int | None
) -> None:
    assert marked_root_urls(source, destination, scitag) == (source, destination)


def test_an_http_copy_sends_the_header_to_the_destination_and_on_to_the_source() -> None:
    ctx = Context()
    assert mark_http_copy(ctx, "davs://storage.example.org:8443/p/f", 2690) == [
        "SciTag: 2690",
        "TransferHeaderSciTag: 2690",
    ]
    assert ctx.options == {
        ("DAV:STORAGE.EXAMPLE.ORG", "HEADERS"): ["SciTag: 2690", "TransferHeaderSciTag: 2690"]
    }
    assert (
        mark_http_copy(Context(), "root://b//f", 2690) == []
        and mark_http_copy(Context(), "davs://b/f", None) == []
    )


def test_gfal2s_group_names_the_protocol_without_its_s_and_the_host() -> None:
    assert http_header_group("https://h.example:443/x") == "HTTP:H.EXAMPLE"
    assert http_header_group("davs://10.0.0.1:8443/x") == "DAV:10.0.0.1"
    assert valid(65) == 65 and valid(65535) == 65535 and valid(0) is None
