"""Django settings for the test suite: the test environment first, then the real settings."""

from tests.support.pytest_environment import configure_environment

configure_environment()

from webapp.settings import *  # noqa: E402,F401,F403
