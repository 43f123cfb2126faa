"""SKA policy package for the Rucio server and daemons of the SRCNet platform.

Rucio 41 loads it by name from ``[policy] package = ska_rucio_policy`` (or ``RUCIO_POLICY_PACKAGE``) in the
server's and daemons' process; it must be importable there (``rucio/policy`` on ``PYTHONPATH``). Only the
schema is customised: the SKA activity list. Permissions are Rucio's generic ones.
"""

SUPPORTED_VERSION = [">=41.0.0,<42.0.0"]
