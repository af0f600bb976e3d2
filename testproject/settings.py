"""Settings of the demo and test project. DATABASE_URL picks the database (default: SQLite)."""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent
env = environ.Env()

SECRET_KEY = env.str("SECRET_KEY", default="insecure-demo-key-not-for-production")
DEBUG = env.bool("DEBUG", default=True)
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "testproject.urls"
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_skipqueue",
    "django_skipqueue.outbox",
    "django_skipqueue.reservations",
    "django_skipqueue.scheduling",
    "django_skipqueue.workflows",
    "testproject.demo",
]
# The core's own tests run without the optional apps (tests/support/core_only.py).
CORE_ONLY = env.bool("SKIPQUEUE_TEST_CORE_ONLY", default=False)
if CORE_ONLY:
    INSTALLED_APPS = [app for app in INSTALLED_APPS if not app.startswith("django_skipqueue.")]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

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

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite has no SKIP LOCKED: IMMEDIATE transactions serialise claims (check W002).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 30, "init_command": "PRAGMA journal_mode=WAL"}
    )
    # A file, not memory, so that worker processes started by tests see the test database;
    # named after the database file, so that test runs on different files do not collide.
    _test_name = f"test_{Path(DATABASES['default']['NAME']).stem}.sqlite3"
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / _test_name)}
if env.str("REPLICA_DATABASE_URL", default=""):
    # A replica of the default database, watched by skipqueue_purge --replica replica.
    DATABASES["replica"] = env.db("REPLICA_DATABASE_URL")

# The tasks of the test suite and of the benchmarks live in packages that are no app: workers
# may import task paths there (docs/reference/settings.md).
SKIPQUEUE_TASK_MODULES = ["tests", "benchmarks"]

TASKS = {
    "default": {
        "BACKEND": "django_skipqueue.backend.SkipQueueBackend",
        "QUEUES": ["default", "high", "emails", "reports"],
    }
}

# The outbox: tests start relays with --broker, and shorten the lease to see takeovers.
# A project without the outbox does not configure it (checks E104, E205, E305 would say so).
if not CORE_ONLY:
    SKIPQUEUE_OUTBOX_BROKER_URL = env.str("SKIPQUEUE_OUTBOX_BROKER_URL", default="") or None
    # Tests on the shared NATS server send "orders" to a subject of their own (streams must not
    # overlap); None sends it to the subject or exchange "orders".
    SKIPQUEUE_OUTBOX_TOPICS = {
        "orders": env.str("SKIPQUEUE_TEST_ORDERS_DESTINATION", default="") or None,
        "payments": "payments-exchange",
        "audit": None,
    }
    SKIPQUEUE_OUTBOX_LEASE_SECONDS = env.float("SKIPQUEUE_OUTBOX_LEASE_SECONDS", default=30.0)
    SKIPQUEUE_OUTBOX_MAX_ATTEMPTS = env.int("SKIPQUEUE_OUTBOX_MAX_ATTEMPTS", default=10)
    SKIPQUEUE_OUTBOX_RETRY_BACKOFF = env.float("SKIPQUEUE_OUTBOX_RETRY_BACKOFF", default=1.0)
    SKIPQUEUE_OUTBOX_RETRY_BACKOFF_MAX = env.float(
        "SKIPQUEUE_OUTBOX_RETRY_BACKOFF_MAX", default=300.0
    )
    SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES = env.int(
        "SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES", default=256 * 1024
    )

# The metrics view's bearer token (tests/monitoring/test_prometheus.py scrapes with it).
SKIPQUEUE_METRICS_TOKEN = env.str("SKIPQUEUE_METRICS_TOKEN", default="") or None
SKIPQUEUE_PREFETCH_MAX_WAIT = env.float("SKIPQUEUE_PREFETCH_MAX_WAIT", default=0.2)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "django_skipqueue": {
            "handlers": ["console"],
            "level": env.str("SKIPQUEUE_LOG_LEVEL", default="INFO"),
        },
        "django.tasks": {"handlers": ["console"], "level": "WARNING"},
    },
}
