"""Names and limits shared by the topology models."""

import ipaddress

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

# Site and link names: letters, digits, dot, dash, underscore; start with a letter.
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9._-]*$"
# Storage endpoint names follow Rucio's RSE naming (upper case), so they can be mirrored as RSEs.
RSE_NAME_PATTERN = r"^[A-Z0-9][A-Z0-9_-]*$"
MAX_RTT_MS = 2000.0
GBIT = 1_000_000_000

name_validator = RegexValidator(NAME_PATTERN, "Use letters, digits, '.', '-' or '_', starting with a letter.")
rse_validator = RegexValidator(
    RSE_NAME_PATTERN, "Use upper-case letters, digits, '-' or '_' (a Rucio RSE name)."
)

# A storage endpoint's host: a DNS name (RFC 1123 labels) or an IPv4 address; nothing that could carry a
# path, credentials or a port into the URLs built from it. (An IPv6 host is reached by its DNS name: the
# URLs are built as scheme://host:port/.)
HOSTNAME_PATTERN = (
    r"^(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
)
# A storage path prefix: /segment/.../ of letters, digits, '.', '-', '_' (no '.' or '..' segments).
PREFIX_PATTERN = r"^/(?:(?!\.{1,2}/)[A-Za-z0-9._-]+/)*$"
hostname_validator = RegexValidator(HOSTNAME_PATTERN, "Use a DNS host name or an IPv4 address.")
# A token audience: a host name, host:port or an https:// URL (no spaces, quotes or commas: it is written into
# the storage's token configuration and into scope names).
audience_validator = RegexValidator(
    r"^(https://)?[A-Za-z0-9]([A-Za-z0-9.-]{0,200})(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]{0,40})?$",
    "Use a host name, host:port or an https:// URL.",
)
prefix_validator = RegexValidator(
    PREFIX_PATTERN,
    "Use /segment/.../ of letters, digits, '.', '-' or '_', starting and ending with '/', "
    "without '.' or '..'.",
)


def mock_storage_allowed() -> bool:
    """Whether storage endpoints of the mock kind may be registered and copied to (``SRCNET_MOCK_STORAGE``:
    only the control plane's load benchmark and its tests turn it on)."""
    return bool(getattr(settings, "SRCNET_MOCK_STORAGE", False))


def routable_storage_host(host: str) -> None:
    """Refuse a storage host that names this machine or its link (``localhost``, loopback, link-local,
    unspecified or multicast addresses): in a deployment, a copy to or from it would reach the worker's own
    host, not a site. The local network, whose sites all listen on loopback, allows them
    (``SRCNET_ALLOW_LOCAL_STORAGE``, set by ``localnet`` for its own processes)."""
    if getattr(settings, "SRCNET_ALLOW_LOCAL_STORAGE", False):
        return
    name = host.lower().rstrip(".")
    local = name == "localhost" or name.endswith(".localhost")
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        address = None
    if address is not None:
        local = address.is_loopback or address.is_link_local or address.is_unspecified or address.is_multicast
    if local:
        raise ValidationError(
            f"{host!r} is this machine or its local link, not a storage site a deployment can reach "
            "(loopback, link-local, unspecified and multicast addresses and 'localhost' are refused).",
            code="local_storage_host",
        )
