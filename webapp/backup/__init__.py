"""Backup and restore of the control-plane state, and rebuilding brokers' state from it.

* ``schema``: what a backup holds, section by section (one table), and what it leaves out, why.
* ``document``: reading and writing the versioned JSON (optionally gzip) file, and checking it.
* ``dump``: the state of the database in one consistent read -> a document.
* ``load``: a checked document -> an empty database, in one transaction.
* ``broker_resync``: after a restore, give brokers the restored credentials, ACLs, quotas and
  topics with snapshot versions and a controller epoch above everything they have seen.

Commands: ``manage.py backup``, ``manage.py restore``, ``manage.py resync_brokers``; the
procedure is in ``deploy/README.md`` ("Backup and restore").
"""
