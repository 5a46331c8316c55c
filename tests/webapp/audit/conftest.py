"""The REST API tests' tenants (a member of every role, each with a cloud key) serve here too."""

from tests.webapp.api.conftest import acme, fast_password_hashing, globex, registered_broker, service_account, tenant_factory

__all__ = ["acme", "fast_password_hashing", "globex", "registered_broker", "service_account", "tenant_factory"]
