"""Django settings, read from the environment (twelve-factor) with embedded defaults.

=========================  ===================================  =============================================
variable                   default                              meaning
=========================  ===================================  =============================================
WEIR_DATA_DIR              ./.weir-data                         state directory (SQLite file, Celery queue)
DATABASE_URL               sqlite:///<WEIR_DATA_DIR>/control-   any dj-database-url URL, e.g.
                           plane.sqlite3                        postgres://user@127.0.0.1:5432/weir
REDIS_URL                  redis://127.0.0.1:6379/0             Celery's broker; when nothing answers there,
                                                                kombu's filesystem transport under WEIR_DATA_DIR
WEIR_CELERY_FILESYSTEM_    true                                 false: always Redis at REDIS_URL, never the
FALLBACK                                                        filesystem (several machines, deploy/)
DJANGO_SECRET_KEY          <WEIR_DATA_DIR>/secrets/django-      signs sessions and CSRF tokens; `make up` keeps
                           secret-key if it exists              one there; without either, startup fails unless
                                                                DJANGO_DEBUG is true (a key is then created)
DJANGO_DEBUG               false                                true: development mode (debug pages with local
                                                                variables; never on a reachable host)
DJANGO_ALLOWED_HOSTS       127.0.0.1,localhost
WEIR_INTERNAL_TOKEN        generated per data dir               the control plane <-> broker credential (the
                                                                web process never keeps it: see below)
WEIR_PROCESS_ROLE          web under webapp.wsgi, else unset    web: hold no internal token; tenant tokens only
WEIR_TENANT_TOKEN_KEY      derived from WEIR_INTERNAL_TOKEN     hex key signing the short-lived tenant tokens
                                                                the web process acts as a tenant with
WEIR_TENANT_TOKEN_LIFETIME_ 300                                 seconds a tenant token is valid (at most
SECONDS                                                         3600)
WEIR_BOOTSTRAP_SERVERS     127.0.0.1:9092                       brokers the control plane knows at first
WEIR_BROKER_TLS_CA         unset (plaintext)                    PEM CA file; when set, the control plane's
                                                                clients of the brokers (Admin, dashboard)
                                                                use TLS and verify brokers against it
WEIR_PUBLIC_API_URL        http://127.0.0.1:8000                how users reach the API (printed by `demo`); default:
                                                                what `make up` recorded in <WEIR_DATA_DIR>/run/web-url,
                                                                else http://127.0.0.1:<WEIR_HTTP_PORT>
CELERY_TASK_ALWAYS_EAGER   false                                run tasks inline (tests of views only)
WEIR_LOG_FORMAT            text                                 json: one JSON object per log line (keys ts,
                                                                level, logger, message, request_id...)
WEIR_LOG_LEVEL             INFO                                 level of the root logger
WEIR_CELERY_QUEUE          weir-<hash of WEIR_DATA_DIR>         Celery queue of this stack
WEIR_API_KEY_CACHE_        2                                    seconds a verified cloud key is answered from
SECONDS                                                         memory; a key revoked elsewhere stops within
                                                                this (0: look it up at every request)
WEIR_RECONCILE_INTERVAL_   30                                   seconds between reconciler runs (beat)
SECONDS
WEIR_ADMIN_CALL_TIMEOUT_   5                                    deadline of each Admin call to a broker
SECONDS
WEIR_PIPELINES_ENABLED     true                                 Celery beat runs the usage pipeline
WEIR_USAGE_PIPELINE_       3600                                 seconds between usage pipeline runs (beat)
INTERVAL_SECONDS
WEIR_LAG_REFRESH_SECONDS   2                                    the lag monitor's round (shown as lag's interval)
WEIR_LAG_TOUCH_SECONDS     30                                   the lag monitor refreshes unchanged rows this often;
                                                                three missed: an evaluation is stale
WEIR_PIPELINE_TIMEOUT_     900                                  a pipeline run is killed and FAILED after this
SECONDS                                                         long (a RUNNING one older than that plus a
                                                                minute is taken as left by a dead launcher)
WEIR_METERING_HISTORY_     7                                    days of lag history and pipeline run records
DAYS                                                            kept
WEIR_PROVISIONING_MAX_     5                                    attempts before a job is FAILED
ATTEMPTS
WEIR_PROVISIONING_RETRY_   4                                    first retry delay (doubles each attempt)
BACKOFF_SECONDS
WEIR_CLUSTER_ID            weir-local                           cluster id brokers report in Metadata
WEIR_DEFAULT_NUM_           1 (at most the plan's per-topic      partitions of a topic created over the data
PARTITIONS                 limit)                               plane with num_partitions -1
WEIR_DEFAULT_REPLICATION_  min(3, brokers not offline)          replication factor of a topic created over
FACTOR                                                          the data plane with replication_factor -1
WEIR_OFFSETS_TOPIC_NUM_    50                                   partitions of __consumer_offsets (fixed once
PARTITIONS                                                      created: groups hash onto them)
WEIR_TRANSACTION_STATE_    50                                   partitions of __transaction_state (fixed
TOPIC_NUM_PARTITIONS                                            once created: transactional ids hash onto them)
WEIR_USAGE_TOPIC_NUM_      3                                    partitions of __usage
PARTITIONS
WEIR_BROKER_SESSION_       9000                                 controller: a broker silent this long is
TIMEOUT_MS                                                      fenced and its partitions fail over
WEIR_AUTO_LEADER_          true                                 controller: run the preferred-leader election
REBALANCE_ENABLE                                                periodically (auto.leader.rebalance.enable)
WEIR_LEADER_IMBALANCE_     300                                  controller: seconds between those elections
CHECK_INTERVAL_SECONDS
WEIR_LEADER_IMBALANCE_     10                                   controller: move leaders back only for brokers
PER_BROKER_PERCENTAGE                                           whose share of partitions they prefer but do
                                                                not lead is above this percentage
WEIR_HTTPS                 false                                true: reached over HTTPS only (SSL redirect,
                                                                HSTS, secure cookies); docs/operations.md
WEIR_HSTS_SECONDS          31536000                             HSTS max-age when WEIR_HTTPS is true
WEIR_HSTS_INCLUDE_         true                                 HSTS includeSubDomains
SUBDOMAINS
WEIR_HSTS_PRELOAD          true                                 HSTS preload
WEIR_BEHIND_PROXY          false                                true: trust X-Forwarded-Proto and -For from
                                                                WEIR_PROXY_COUNT (1) proxies in front
DJANGO_CSRF_TRUSTED_       none                                 extra origins allowed to post forms
ORIGINS
WEIR_SIGN_IN_FAILURE_      10                                   failed sign-ins per address or account
LIMIT                                                           before it is locked out
WEIR_SIGN_IN_COOLOFF_      15                                   minutes the first lock-out lasts after the
MINUTES                                                         last try; doubled at each further lock-out
WEIR_SIGN_IN_COOLOFF_MAX_  1440                                 the longest lock-out
MINUTES
=========================  ===================================  =============================================
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from server_runtime.logging_setup import logging_config
from server_runtime.private_files import restrict_directory
from webapp.runtime import celery_broker_url, celery_queue_name, persistent_secret, stack_key, stack_web_url, stored_secret
from weir import tenant_tokens

DATA_DIR = Path(os.environ.get("WEIR_DATA_DIR", ".weir-data")).resolve()
# A data directory left readable by others (an older version, a loose umask) is closed here;
# the entry points' umask keeps what is created in it private (server_runtime.private_files).
restrict_directory(DATA_DIR)

# Debug pages show local variables and settings: only a developer who asks for them gets them.
DEBUG = os.environ.get("DJANGO_DEBUG", "false").strip().lower() == "true"
# The key from the environment; else the one `make up` keeps in the data directory (so that tools
# run beside it, such as `manage.py demo`, sign what the web process checks); else, in debug only,
# a new one kept there. A production process without any fails here rather than start unsigned.
SECRET_KEY = (
    os.environ.get("DJANGO_SECRET_KEY") or stored_secret(DATA_DIR, "django-secret-key") or (persistent_secret(DATA_DIR, "django-secret-key") if DEBUG else "")
)
if not SECRET_KEY:
    raise ImproperlyConfigured(
        f"DJANGO_SECRET_KEY is not set and {DATA_DIR / 'secrets' / 'django-secret-key'} does not exist: "
        "set DJANGO_SECRET_KEY (production, see docs/operations.md), run the stack with `make up` "
        "(which keeps one in its data directory), or set DJANGO_DEBUG=true on a development machine"
    )
ALLOWED_HOSTS = [host.strip() for host in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if host.strip()]

# The credential the control plane and brokers use among themselves (Admin service, internal
# topics). Brokers read the same value from WEIR_INTERNAL_TOKEN or the same data-dir file.
# The web process (webapp.wsgi sets WEIR_PROCESS_ROLE=web) holds none: it reaches brokers only
# with tenant tokens, so nothing it could leak opens every tenant. It uses the internal token
# here, at most, to derive the tenant-token key when WEIR_TENANT_TOKEN_KEY is not given.
WEIR_PROCESS_ROLE = os.environ.get("WEIR_PROCESS_ROLE", "")
_given_tenant_token_key = os.environ.get("WEIR_TENANT_TOKEN_KEY", "")
# A web process given its key needs no internal token, and does not make one in its data dir.
_internal_token = os.environ.get("WEIR_INTERNAL_TOKEN") or (
    "" if WEIR_PROCESS_ROLE == "web" and _given_tenant_token_key else persistent_secret(DATA_DIR, "internal-token")
)
WEIR_INTERNAL_TOKEN = "" if WEIR_PROCESS_ROLE == "web" else _internal_token
# The key (hex) that signs tenant tokens (weir.tenant_tokens): the dashboard and the REST API
# reach the data plane as one tenant with tokens minted from it, never with the internal token.
# Brokers derive the same key from the internal token; set it explicitly where the web process
# should not derive it itself. Tokens live WEIR_TENANT_TOKEN_LIFETIME_SECONDS (at most 3600).
WEIR_TENANT_TOKEN_KEY = _given_tenant_token_key or tenant_tokens.derive_key(_internal_token).hex()
del _internal_token, _given_tenant_token_key
WEIR_TENANT_TOKEN_LIFETIME_SECONDS = int(os.environ.get("WEIR_TENANT_TOKEN_LIFETIME_SECONDS", "300"))
WEIR_BOOTSTRAP_SERVERS = os.environ.get("WEIR_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
# When set (a PEM file of CA certificates), the control plane reaches brokers over TLS only.
WEIR_BROKER_TLS_CA = os.environ.get("WEIR_BROKER_TLS_CA") or None
# WEIR_PUBLIC_API_URL, else the URL `make up` recorded for this data directory, else WEIR_HTTP_PORT's.
WEIR_PUBLIC_API_URL = stack_web_url(DATA_DIR, os.environ)
# Topic defaults of the data plane's CreateTopics (-1 counts), and the internal topics'
# partition counts (webapp.controller.internal_topics). None: min(3, brokers not offline).
WEIR_DEFAULT_NUM_PARTITIONS = int(os.environ.get("WEIR_DEFAULT_NUM_PARTITIONS", "1"))
WEIR_DEFAULT_REPLICATION_FACTOR = int(os.environ["WEIR_DEFAULT_REPLICATION_FACTOR"]) if os.environ.get("WEIR_DEFAULT_REPLICATION_FACTOR") else None
WEIR_OFFSETS_TOPIC_NUM_PARTITIONS = int(os.environ.get("WEIR_OFFSETS_TOPIC_NUM_PARTITIONS", "50"))
WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS = int(os.environ.get("WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS", "50"))
WEIR_USAGE_TOPIC_NUM_PARTITIONS = int(os.environ.get("WEIR_USAGE_TOPIC_NUM_PARTITIONS", "3"))
# A tenant's audit events older than this are deleted when it records a new one (webapp.audit.recording).
AUDIT_LOG_RETENTION_DAYS = int(os.environ.get("WEIR_AUDIT_LOG_RETENTION_DAYS", "365"))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI's files served by the project itself: /api/docs/ works without internet access.
    "drf_spectacular_sidecar",
    # Sign-in throttling and lock-out (see AXES_* below).
    "axes",
    # The Content-Security-Policy header (see CONTENT_SECURITY_POLICY below).
    "csp",
    "webapp.accounts",
    "webapp.catalog",
    "webapp.fleet",
    "webapp.provisioning",
    "webapp.controller",
    "webapp.metering",
    "webapp.schemas",
    "webapp.backup",
    "webapp.audit",
    "webapp.dashboard",
]

MIDDLEWARE = [
    # Counts and times every request by route (webapp.observability.http_metrics): outermost, to
    # time all the rest; it logs nothing, so every log line still comes after the request id's.
    "webapp.observability.http_metrics.RequestMetricsMiddleware",
    # First, so that every later step logs with the request id (X-Request-ID in and out).
    "webapp.request_ids.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Before WhiteNoise, so that static files (Swagger UI's too) carry the policy as well.
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The door (dashboard or REST) and client address that audit events record (webapp.audit.context).
    "webapp.audit.context.AuditContextMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: turns a sign-in refused for too many failures into the 429 answer (AXES_LOCKOUT_CALLABLE).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'control-plane.sqlite3'}"),
        conn_max_age=60,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend with psycopg's own (C) timestamptz loader: Django's Python one was the
    # largest cost of a page of jobs (webapp.common.postgresql.base).
    DATABASES["default"]["ENGINE"] = "webapp.common.postgresql"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web, worker, beat) share the file: wait for locks instead of failing,
    # and take the write lock when a transaction starts, so that a transaction that reads and
    # then writes waits its turn instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 20, "transaction_mode": "IMMEDIATE"})
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise expects it even when serving from finders
# Serve from the apps' static folders directly (no collectstatic step for `make up`).
WHITENOISE_USE_FINDERS = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "dashboard:login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "webapp.accounts.authentication.CloudApiKeyAuthentication",
        "webapp.accounts.authentication.SessionActorAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "webapp.api.pagination.CursorPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "webapp.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Weir API",
    "DESCRIPTION": "Tenants, topics, ACLs, service accounts, API keys, quotas and provisioning jobs of a Weir cluster.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from drf-spectacular-sidecar's static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several metering shapes have a "status" of different choices: name each set.
    "ENUM_NAME_OVERRIDES": {
        "LagGroupStatusEnum": "webapp.metering.models.GroupStatus",
        "LagPartitionStatusEnum": "webapp.metering.models.PartitionStatus",
        "PipelineRunStatusEnum": "webapp.metering.models.RunStatus",
        # Roles and API key kinds appear in several shapes: one name each (`check --deploy` warns otherwise).
        "RoleEnum": "webapp.accounts.models.Role",
        "ApiKeyKindEnum": "webapp.accounts.models.ApiKeyKind",
        # What an API key acts with (``access`` of the key shapes).
        "ApiKeyAccessEnum": "webapp.accounts.key_access.KeyAccess",
        # The roles a service account may have (every role but owner).
        "ServiceAccountRoleEnum": [("admin", "Admin"), ("developer", "Developer"), ("viewer", "Viewer")],
        # Pattern types and retention statuses appear with two label sets (the models' and plain values): one name each.
        "PatternTypeEnum": "webapp.catalog.models.PatternType",
        "AclPatternTypeEnum": [("LITERAL", "LITERAL"), ("PREFIXED", "PREFIXED")],
        "RetentionStatusEnum": "webapp.metering.models.RetentionStatus",
    },
}

# Celery: Redis when it answers at REDIS_URL, else kombu's filesystem transport (one line says which).
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# WEIR_CELERY_FILESYSTEM_FALLBACK=false: always Redis (processes on several machines share its queue).
WEIR_CELERY_FILESYSTEM_FALLBACK = os.environ.get("WEIR_CELERY_FILESYSTEM_FALLBACK", "true").lower() == "true"
CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS = celery_broker_url(REDIS_URL, DATA_DIR, filesystem_fallback=WEIR_CELERY_FILESYSTEM_FALLBACK)
CELERY_RESULT_BACKEND = None
# The cache every web process shares (the dashboard's live throughput history): Redis when Celery
# uses it, else files under the data directory (one machine's processes); one key prefix per stack.
if CELERY_BROKER_URL == REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(DATA_DIR / "cache")}}
CACHES["default"]["KEY_PREFIX"] = stack_key(DATA_DIR)
CELERY_TASK_ALWAYS_EAGER = os.environ.get("CELERY_TASK_ALWAYS_EAGER", "false").lower() == "true"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# One queue per stack (derived from its data directory), so that two stacks sharing one
# Redis never run each other's jobs.
CELERY_TASK_DEFAULT_QUEUE = celery_queue_name(DATA_DIR, os.environ)
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# A verified cloud API key is answered from memory this long (webapp.accounts.key_cache).
WEIR_API_KEY_CACHE_SECONDS = float(os.environ.get("WEIR_API_KEY_CACHE_SECONDS", "2"))
# Seconds between reconciler runs (Celery beat).
WEIR_RECONCILE_INTERVAL_SECONDS = float(os.environ.get("WEIR_RECONCILE_INTERVAL_SECONDS", "30"))
# The metering pipelines (webapp.metering): beat schedule, run deadline, history kept.
WEIR_PIPELINES_ENABLED = os.environ.get("WEIR_PIPELINES_ENABLED", "true").lower() == "true"
WEIR_USAGE_PIPELINE_INTERVAL_SECONDS = float(os.environ.get("WEIR_USAGE_PIPELINE_INTERVAL_SECONDS", "3600"))
# Lag is the lag monitor's (spark_pipelines.lag_monitor), read from the same variables it reads: a round
# every WEIR_LAG_REFRESH_SECONDS, and every lag row's evaluated_at refreshed at least every
# WEIR_LAG_TOUCH_SECONDS while nothing changes.
WEIR_LAG_REFRESH_SECONDS = float(os.environ.get("WEIR_LAG_REFRESH_SECONDS", "2"))
WEIR_LAG_TOUCH_SECONDS = float(os.environ.get("WEIR_LAG_TOUCH_SECONDS", "30"))
WEIR_PIPELINE_TIMEOUT_SECONDS = float(os.environ.get("WEIR_PIPELINE_TIMEOUT_SECONDS", "900"))
WEIR_METERING_HISTORY_DAYS = float(os.environ.get("WEIR_METERING_HISTORY_DAYS", "7"))

# Text lines in this format, or JSON lines with WEIR_LOG_FORMAT=json (server_runtime.logging_setup).
LOGGING = logging_config(text_format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=os.environ.get("WEIR_LOG_LEVEL", "INFO"))

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SAMESITE = "Lax"

# Error reports (debug page, admin mail, logs) hide settings, client configurations and other
# locals whose names look secret (webapp.error_reports); a 500 shows a request id only
# (webapp.error_pages, handler500 in webapp.urls).
DEFAULT_EXCEPTION_REPORTER_FILTER = "webapp.error_reports.WeirExceptionReporterFilter"


def _flag(name: str, default: str) -> bool:
    value = os.environ.get(name, default).strip().lower()
    if value not in ("true", "false"):
        raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")
    return value == "true"


# WEIR_HTTPS=true: the site is reached over HTTPS (served with TLS, or behind a proxy that
# terminates it): plain HTTP is redirected, browsers are told to keep to HTTPS (HSTS) and
# cookies are sent over HTTPS only. Health and metrics answer on plain HTTP for probes.
WEIR_HTTPS = _flag("WEIR_HTTPS", "false")
SECURE_SSL_REDIRECT = WEIR_HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = int(os.environ.get("WEIR_HSTS_SECONDS", "31536000")) if WEIR_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _flag("WEIR_HSTS_INCLUDE_SUBDOMAINS", "true")
SECURE_HSTS_PRELOAD = _flag("WEIR_HSTS_PRELOAD", "true")
SESSION_COOKIE_SECURE = WEIR_HTTPS
CSRF_COOKIE_SECURE = WEIR_HTTPS
# WEIR_BEHIND_PROXY=true: a reverse proxy in front sets X-Forwarded-Proto (HTTPS or not) and
# X-Forwarded-For (the client's address, which sign-in throttling counts by); only set it when
# the proxy overwrites both headers, since a client could otherwise choose them.
WEIR_BEHIND_PROXY = _flag("WEIR_BEHIND_PROXY", "false")
if WEIR_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    AXES_IPWARE_PROXY_COUNT = int(os.environ.get("WEIR_PROXY_COUNT", "1"))
# Extra origins (scheme://host[:port]) allowed to post forms, when the proxy's public name
# differs from the Host header Django sees.
CSRF_TRUSTED_ORIGINS = [origin.strip() for origin in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if origin.strip()]

# Content-Security-Policy on every answer: scripts, styles, images and fonts from this site
# only (the dashboard keeps no inline script or style; Swagger UI comes from the sidecar
# app's static files), no plug-ins, no framing, forms post only here.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        # Swagger UI's and the charts' small icons are data: URIs.
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Sign-in throttling (django-axes): every password check made for an HTTP request (the
# dashboard's and the Django admin's sign-in) is counted per client address and per account;
# WEIR_SIGN_IN_FAILURE_LIMIT failures from one address, or against one account, lock that
# address or account out for WEIR_SIGN_IN_COOLOFF_MINUTES, doubled each further time the limit
# is reached (up to WEIR_SIGN_IN_COOLOFF_MAX_MINUTES), and each attempt while locked starts the
# wait again. Lockouts are logged (logger "axes", without the password); the answer is 429
# with the minutes to wait.
AUTHENTICATION_BACKENDS = [
    "webapp.accounts.sign_in_throttling.ThrottledSignInBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("WEIR_SIGN_IN_FAILURE_LIMIT", "10"))
# The first lock-out's minutes; each further time the limit is reached doubles it, up to the
# longest (webapp.accounts.sign_in_throttling.cool_off).
WEIR_SIGN_IN_COOLOFF_MINUTES = float(os.environ.get("WEIR_SIGN_IN_COOLOFF_MINUTES", "15"))
WEIR_SIGN_IN_COOLOFF_MAX_MINUTES = float(os.environ.get("WEIR_SIGN_IN_COOLOFF_MAX_MINUTES", "1440"))
AXES_COOLOFF_TIME = "webapp.accounts.sign_in_throttling.cool_off"
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "webapp.accounts.sign_in_throttling.lockout_response"
# Successful sign-ins are not recorded (the session table says who is signed in).
AXES_DISABLE_ACCESS_LOG = True
# The log names the account and address (an operator needs them); passwords are never logged
# or stored, and neither are the forms' CSRF tokens.
AXES_SENSITIVE_PARAMETERS = ["csrfmiddlewaretoken"]
# Axes says at INFO what it does on every sign-in ("Deleted 0 failed login attempts"); its
# warnings (each failure, each lock-out) are what an operator needs.
LOGGING.setdefault("loggers", {})["axes"] = {"level": "WARNING"}
del secrets
