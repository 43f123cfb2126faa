"""Request bodies recorded from the real programs (shared/reference/rucio-fts.md, sections 1.2 and 1.3)."""

import copy
from typing import Any

RUCIO_SUBMISSION: dict[str, Any] = {
    "files": [
        {
            "sources": ["root://127.0.0.1:21094//rucio/feas/2f/94/file1.dat"],
            "destinations": ["root://127.0.0.1:21095//rucio/feas/2f/94/file1.dat"],
            "metadata": {
                "request_id": "38fd33e511264f3c9a98eab11d7ec96f",
                "scope": "feas",
                "name": "file1.dat",
                "activity": "User Subscriptions",
                "request_type": "TRANSFER",
                "src_type": "DISK",
                "dst_type": "DISK",
                "src_rse": "XRD_A",
                "dst_rse": "XRD_B",
                "src_rse_id": "06a0",
                "dest_rse_id": "513e",
                "filesize": 1048576,
                "md5": "0fee2ff9",
                "adler32": "4782d438",
            },
            "filesize": 1048576,
            "checksum": "ADLER32:4782d438",
            "selection_strategy": "orderly",
            "activity": "User Subscriptions",
        }
    ],
    "params": {
        "account": "root",
        "verify_checksum": "both",
        "copy_pin_lifetime": None,
        "bring_online": None,
        "job_metadata": {"issuer": "rucio", "multi_sources": False, "overwrite_when_only_on_disk": False},
        "overwrite": True,
        "overwrite_when_only_on_disk": False,
        "priority": 3,
        "s3alternate": True,
        "max_time_in_queue": 168,
    },
}

FTS3_CLIENT_SUBMISSION: dict[str, Any] = {
    "params": {
        "verify_checksum": "both",
        "reuse": None,
        "destination_spacetoken": None,
        "bring_online": None,
        "dst_file_report": False,
        "archive_timeout": None,
        "copy_pin_lifetime": None,
        "job_metadata": {"issuer": "ska-cp"},
        "source_spacetoken": None,
        "overwrite": False,
        "overwrite_on_retry": False,
        "overwrite_when_only_on_disk": False,
        "overwrite_hop": False,
        "multihop": False,
        "retry": 2,
        "retry_delay": 0,
        "priority": 4,
        "strict_copy": False,
        "disable_cleanup": False,
        "max_time_in_queue": "6h",
        "timeout": 3600,
        "id_generator": "standard",
        "sid": None,
        "s3alternate": False,
        "nostreams": 4,
        "buffer_size": 8388608,
        "unmanaged_tokens": False,
    },
    "files": [
        {
            "sources": ["davs://aus.example.org/ska/f1"],
            "destinations": ["davs://uk.example.org/ska/f1"],
            "checksum": "ADLER32:0cc737eb",
            "filesize": 1000,
            "activity": "ska-push",
            "metadata": {"obs_id": "obs-1"},
            "selection_strategy": "auto",
        }
    ],
}

RUCIO_POLL_FIELDS = ",".join(
    [
        "file_state",
        "dest_surl",
        "finish_time",
        "start_time",
        "staging_start",
        "staging_finished",
        "reason",
        "source_surl",
        "file_metadata",
    ]
)


def body(template: dict, **params) -> dict:  # type: ignore[type-arg]
    """A deep copy of a recorded body with some params changed."""
    out = copy.deepcopy(template)
    out["params"].update(params)
    return out
