"""WSGI entry point for production servers (gunicorn webapp.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from weir.private_files import make_new_files_private

# Files the web process creates are its owner's only (weir.private_files).
make_new_files_private()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
application = get_wsgi_application()
