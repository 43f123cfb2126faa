"""Django settings of the control plane.

Every deployment value comes from the environment (``SRCNET_*``). On one machine, ``localnet`` records the
ports of its private PostgreSQL and Redis in ``<state>/runtime.json`` and the defaults below read it, so
``manage.py``, the Celery workers, the web server and the tests agree without any hand-written config.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from srcnet.local_state import DJANGO_SECRET_KEY, POSTGRES_PASSWORD, REDIS_PASSWORD, runtime_for, secret_for
from srcnet.workers import copy_slots

BASE_DIR = Path(__file__).resolve().parent.parent
_runtime = runtime_for()
_ports = _runtime.get("ports", {})


def _env(name: str, default: str) -> str:
    return os.environ.get(f"SRCNET_{name}", default)


# From the environment (a deployment's vault), else the local network's own random key (localnet makes it
# with its PostgreSQL and Redis and hands it to the platform's processes), else a random key for this
# process alone: never a value anyone could know (sessions and password-reset links are signed with it).
SECRET_KEY = _env("SECRET_KEY", "") or secret_for(DJANGO_SECRET_KEY) or secrets.token_urlsafe(50)
DEBUG = _env("DEBUG", "0") == "1"
ALLOWED_HOSTS = _env("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")
# Storage endpoints at loopback or link-local addresses are refused (topology/constants.py); the local
# network, whose sites listen on loopback, allows them for its own processes (localnet.stack.service_env).
SRCNET_ALLOW_LOCAL_STORAGE = _env("ALLOW_LOCAL_STORAGE", "0") == "1"
# Storage endpoints of the mock kind (gfal2's mock plugin: copies that move no bytes, transfers/mock_storage)
# serve only the control plane's load benchmark and its tests: refused, naming this setting, unless it is on.
SRCNET_MOCK_STORAGE = _env("MOCK_STORAGE", "0") == "1"
# The fraction of mock copies that fail (a destination checksum that does not match, as a corrupted copy
# would), each attempt drawn anew, so that the service's retries are exercised and most of them succeed.
SRCNET_MOCK_FAILURE_FRACTION = float(_env("MOCK_FAILURE_FRACTION", "0"))
# Failed sign-ins (identity.limits): this many for one account from one address, or for any accounts from
# one address, within the window lock that account there, or that address, until the oldest leaves it.
SRCNET_SIGN_IN_FAILURES_PER_ACCOUNT = int(_env("SIGN_IN_FAILURES_PER_ACCOUNT", "5"))
SRCNET_SIGN_IN_FAILURES_PER_ADDRESS = int(_env("SIGN_IN_FAILURES_PER_ADDRESS", "20"))
SRCNET_SIGN_IN_WINDOW_SECONDS = int(_env("SIGN_IN_WINDOW_SECONDS", "900"))
# Personal API tokens (identity/tokens.py): their default and longest lifetimes, and how many live tokens one
# account may hold.
SRCNET_API_TOKEN_DEFAULT_DAYS = int(_env("API_TOKEN_DEFAULT_DAYS", "30"))
SRCNET_API_TOKEN_MAX_DAYS = int(_env("API_TOKEN_MAX_DAYS", "365"))
SRCNET_API_TOKENS_PER_ACCOUNT = int(_env("API_TOKENS_PER_ACCOUNT", "50"))
# The audiences a token issuer's JWT must name to open the REST API (identity/issuer_tokens.py); empty: the
# API takes no issuer tokens.
SRCNET_API_TOKEN_AUDIENCES = _env("API_TOKEN_AUDIENCES", "").split()
# Single sign-on through the token issuer (identity/oidc.py, identity/sso.py): the portal's confidential
# client (authorization code with PKCE) and the CLI's public one (device code). Without ISSUER and
# CLIENT_ID there is none, and local passwords serve everyone; with them, only admins' (identity/backends.py).
SRCNET_SSO = {
    "ISSUER": _env("SSO_ISSUER", ""),
    "CLIENT_ID": _env("SSO_CLIENT_ID", ""),
    "CLIENT_SECRET": _env("SSO_CLIENT_SECRET", ""),
    "CA_FILE": _env("SSO_CA_FILE", ""),
    "SCOPES": _env("SSO_SCOPES", "openid profile email"),
    "GROUPS_CLAIM": _env("SSO_GROUPS_CLAIM", "wlcg.groups"),
    "CLI_CLIENT_ID": _env("SSO_CLI_CLIENT_ID", ""),
    "NAME": _env("SSO_NAME", "SKA-IAM"),
}
AUTHENTICATION_BACKENDS = ["identity.backends.LocalPasswordBackend"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    # Celery beat's schedule in the database: the periodic tasks below and recurring campaigns.
    "django_celery_beat",
    "srcnet",
    "topology",
    "projects",
    "replicas",
    "transfers",
    "schedulers",
    "operations",
    "campaigns",
    "monitoring",
    "rules",
    "identity",
    "consistency",
]

MIDDLEWARE = [
    "transfers.fts3.middleware.MergeSlashesMiddleware",
    # FTS3 endpoint request counts and latency (monitoring/middleware.py)
    "monitoring.middleware.Fts3MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = _env("ROOT_URLCONF", "srcnet.urls")
WSGI_APPLICATION = "srcnet.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "srcnet" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _env("DB_NAME", "srcnet"),
        "USER": _env("DB_USER", "srcnet"),
        # A deployment's from its environment; on one machine, the local network's own (its processes get it
        # in SRCNET_DB_PASSWORD): no built-in password, which the local PostgreSQL would refuse anyway.
        "PASSWORD": _env("DB_PASSWORD", secret_for(POSTGRES_PASSWORD)),
        "HOST": _env("DB_HOST", "127.0.0.1"),
        "PORT": _env("DB_PORT", str(_ports.get("postgres", 5432))),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "TEST": {"NAME": _env("DB_TEST_NAME", "test_srcnet")},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# Bulk FTS3 submissions of 10 000 files are a few MB of JSON.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(_env("MAX_REQUEST_BYTES", str(64 * 1024 * 1024)))

STATIC_URL = "static/"
STATIC_ROOT = Path(_env("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Personal API tokens and token issuers' JWTs (identity/authentication.py), then the portal's session.
        "identity.authentication.PlatformTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "srcnet.api.permissions.TokenScoped",
        "srcnet.api.permissions.ReadAnyAuthenticatedWriteStaff",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "srcnet.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "srcnet.api.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "srcnet.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "SRCNet control plane API",
    "DESCRIPTION": "Topology, data products, replica policies and transfers of the SKA SRC network.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Choice sets that share a field name (scope, state, kind) get names of their own, not hashed suffixes.
    "ENUM_NAME_OVERRIDES": {
        "SiteKindEnum": "topology.choices.SiteKind",
        "TokenScopeEnum": "identity.models.TokenScope",
        "TransferFileStateEnum": "transfers.choices.FileState",
        "TransferJobStateEnum": "transfers.choices.JobState",
        "ConsistencyCheckModeEnum": "consistency.choices.CheckMode",
    },
}

# A deployment's broker URL (with its password) from the environment; on one machine, the local network's
# Redis with the password it made (readable by the state's owner; its services get the URL in
# SRCNET_REDIS_URL).
_redis_password = secret_for(REDIS_PASSWORD)
_redis_auth = f":{_redis_password}@" if _redis_password else ""
CELERY_BROKER_URL = _env("REDIS_URL", f"redis://{_redis_auth}127.0.0.1:{_ports.get('redis', 6379)}/0")
# One queue per deployment: concurrent test runs sharing a Redis must not take each other's tasks.
CELERY_TASK_DEFAULT_QUEUE = _env("CELERY_QUEUE", "srcnet")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fix-up closes every database connection before and after each task unless this is set:
# a new PostgreSQL backend (a fork, its authentication, cold catalogue caches) for every task, at a hundred
# tasks a second most of the database's CPU (issue 33). Workers keep their connections as the web server
# does, CONN_MAX_AGE with its health check applied around each task (srcnet.celery); the fix-up's own close
# then comes only every this many tasks.
CELERY_DB_REUSE_MAX = 1000
# Beat runs with django_celery_beat's DatabaseScheduler (``localnet.stack.BEAT_SCHEDULER``): it copies
# these entries into its PeriodicTask table at start and also fires the recurring campaigns' tasks.
# Seconds between push cycles (the beat's; a cycle also runs when a push job ends, SRCNET_PUSH_ON_SETTLE).
# Simulated campaigns replan as often (schedulers.simulations.simulate_workload).
SRCNET_PUSH_INTERVAL = float(_env("PUSH_INTERVAL", "30"))
CELERY_BEAT_SCHEDULE = {
    # A sweep that picks up retries whose back-off has elapsed and work whose message was lost.
    "transfers-dispatch-sweep": {"task": "transfers.dispatch", "schedule": 5.0},
    "transfers-optimizer": {
        "task": "transfers.optimize",
        "schedule": float(_env("OPTIMIZER_INTERVAL", "60")),
    },
    # Attempts whose worker died (no heartbeat) fail and retry; those whose message was lost are sent again.
    "transfers-reap-lost-attempts": {
        "task": "transfers.reap_lost_attempts",
        "schedule": float(_env("REAP_INTERVAL", "15")),
    },
    # The push loop: plan what waits at the SDPs and submit what is due.
    "schedulers-push-cycle": {
        "task": "schedulers.push_cycle",
        "schedule": SRCNET_PUSH_INTERVAL,
    },
    # Rule state and scientists' own rules into replicas; does nothing unless SRCNET_RUCIO_URL is set.
    "replicas-follow-rucio-rules": {
        "task": "replicas.follow_rucio_rules",
        "schedule": float(_env("RUCIO_FOLLOW_INTERVAL", "60")),
    },
    # Jobs submitted to an external FTS3 (SRCNET_TRANSFERTOOL=fts3): settle their replicas from its answers.
    "schedulers-poll-external-jobs": {
        "task": "schedulers.poll_external_jobs",
        "schedule": float(_env("FTS3_POLL_INTERVAL", "60")),
    },
    # The fireflies' ended flows into network accounting; does nothing unless SRCNET_FIREFLIES_URL is set.
    "monitoring-account-flows": {
        "task": "monitoring.account_flows",
        "schedule": float(_env("FIREFLIES_ACCOUNT_INTERVAL", "30")),
    },
    # Storage consistency: a check of each active endpoint whose last one is older than its period.
    "consistency-schedule-checks": {
        "task": "consistency.schedule_checks",
        "schedule": float(_env("CONSISTENCY_SCHEDULE_INTERVAL", "600")),
    },
}

# Storage consistency checks (consistency/, docs/reliability.md "Storage consistency"): every active endpoint
# is checked once per PERIOD_HOURS by MODE ("list": finds dark files too; "stat": the known replicas only);
# CHECKSUM_FRACTION of the files found whole have their adler32 read again from their bytes; a file unknown
# to the platform is dark only when older than DARK_GRACE_HOURS (copies in flight never are). A check
# RUNNING for longer than STALE_HOURS died with its worker: the next one starts anyway.
SRCNET_CONSISTENCY = {
    "PERIOD_HOURS": float(_env("CONSISTENCY_PERIOD_HOURS", "24")),
    "MODE": _env("CONSISTENCY_MODE", "list"),
    "CHECKSUM_FRACTION": float(_env("CONSISTENCY_CHECKSUM_FRACTION", "0.01")),
    "DARK_GRACE_HOURS": float(_env("CONSISTENCY_DARK_GRACE_HOURS", "24")),
    "STALE_HOURS": float(_env("CONSISTENCY_STALE_HOURS", "12")),
}

# A push job that ends asks for the next push cycle at once (its lane is free), instead of leaving the lane
# idle until the beat's next cycle. The tests' worker turns it off: the tests drive the loop's cycles.
SRCNET_PUSH_ON_SETTLE = _env("PUSH_ON_SETTLE", "1") == "1"

# Lane health (schedulers/lane_health.py, scheduler.md "When a lane breaks"): a lane whose last FAILURES
# settled push copies failed on the way (not for their source) is left out of the plans until COOL_OFF
# seconds after its last failure (then the next product on it is the probe), a success, or its links up; a
# product goes back to the SDP queue at most MAX_REROUTES times, then fails with every reason.
SRCNET_LANE_HEALTH = {
    "FAILURES": int(_env("LANE_FAILURES", "1")),
    "COOL_OFF_SECONDS": float(_env("LANE_COOL_OFF", "300")),
    "WINDOW_SECONDS": float(_env("LANE_WINDOW", "3600")),
    "MAX_REROUTES": int(_env("MAX_REROUTES", "3")),
}

# Where simulation reports (and later campaign reports) are written.
SRCNET_REPORTS_DIR = Path(_env("REPORTS_DIR", str(BASE_DIR / ".state" / "reports")))

# How far back each round of replicas.follow_rucio_rules looks for changed rules (seconds; overlapping rounds
# are harmless, the sync is idempotent).
SRCNET_RUCIO_FOLLOW_WINDOW = float(_env("RUCIO_FOLLOW_WINDOW", "600"))

# The VO the FTS3 endpoint reports (deterministic job ids are derived from it, as in FTS3).
SRCNET_FTS3_VO = _env("FTS3_VO", "ska")
# The audiences (space-separated) under which the FTS3 endpoint takes a token issuer's JWTs as credentials:
# its host name, as Rucio's conveyor asks its issuer (audience = the FTS3 URL's host, scope "fts"). Empty:
# the endpoint takes no issuer tokens (API tokens and client certificates still work).
SRCNET_FTS3_TOKEN_AUDIENCES = _env("FTS3_TOKEN_AUDIENCES", "").split()

# The transfertool the platform's own flows submit through: "embedded" (the transfer service in-process,
# the default) or "fts3" (any FTS3 REST endpoint, e.g. a production FTS3, with a bearer token or an X.509
# certificate; its jobs are followed by the schedulers.poll_external_jobs task).
SRCNET_TRANSFERTOOL = {
    "KIND": _env("TRANSFERTOOL", "embedded"),
    "FTS3_URL": _env("FTS3_URL", ""),
    "FTS3_TOKEN": _env("FTS3_TOKEN", ""),
    "FTS3_CERT": _env("FTS3_CERT", ""),
    "FTS3_KEY": _env("FTS3_KEY", ""),
    # A CA bundle or directory to verify the endpoint with; "0" does not verify; empty: the system's.
    "FTS3_CA": _env("FTS3_CA", ""),
}

# How many products one lane (source site -> destination site) carries at once: the next one's files wait at
# the transfer service behind the current one's and take each file slot as it frees (schedulers/lane_load.py).
SRCNET_LANE_DEPTH = int(_env("LANE_DEPTH", "2"))


def _positive(name: str, default: str) -> float:
    """A positive finite number from SRCNET_<name>; anything else stops the process naming the setting."""
    import math

    from django.core.exceptions import ImproperlyConfigured

    text = _env(name, default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ImproperlyConfigured(f"SRCNET_{name} must be a positive number, not {text!r}")
    return value


def _positive_int(name: str, default: str) -> int:
    """A positive whole number from SRCNET_<name>; anything else stops the process naming the setting."""
    from django.core.exceptions import ImproperlyConfigured

    text = _env(name, default)
    if not text.isdigit() or int(text) < 1:
        raise ImproperlyConfigured(f"SRCNET_{name} must be a positive whole number, not {text!r}")
    return int(text)


# How many products may wait at one telescope's SDP to be handed on (registered, not yet planned onto a lane)
# before the REST API refuses more with 429 and a Retry-After (replicas/backlog.py, docs/api.md): a burst of
# registrations waits at the SDP's client rather than growing the queue each push cycle plans without bound.
# The issue-33 scale: a push cycle over 1 000 000 waiting products stays under its interval.
SRCNET_REGISTRATION_BACKLOG = _positive_int("REGISTRATION_BACKLOG", "1000000")

# How many products of each telescope's SDP queue one push cycle plans, in the planner's order (a rolling
# horizon, schedulers/snapshot.py head_of_queue): the rest wait for later cycles, so a cycle's cost does not
# grow with the queue (docs/scheduler.md). Far more than a cycle can hand on.
SRCNET_PLAN_HORIZON_PRODUCTS = _positive_int("PLAN_HORIZON_PRODUCTS", "2000")

# The network under the platform carries 1/scale of the topology's capacities: 1 in production, the
# long-haul local network's CAPACITY_SCALE (1000) when it runs there. The push loop plans on the scaled
# capacities, site budgets and telescope volumes, so its rates, streams and arrival times are the wire's.
SRCNET_NETWORK_SCALE = _positive("NETWORK_SCALE", "1")

# What the sites' network is, for the flow simulator that simulated campaigns run (schedulers/simulations.py,
# docs/campaigns.md): the sites' TCP congestion control (bbr, as the dtn_tuning role deploys it, or cubic:
# how a full link is shared between paths of different RTTs) and the paths' MTU (the IP and TCP headers'
# share of a link: 9000, jumbo frames, in production; the long-haul local network runs 1500). Checked
# where they are used (an unknown value is an ImproperlyConfigured naming the setting).
SRCNET_SITES_CONGESTION_CONTROL = _env("SITES_CONGESTION_CONTROL", "bbr")
SRCNET_NETWORK_MTU = _env("NETWORK_MTU", "9000")

# The push plan's copies in flight per lane (schedulers/plan_settings.py, docs/scheduler.md): the most copies
# a lane keeps at once (a 100 Gbit/s lane of 1 GiB files wants more than 8), and what one cold copy costs
# before it carries its share. SRCNET_PLAN_COPIES_IN_FLIGHT=0 keeps a lane to one product's files at once
# (the plan before the copy model, for comparison).
SRCNET_PLAN_MAX_FILES = _env("PLAN_MAX_FILES", "8")
SRCNET_PLAN_COPY_OVERHEAD_S = _env("PLAN_COPY_OVERHEAD_S", "0.2")
SRCNET_PLAN_COPY_SETUP_RTTS = _env("PLAN_COPY_SETUP_RTTS", "4")
SRCNET_PLAN_COPIES_IN_FLIGHT = _env("PLAN_COPIES_IN_FLIGHT", "1")
# 1: a telescope's lanes share its access link by the work each has in sight, so that they drain together
# (schedulers/planning/backlog.py); 0 (the default, measured no better): by the policy's shares.
SRCNET_PLAN_DRAIN_TOGETHER = _env("PLAN_DRAIN_TOGETHER", "0")
# Paced copies: > 0 has each push copy ask its source site to pace it at this multiple of its share of the
# lane's planned rate (the plan's rate over the lane's copies; wanio.pace in the source URL, which the wanio
# plugin holds under the site's own pacing), so that lanes into one access link split it as planned, not
# as TCP's RTT unfairness does; 0 (the default): each copy takes what TCP gets under the site's pacing.
SRCNET_PACE_COPIES = 0.0 if _env("PACE_COPIES", "0") in ("", "0") else _positive("PACE_COPIES", "0")

# How the push loop hands a due leg on: "transfertool" (a transfer job through SRCNET_TRANSFERTOOL) or "rucio"
# (a Rucio rule at the leg's destination, carried out by Rucio's daemons through the FTS3 endpoint the RSEs
# name; the plan's link limits are still set on that endpoint through the transfertool).
SRCNET_PUSH_THROUGH = _env("PUSH_THROUGH", "transfertool")

# Transfer execution (the embedded transfer service).
SRCNET_TRANSFERS = {
    "DEFAULT_MAX_ACTIVE_PER_LINK": int(_env("MAX_ACTIVE_PER_LINK", "4")),
    # Copies the deployment's workers run at once (srcnet/workers.py): the dispatcher admits no more.
    "COPY_SLOTS": copy_slots(),
    "DEFAULT_RETRIES": int(_env("TRANSFER_RETRIES", "2")),
    "RETRY_BACKOFF_SECONDS": float(_env("TRANSFER_RETRY_BACKOFF", "2")),
    # A copy whose destination file has not grown for this long (seconds) is cancelled as stalled (a cut or
    # black-holed path; transfers/stall_watch.py): a no-progress timeout, so slow but moving copies go on.
    "STALL_SECONDS": float(_env("TRANSFER_STALL", "300")),
    # The same watch looks at the destination's size this often (seconds, at most; at least every fifth of
    # STALL_SECONDS): the bytes a copy has moved so far, written with the heartbeat (progress of a copy).
    "PROGRESS_SECONDS": float(_env("TRANSFER_PROGRESS", "5")),
    # A copying worker renews its attempt's heartbeat this often (seconds) ...
    "HEARTBEAT_SECONDS": float(_env("TRANSFER_HEARTBEAT", "5")),
    # ... and an attempt without one for this long is taken as lost (its worker died) and retried.
    "ATTEMPT_LOST_AFTER": float(_env("TRANSFER_LOST_AFTER", "60")),
    # An attempt no worker claimed for this long had its task message lost (a broker restart): sent again.
    "UNCLAIMED_AFTER": float(_env("TRANSFER_UNCLAIMED_AFTER", "60")),
    # Copy sessions (FTS3's session reuse): up to SESSION_FILES files of one job and link, each of at most
    # SESSION_MAX_BYTES (FTS3's AutoSessionReuseMaxSmallFileSize, 100 MiB), are copied one after another by
    # one worker process holding one copy slot: one message, one claim, one gfal2 context and one record of
    # their outcomes instead of one of each per file. Copies between mock endpoints move no bytes and always
    # qualify. SESSION_FILES 1: every file its own copy.
    "SESSION_FILES": _positive_int("TRANSFER_SESSION_FILES", "50"),
    "SESSION_MAX_BYTES": _positive_int("TRANSFER_SESSION_MAX_BYTES", str(100 * 1024 * 1024)),
}

# The token issuer the transfer service asks for each copy's tokens (transfers/tokens.py, docs/tokens.md): its
# URL (the tokens' iss; SKA-IAM in production), the service's client and the CA file that verifies the
# issuer (blank: the system's). AUDIENCE_STYLE says how an audience is asked for: "parameter" (INDIGO IAM) or
# "scope" (the optional scope aud:<audience>, as the local Keycloak is set up). No issuer: copies carry none.
SRCNET_TOKENS = {
    "ISSUER": _env("TOKEN_ISSUER", ""),
    "CLIENT_ID": _env("TOKEN_CLIENT_ID", ""),
    "CLIENT_SECRET": _env("TOKEN_CLIENT_SECRET", ""),
    "CA_FILE": _env("TOKEN_CA_FILE", ""),
    "AUDIENCE_STYLE": _env("TOKEN_AUDIENCE_STYLE", "parameter"),
    # Issuers besides ISSUER whose tokens a submission may carry (FTS3 per-file tokens), space-separated.
    "TRUSTED_ISSUERS": _env("TOKEN_TRUSTED_ISSUERS", "").split(),
}

# SciTags flow identifiers (transfers/scitags.py, docs/network.md): the registry's JSON (a file, or an https://
# URL such as https://www.scitags.org/api.json), the experiment's name in it, and a JSON object mapping the
# platform's activities (and "relay") to the registry's activity names. Unset: no marking.
SRCNET_SCITAGS = {
    "REGISTRY": _env("SCITAGS_REGISTRY", ""),
    "EXPERIMENT": _env("SCITAGS_EXPERIMENT", ""),
    "ACTIVITIES": json.loads(_env("SCITAGS_ACTIVITIES", "{}") or "{}"),
    "CA_FILE": _env("SCITAGS_CA_FILE", ""),
}

# The firefly collector whose journal of ended flows the control plane reads and attributes to copies,
# lanes, policies and rules (monitoring/network_accounting.py, docs/network.md "Network accounting"): its
# HTTP address (e.g. https://cp.example.org:9105), the bearer token it demands, the CA file of its
# certificate (empty: the system's). No URL: no accounting (the beat's task does nothing).
SRCNET_FIREFLIES = {
    "URL": _env("FIREFLIES_URL", ""),
    "TOKEN": _env("FIREFLIES_TOKEN", ""),
    "CA_FILE": _env("FIREFLIES_CA_FILE", ""),
}

# /metrics (monitoring/, docs/monitoring.md): with TOKEN set, scrapers send "Authorization: Bearer TOKEN";
# without, only clients in ALLOWED_NETWORKS are answered. Access link rates are averaged over
# RATE_WINDOW_SECONDS; the workers' ping waits WORKER_PING_TIMEOUT seconds for answers.
SRCNET_METRICS = {
    "TOKEN": _env("METRICS_TOKEN", ""),
    "ALLOWED_NETWORKS": _env("METRICS_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128").split(","),
    "RATE_WINDOW_SECONDS": float(_env("METRICS_RATE_WINDOW", "300")),
    "WORKER_PING_TIMEOUT": float(_env("METRICS_WORKER_PING_TIMEOUT", "1.0")),
}

# The Prometheus that scrapes this platform, read back by the portal (the flows page's last hour of the
# access links); empty: the portal reads none. A slow or absent one costs a page at most TIMEOUT_SECONDS.
SRCNET_PROMETHEUS = {
    "URL": _env("PROMETHEUS_URL", ""),
    "TIMEOUT_SECONDS": float(_env("PROMETHEUS_TIMEOUT", "2")),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": _env("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # gfal2 logs each plugin it loads and six events a copy at INFO: at a hundred copies a second that is
        # most of a worker's log. A copy's failure is its recorded reason; SRCNET_GFAL2_LOG_LEVEL=INFO (or
        # DEBUG) brings the events back to trace one.
        "gfal2": {"level": _env("GFAL2_LOG_LEVEL", "WARNING")},
        # DEBUG logs each look at a copy's destination that its recorded progress and pace come from.
        "transfers.heartbeats": {"level": _env("PROGRESS_LOG_LEVEL", "INFO")},
    },
}

# --- A deployment: HTTPS only, and nothing left to a default ----------------------------------------------
# The Ansible role srcnet_app sets SRCNET_DEPLOYED=1 in /etc/srcnet/srcnet.env; the role control_plane's
# gunicorn speaks TLS itself (no proxy in front), so request.is_secure() holds without a forwarded header.
# `srcnet-manage check --deploy --fail-level WARNING` is clean with these (tests/deploy/test_site.py,
# test_the_control_plane_speaks_https_only; docs/security.md, "HTTPS only").
SRCNET_DEPLOYED = _env("DEPLOYED", "0") == "1"
if SRCNET_DEPLOYED:
    from django.core.exceptions import ImproperlyConfigured

    # The random per-process key above would sign each web server process's sessions differently and lose
    # them at every restart: a deployment has its vault's key or does not start.
    if not _env("SECRET_KEY", ""):
        raise ImproperlyConfigured(
            "SRCNET_SECRET_KEY is not set: a deployment (SRCNET_DEPLOYED=1) signs sessions and "
            "password-reset links with its vault's key (srcnet_app_secret_key in /etc/srcnet/srcnet.env) "
            "and will not start with a random key of its own"
        )
    DEBUG = False
    SECURE_SSL_REDIRECT = True
    # A year; browsers then refuse plain HTTP to this host and its subdomains. "preload" only consents to
    # browsers' preload lists: a domain enters one when its owner submits it (hstspreload.org), not before.
    SECURE_HSTS_SECONDS = 365 * 24 * 3600
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # The https:// origins the portal's forms are posted from (the role: each allowed host at the web port).
    CSRF_TRUSTED_ORIGINS = [origin for origin in _env("CSRF_TRUSTED_ORIGINS", "").split(",") if origin]
