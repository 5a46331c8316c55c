"""Catalog actions: ``check_*`` validates and authorizes, ``do_*`` writes in one transaction
and records the provisioning job the brokers need (``webapp.common.changes``: provisioning sits
above catalog). Views and the dashboard call these through ``webapp.catalog.facade``."""
