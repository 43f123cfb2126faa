"""The local network's SciTags marking (transfers/scitags.py): its example registry (localnet/data; the ids
are the local network's, not the published registry's) and the map of the platform's activities to it."""

from __future__ import annotations

import json
from pathlib import Path

REGISTRY = Path(__file__).resolve().parent / "data" / "scitags-registry.json"
EXPERIMENT = "ska-local"
ACTIVITIES = {
    "SKA Data Products": "telescope push",
    "SKA User Request": "scientist request",
    "SKA Reprocessing": "reprocessing",
    "SKA Data Challenge": "data challenge",
    "SKA Calibration": "calibration",
    "relay": "relay leg",
}


def scitags_env() -> dict[str, str]:
    """SRCNET_SCITAGS_* for the local network's processes (a deployment sets its own)."""
    return {
        "SRCNET_SCITAGS_REGISTRY": str(REGISTRY),
        "SRCNET_SCITAGS_EXPERIMENT": EXPERIMENT,
        "SRCNET_SCITAGS_ACTIVITIES": json.dumps(ACTIVITIES),
    }
