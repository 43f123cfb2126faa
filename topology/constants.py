"""Names and limits shared by the topology models."""

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
