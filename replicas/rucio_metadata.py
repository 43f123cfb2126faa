"""Products' metadata in Rucio: what ``RucioAdapter.register_product`` sets on a product's dataset.

Rucio's own DID columns carry it (``project``, ``datatype``, ``stream_name``), so Rucio's subscriptions can
select new datasets by them. Rucio accepts a dataset's ``datatype`` only among the values of its metadata
conventions: the platform adds its product types there, as a Rucio administrator would."""

from __future__ import annotations

from typing import Any

KEY = "datatype"


def ensure_datatype(client: Any, value: str) -> None:
    """Make ``value`` an allowed ``datatype`` of datasets in Rucio (the key first if Rucio has none)."""
    try:
        if value in (client.list_values(KEY) or []):
            return
    except Exception as exc:
        if type(exc).__name__ != "KeyNotFound":
            raise
    for call, args in ((client.add_key, (KEY, "DATASET")), (client.add_value, (KEY, value))):
        try:
            call(*args)
        except Exception as exc:  # made meanwhile (or before, for the key): nothing to do
            if type(exc).__name__ != "Duplicate":
                raise
