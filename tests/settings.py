"""Django settings for the test suite: the test environment first, then the real settings."""

from tests.support.pytest_environment import configure_environment

configure_environment()

from webapp.settings import *  # noqa: E402,F401,F403

# Close the database connection at the end of every request: a live server's keep-alive
# request threads must not hold one open past the test database's teardown.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
