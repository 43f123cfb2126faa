"""SKA policy package for the Rucio server and daemons of the SRCNet platform.

Rucio 41 loads it by name from ``[policy] package = ska_rucio_policy`` (or ``RUCIO_POLICY_PACKAGE``) in the
server's and daemons' process; it must be importable there (``rucio/policy`` on ``PYTHONPATH``). The schema
adds the SKA activity list; the permissions are Rucio's generic ones but for one rule: a proprietary
product is asked for only by its project's members (``permission``, ``access``).
"""

SUPPORTED_VERSION = [">=41.0.0,<42.0.0"]
