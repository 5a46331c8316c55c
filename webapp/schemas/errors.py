"""The registry's typed errors, each with Confluent Schema Registry's HTTP status and error code.

Actions and queries raise these; the views (``webapp.schemas.http``) turn them into Confluent's
error body ``{"error_code": ..., "message": ...}``. None is retriable: each names what is wrong.
"""

from __future__ import annotations


class RegistryError(Exception):
    """Base of the registry's errors; ``message`` is safe to show to the caller."""

    http_status = 500
    error_code = 50001
    retriable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SubjectNotFound(RegistryError):
    http_status, error_code = 404, 40401

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' not found.")


class VersionNotFound(RegistryError):
    http_status, error_code = 404, 40402

    def __init__(self, subject: str, version: object) -> None:
        super().__init__(f"Version {version} not found in subject '{subject}'.")


class SchemaNotFound(RegistryError):
    http_status, error_code = 404, 40403


class SubjectSoftDeleted(RegistryError):
    http_status, error_code = 404, 40404

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently.")


class SubjectNotSoftDeleted(RegistryError):
    http_status, error_code = 404, 40405

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' was not deleted first before being permanently deleted.")


class VersionSoftDeleted(RegistryError):
    http_status, error_code = 404, 40406

    def __init__(self, subject: str, version: int) -> None:
        super().__init__(f"Subject '{subject}' Version {version} was soft deleted. Set permanent=true to delete permanently.")


class VersionNotSoftDeleted(RegistryError):
    http_status, error_code = 404, 40407

    def __init__(self, subject: str, version: int) -> None:
        super().__init__(f"Subject '{subject}' Version {version} was not deleted first before being permanently deleted.")


class SubjectCompatibilityNotConfigured(RegistryError):
    http_status, error_code = 404, 40408

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' does not have subject-level compatibility configured.")


class SubjectModeNotConfigured(RegistryError):
    http_status, error_code = 404, 40409

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' does not have subject-level mode configured.")


class IncompatibleSchema(RegistryError):
    http_status, error_code = 409, 409

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("Schema being registered is incompatible with an earlier schema for the same subject: " + "; ".join(reasons))
        self.reasons = reasons


class InvalidSchemaError(RegistryError):
    """Also a missing or cyclic reference, an unknown schema type, a schema over the size limit."""

    http_status, error_code = 422, 42201


class InvalidVersion(RegistryError):
    http_status, error_code = 422, 42202

    def __init__(self, version: object) -> None:
        super().__init__(f"The specified version '{version}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\".")


class InvalidCompatibilityLevel(RegistryError):
    http_status, error_code = 422, 42203


class InvalidMode(RegistryError):
    http_status, error_code = 422, 42204


class OperationNotPermitted(RegistryError):
    """The mode forbids it (READONLY, IMPORT without an id, an id outside IMPORT), or a limit."""

    http_status, error_code = 422, 42205


class ReferenceExists(RegistryError):
    http_status, error_code = 422, 42206


class IdDoesNotMatch(RegistryError):
    http_status, error_code = 422, 42207


class InvalidSubject(RegistryError):
    http_status, error_code = 422, 42208


class BadRequest(RegistryError):
    """The request body is not JSON or lacks a field: Jersey's 400 in Confluent's registry."""

    http_status, error_code = 400, 400


class PayloadTooLarge(RegistryError):
    """The request body is over Django's DATA_UPLOAD_MAX_MEMORY_SIZE (a schema's own limit is 42201)."""

    http_status, error_code = 413, 413


class Unauthorized(RegistryError):
    http_status, error_code = 401, 40101


class Forbidden(RegistryError):
    """The key's role may not do this (Confluent's 40301)."""

    http_status, error_code = 403, 40301
