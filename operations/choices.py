"""Enumerations of the operations app."""

from django.db import models


class AuditAction(models.TextChoices):
    PAUSE_PATH = "pause_path", "Pause a path"
    RESUME_PATH = "resume_path", "Resume a path"
    JOB_PRIORITY = "job_priority", "Change a job's priority"
    PRODUCT_PRIORITY = "product_priority", "Change a product's priority"
    CANCEL_JOB = "cancel_job", "Cancel a job"
    REROUTE_PRODUCT = "reroute_product", "Re-route a product"
    EDIT_POLICY = "edit_policy", "Create or edit a replica policy"
    ISSUE_TOKEN = "issue_token", "Make a personal API token"
    REVOKE_TOKEN = "revoke_token", "Revoke a personal API token"
    CHECK_STORAGE = "check_storage", "Start a storage consistency check"
    REMOVE_DARK_FILE = "remove_dark_file", "Remove a dark file from storage"
    KEEP_DARK_FILE = "keep_dark_file", "Keep a dark file"


class TargetType(models.TextChoices):
    PATH = "path", "Network path"
    JOB = "job", "Transfer job"
    PRODUCT = "product", "Data product"
    POLICY = "policy", "Replica policy"
    TOKEN = "token", "Personal API token"
    STORAGE = "storage", "Storage endpoint"
    STORAGE_FILE = "storage_file", "File at a storage endpoint"
