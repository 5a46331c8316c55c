"""Catalog actions: ``check_*`` validates and authorizes, ``do_*`` writes in one transaction
and records the provisioning job the brokers need. Views and the dashboard call these."""
