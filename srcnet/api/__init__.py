"""Shared REST API furniture: permissions, pagination, error format, base viewsets."""
