"""Account actions: ``check_*`` validates and authorizes, ``do_*`` writes in one transaction
(and records the provisioning job when brokers must learn of the change, through
``webapp.common.changes``: accounts imports no app above it)."""
