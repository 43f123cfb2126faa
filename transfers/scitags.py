"""SciTags flow identifiers (scitags.org): which experiment and activity a copy's network flows belong to,
``experiment << 6 | activity`` (65-65535), so the research networks that carry them can account for and
steer them.

The ids come from the SciTags registry's JSON (``{"experiments": [{"expName", "expId", "activities":
[{"activityName", "activityId"}]}]}``, as https://www.scitags.org/api.json publishes it), read from the file
or URL that ``SRCNET_SCITAGS["REGISTRY"]`` names (never fetched by the tests), for the experiment
``SRCNET_SCITAGS["EXPERIMENT"]``. The platform's activities (a job's FTS3 activity: "SKA Data Products" for
the telescopes' push, "SKA User Request" for a scientist's rule, ...; "relay" for a relay leg) map to the
registry's activity names by ``SRCNET_SCITAGS["ACTIVITIES"]`` (a platform activity missing there keeps its
own name). Nothing configured: no marking, and nothing else changes."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

log = logging.getLogger(__name__)

MIN_FLOW_ID, MAX_FLOW_ID = 65, 65535
MAX_EXPERIMENT_ID, MAX_ACTIVITY_ID = 1023, 63
# A relay leg (a copy via a distribution centre) is marked as such whatever its job's activity.
RELAY = "relay"
# The registry is read again after this long (Rucio's [packet-marking] fetch_interval is 48 h).
REFRESH_SECONDS = 3600.0
MAX_REGISTRY_BYTES = 4 * 1024 * 1024


class RegistryError(ValueError):
    """The registry cannot be read, or does not name the experiment; the message says what to change."""


@dataclass(frozen=True)
class Marks:
    """The experiment's id and the ids of the platform's activities in it."""

    experiment: str
    experiment_id: int
    activity_ids: dict[str, int]  # platform activity (or RELAY) -> registry activity id

    def flow_id(self, activity: str, *, relay: bool = False) -> int | None:
        """The flow identifier of a copy of ``activity`` (a relay leg's when ``relay``), or None when the
        registry has no id for it (the copy then goes unmarked, as Rucio leaves it)."""
        activity_id = self.activity_ids.get(RELAY if relay else activity)
        if activity_id is None and relay:
            activity_id = self.activity_ids.get(activity)
        return self.experiment_id << 6 | activity_id if activity_id is not None else None

    def as_registry(self) -> dict[str, Any]:
        """The marks in the registry's own format, under the platform's activity names: what Rucio's
        ``[packet-marking]`` reads (it matches a rule's activity name against ``activityName``)."""
        activities = [
            {"activityName": name, "activityId": number}
            for name, number in sorted(self.activity_ids.items(), key=lambda item: item[1])
        ]
        return {
            "experiments": [
                {"expName": self.experiment, "expId": self.experiment_id, "activities": activities}
            ]
        }


def _read(source: str, ca_file: str = "") -> Any:
    if source.startswith("https://"):
        import requests

        try:
            answer = requests.get(source, timeout=10, verify=ca_file or True)
            answer.raise_for_status()
            if len(answer.content) > MAX_REGISTRY_BYTES:
                raise RegistryError(
                    f"the SciTags registry at {source} is larger than {MAX_REGISTRY_BYTES} bytes"
                )
            return answer.json()
        except (requests.RequestException, ValueError) as exc:
            raise RegistryError(f"the SciTags registry at {source} cannot be read: {exc}") from exc
    path = Path(source)
    try:
        if path.stat().st_size > MAX_REGISTRY_BYTES:
            raise RegistryError(f"the SciTags registry {path} is larger than {MAX_REGISTRY_BYTES} bytes")
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RegistryError(f"the SciTags registry {path} cannot be read: {exc}") from exc


def _number_within(value: Any, top: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= top


def marks_from(registry: Any, experiment: str, activities: dict[str, str]) -> Marks:
    """The marks of ``experiment`` in ``registry`` (the registry's JSON, parsed): each platform activity of
    ``activities`` (platform name -> registry name; every registry activity also stands for itself)."""
    entries = registry.get("experiments") if isinstance(registry, dict) else None
    if not isinstance(entries, list):
        raise RegistryError("the SciTags registry has no 'experiments' list")
    entry = next((e for e in entries if isinstance(e, dict) and e.get("expName") == experiment), None)
    if entry is None:
        raise RegistryError(f"the SciTags registry names no experiment {experiment!r}")
    experiment_id = entry.get("expId")
    if not _number_within(experiment_id, MAX_EXPERIMENT_ID):
        raise RegistryError(f"the experiment {experiment!r} has no id from 1 to {MAX_EXPERIMENT_ID}")
    by_name: dict[str, int] = {}
    for activity in entry.get("activities") or []:
        name, number = activity.get("activityName"), activity.get("activityId")
        if isinstance(name, str) and _number_within(number, MAX_ACTIVITY_ID):
            by_name[name] = number
    ids = dict(by_name)
    for platform_name, registry_name in activities.items():
        if registry_name not in by_name:
            raise RegistryError(
                f"SRCNET_SCITAGS ACTIVITIES maps {platform_name!r} to {registry_name!r}, which the registry's"
                f" experiment {experiment!r} does not have ({', '.join(sorted(by_name)) or 'none'})"
            )
        ids[platform_name] = by_name[registry_name]
    return Marks(experiment, cast(int, experiment_id), ids)  # checked above


_cache: dict[str, tuple[float, Marks | None]] = {}
_lock = threading.Lock()


def current_marks() -> Marks | None:
    """The configured marks (read again every REFRESH_SECONDS), or None when none are configured. A
    registry that cannot be read is logged and marks nothing (a copy is never refused for its marking)."""
    from django.conf import settings

    conf = getattr(settings, "SRCNET_SCITAGS", {}) or {}
    source, experiment = str(conf.get("REGISTRY") or ""), str(conf.get("EXPERIMENT") or "")
    if not source or not experiment:
        return None
    activities = dict(conf.get("ACTIVITIES") or {})
    key = json.dumps([source, experiment, activities], sort_keys=True)
    with _lock:
        cached = _cache.get(key)
    if cached is not None and time.monotonic() - cached[0] < REFRESH_SECONDS:
        return cached[1]
    try:
        marks: Marks | None = marks_from(
            _read(source, str(conf.get("CA_FILE") or "")), experiment, activities
        )
    except RegistryError as error:
        log.warning("no SciTags marking: %s", error)
        marks = None
    with _lock:
        _cache[key] = (time.monotonic(), marks)
    return marks


def flow_id(activity: str, *, relay: bool = False) -> int | None:
    """The flow identifier of a copy of ``activity`` under the configured marks, or None."""
    marks = current_marks()
    return marks.flow_id(activity, relay=relay) if marks else None
