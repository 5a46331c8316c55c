"""The Weir control plane: a Django project (settings, URLs) with one app per domain.

Tenants, users, API keys, topics and ACLs arrive with the control-plane issue; this package
holds the project frame they plug into.
"""
