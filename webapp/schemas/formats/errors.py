"""Errors of the schema formats."""

from __future__ import annotations


class InvalidSchema(ValueError):
    """The text is not a valid schema of its type (Confluent's error 42201); ``str()`` names what is wrong."""
