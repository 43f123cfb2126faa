"""WSGI entry point (gunicorn srcnet.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "srcnet.settings")
application = get_wsgi_application()
