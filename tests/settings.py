"""Django settings for the test suite: the test environment first, then the real settings."""

from tests.support.pytest_environment import configure_environment

configure_environment()

# Debug is off by default, so the settings need a key: the test data directory's own, in the
# environment so that the processes tests start (controllers, workers, `manage.py`) share it.
import os as _environment_os  # noqa: E402
from pathlib import Path as _Path  # noqa: E402

from webapp.runtime import persistent_secret as _persistent_secret  # noqa: E402

_environment_os.environ.setdefault("DJANGO_SECRET_KEY", _persistent_secret(_Path(_environment_os.environ["WEIR_DATA_DIR"]), "django-secret-key"))

from webapp.settings import *  # noqa: E402,F401,F403

# Close the database connection at the end of every request: a live server's keep-alive
# request threads must not hold one open past the test database's teardown.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405

# Each test run gets its own PostgreSQL test database, so that two runs against one server
# (a developer's and CI's, or two checkouts) never drop each other's tables.
if DATABASES["default"]["ENGINE"].endswith("postgresql"):  # noqa: F405
    import os as _os

    DATABASES["default"]["TEST"] = {"NAME": f"test_weir_{_os.getpid()}"}  # noqa: F405

# Each test process its own in-memory cache: no test sees another's entries.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}  # noqa: F405
