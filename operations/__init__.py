"""Operator work on the running network: the audit trail, intervention services and the live views' reads."""
