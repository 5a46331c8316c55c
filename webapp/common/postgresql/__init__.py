"""Django's PostgreSQL backend with psycopg's own ``timestamptz`` loader (see :mod:`.base`)."""
