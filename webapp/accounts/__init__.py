"""Tenants, users and their memberships (roles), service accounts and API keys."""
