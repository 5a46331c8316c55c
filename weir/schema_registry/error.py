"""confluent-kafka's ``SchemaRegistryError``: the registry answered with an error.

``http_status_code`` is the HTTP status, ``error_code`` the registry's own code from the body
(40401 subject not found, 40403 schema not found, 409 incompatible, 42201 invalid schema...), or
-1 (``UNKNOWN``) when the answer carried none (a proxy's page, a connection failure).
"""

from __future__ import annotations


class SchemaRegistryError(Exception):
    """An error answered by the Schema Registry (or no answer at all: ``http_status_code`` -1)."""

    UNKNOWN = -1

    def __init__(self, http_status_code: int, error_code: int, error_message: str) -> None:
        super().__init__(http_status_code, error_code, error_message)
        self.http_status_code = http_status_code
        self.error_code = error_code
        self.error_message = error_message

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return f"{self.error_message} (HTTP status code {self.http_status_code}, SR code {self.error_code})"
