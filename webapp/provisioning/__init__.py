"""Provisioning jobs, the Celery tasks that push desired state to brokers, and the reconciler."""
