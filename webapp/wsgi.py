"""WSGI entry point for production servers (gunicorn webapp.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from server_runtime.private_files import make_new_files_private

# Files the web process creates are its owner's only (server_runtime.private_files).
make_new_files_private()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# The web process holds no internal token (webapp.settings): only tenant tokens reach brokers from it.
os.environ.setdefault("WEIR_PROCESS_ROLE", "web")
application = get_wsgi_application()
