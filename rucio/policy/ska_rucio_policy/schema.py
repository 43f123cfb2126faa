"""The generic schema of Rucio 41 with the SKA activities added.

Rucio's generic schema accepts only a fixed list of activity names (``ACTIVITY`` enum). A rule's schema
refers to ``ACTIVITY`` through a ``SchemaRef``, which Rucio resolves in this module first, so redefining
``ACTIVITY`` here is enough for rules; ``SCHEMAS['activity']`` (used to validate subscriptions) is a plain
dict in the generic module, so ``SCHEMAS`` is copied with it replaced.
"""

from rucio.common.schema import generic

SKA_ACTIVITIES = [
    "SKA Data Products",
    "SKA Data Challenge",
    "SKA Calibration",
    "SKA Reprocessing",
    "SKA User Request",
]

# The generic activities stay valid (Rucio's own tools and daemons use some, e.g. "User Subscriptions").
ACTIVITY = {
    "description": "Activity name",
    "type": "string",
    "enum": SKA_ACTIVITIES + [a for a in generic.ACTIVITY["enum"] if a not in SKA_ACTIVITIES],
}

SCHEMAS = dict(generic.SCHEMAS)
SCHEMAS["activity"] = ACTIVITY
