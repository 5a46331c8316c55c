"""The audit log: who changed what in a tenant, when, from where and through which door."""
