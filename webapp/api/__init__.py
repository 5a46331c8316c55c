"""Shared REST plumbing: tenant-scoped viewsets, pagination, error bodies."""
