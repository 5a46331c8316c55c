"""What a control-plane backup holds: one table of sections, in the order they are restored.

A backup is the desired state the control plane cannot rebuild from anywhere else: who may
sign in (users with their password hashes, Django groups and permissions), tenants,
memberships, invitations, service accounts, API keys (the SHA-256 of each secret and the
SCRAM credentials of cluster keys and tenants' SCRAM users, never a secret: the database holds nothing more), topics with their configs and partition placement,
ACL bindings, quotas, each tenant's schema registry (schemas with their ids, references,
subjects' versions and settings), the broker registry, the controller epoch and the snapshot versions.
Rows name each other by natural keys (``tn-...``, ``sa-...``, a topic's UUID, a user name),
never by database primary keys, so a backup restores into any database. A reference to a
section whose key has several fields (a schema: its tenant and its per-tenant id) is the list
of those fields' values in key order (``["tn-...", 3]``); a row and the row it names agree on
the references they both hold (a subject version names a schema of its own tenant).

Every field of every backed-up model is either in the table or in its section's
``skipped_fields`` with the reason, and every model of the project is either a section or
in :data:`SKIPPED_MODELS` with the reason: ``tests/webapp/backup`` fails when a migration
adds a field or a model that nobody classified, so nothing new is silently left out.

Document layout (format version 1)::

    {"format": "weir-control-plane-backup", "format_version": 1,
     "created_at": "2025-01-31T12:00:00+00:00", "database_vendor": "postgresql",
     "migrations": ["accounts.0001_initial", ...],      # applied when the backup was taken
     "sections": {"users": [{"username": ..., ...}, ...], "tenants": [...], ...}}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

FORMAT_NAME = "weir-control-plane-backup"  # the "format" member of every backup
FORMAT_VERSION = 1  # the "format_version" this code writes and the newest it reads

# Kinds of field values in a document, and what each holds.
TEXT = "text"  # a JSON string
INTEGER = "integer"  # a JSON integer
BOOLEAN = "boolean"  # true / false
DATETIME = "datetime"  # ISO 8601 with a UTC offset
UUID = "uuid"  # a UUID as text
STRING_MAP = "string_map"  # an object of strings (topic config overrides)
INTEGER_LIST = "integer_list"  # a list of integers (broker node ids)
REFERENCE = "reference"  # the natural key of a row of another section
REFERENCE_LIST = "reference_list"  # natural keys of rows of another section (many-to-many)
PERMISSION_LIST = "permission_list"  # Django permissions as "app_label.codename" (many-to-many)


@dataclass(frozen=True)
class Field:
    """One member of a row. ``name`` is the model field's name (for a reference, the foreign
    key; for a list, the many-to-many field); ``target`` is the section a reference names."""

    name: str
    kind: str
    nullable: bool = False
    choices: tuple[str, ...] = ()
    target: str = ""


@dataclass(frozen=True)
class Section:
    """One model's rows. ``key`` names the fields that identify a row (unique in the section);
    a reference to a row is its :meth:`natural_key`. ``singleton``: at most one row."""

    name: str
    model: str  # "app_label.ModelName"
    key: tuple[str, ...]
    fields: tuple[Field, ...]
    skipped_fields: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    singleton: bool = False

    def field_named(self, name: str) -> Field:
        for candidate in self.fields:
            if candidate.name == name:
                return candidate
        raise KeyError(f"section {self.name} has no field {name!r}")

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(candidate.name for candidate in self.fields)

    def natural_key(self, row: Mapping[str, Any]) -> Any:
        """How a reference names ``row`` (checked values): its key's value for a one-field key,
        else the tuple of its key's values (a list in the document)."""
        if len(self.key) == 1:
            return row[self.key[0]]
        return tuple(row[name] for name in self.key)


_PLANS = ("free", "standard", "enterprise")
_ROLES = ("owner", "admin", "developer", "viewer")
# The schema registry's compatibility levels and modes (as webapp.schemas.compatibility spells them).
_COMPATIBILITY_LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
_MODES = ("READWRITE", "READONLY", "IMPORT")
_PRIMARY_KEY = {"id": "a database primary key: rows name each other by natural keys"}

# The sections, in restore order: every section comes after the sections it references.
SECTIONS: tuple[Section, ...] = (
    Section(
        "permission_groups",
        "auth.Group",
        ("name",),
        (Field("name", TEXT), Field("permissions", PERMISSION_LIST)),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "users",
        "auth.User",
        ("username",),
        (
            Field("username", TEXT),
            # Django's salted hash (PBKDF2 by default): users sign in with their passwords after a
            # restore, whatever DJANGO_SECRET_KEY the new deployment has.
            Field("password", TEXT),
            Field("email", TEXT),
            Field("first_name", TEXT),
            Field("last_name", TEXT),
            Field("is_active", BOOLEAN),
            Field("is_staff", BOOLEAN),
            Field("is_superuser", BOOLEAN),
            Field("date_joined", DATETIME),
            Field("last_login", DATETIME, nullable=True),
            Field("groups", REFERENCE_LIST, target="permission_groups"),
            Field("user_permissions", PERMISSION_LIST),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "tenants",
        "accounts.Tenant",
        ("public_id",),
        (Field("public_id", TEXT), Field("name", TEXT), Field("slug", TEXT), Field("plan", TEXT, choices=_PLANS), Field("created_at", DATETIME)),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "memberships",
        "accounts.Membership",
        ("public_id",),
        (
            Field("public_id", TEXT),
            Field("tenant", REFERENCE, target="tenants"),
            Field("user", REFERENCE, target="users"),
            Field("role", TEXT, choices=_ROLES),
            Field("created_at", DATETIME),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "invitations",
        "accounts.Invitation",
        ("token_sha256",),
        (
            Field("token_sha256", TEXT),  # the invitation link's token is never stored, only its hash
            Field("tenant", REFERENCE, target="tenants"),
            Field("email", TEXT),
            Field("role", TEXT, choices=_ROLES),
            Field("invited_by", REFERENCE, nullable=True, target="users"),
            Field("created_at", DATETIME),
            Field("expires_at", DATETIME),
            Field("accepted_at", DATETIME, nullable=True),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "service_accounts",
        "accounts.ServiceAccount",
        ("public_id",),
        (
            Field("public_id", TEXT),
            Field("tenant", REFERENCE, target="tenants"),
            Field("name", TEXT),
            Field("description", TEXT),
            Field("role", TEXT, choices=_ROLES),
            Field("created_at", DATETIME),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "api_keys",
        "accounts.ApiKey",
        ("key_id",),
        (
            Field("key_id", TEXT),
            Field("tenant", REFERENCE, target="tenants"),
            Field("kind", TEXT, choices=("cloud", "cluster")),
            Field("secret_sha256", TEXT),  # what the database and brokers keep; the secret itself exists nowhere
            Field("owner_service_account", REFERENCE, nullable=True, target="service_accounts"),
            Field("owner_membership", REFERENCE, nullable=True, target="memberships"),
            Field("description", TEXT),
            Field("created_by", REFERENCE, nullable=True, target="users"),
            Field("created_at", DATETIME),
            Field("last_used_at", DATETIME, nullable=True),
            Field("revoked_at", DATETIME, nullable=True),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "scram_credentials",
        "accounts.ScramCredential",
        ("api_key", "mechanism"),
        (
            # Kept: they can be derived only from the secret, which exists nowhere; without them a
            # restored key would authenticate with PLAIN only. Salt and keys are base64 text.
            Field("api_key", REFERENCE, target="api_keys"),
            Field("mechanism", TEXT, choices=("SCRAM-SHA-256", "SCRAM-SHA-512")),
            Field("salt", TEXT),
            Field("iterations", INTEGER),
            Field("stored_key", TEXT),  # H(ClientKey): verifies a client's proof, cannot make one
            Field("server_key", TEXT),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "scram_users",
        "accounts.ScramUserCredential",
        ("tenant", "user_name", "mechanism"),
        (
            # Kept: tenants' SCRAM users (Kafka's AlterUserScramCredentials) can be made again only
            # with their passwords, which exist nowhere. Salt and keys are base64 text.
            Field("tenant", REFERENCE, target="tenants"),
            Field("user_name", TEXT),
            Field("mechanism", TEXT, choices=("SCRAM-SHA-256", "SCRAM-SHA-512")),
            Field("salt", TEXT),
            Field("iterations", INTEGER),
            Field("stored_key", TEXT),  # H(ClientKey): verifies a client's proof, cannot make one
            Field("server_key", TEXT),
            Field("created_at", DATETIME),
            Field("updated_at", DATETIME),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "topics",
        "catalog.Topic",
        ("topic_id",),
        (
            Field("topic_id", UUID),  # brokers know the topic by this id: it must survive the restore
            Field("tenant", REFERENCE, nullable=True, target="tenants"),  # null: an internal topic
            Field("name", TEXT),
            Field("partition_count", INTEGER),
            Field("replication_factor", INTEGER),
            Field("configs", STRING_MAP),
            Field("created_at", DATETIME),
            Field("updated_at", DATETIME),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "partitions",
        "catalog.Partition",
        ("topic", "index"),
        (
            Field("topic", REFERENCE, target="topics"),
            Field("index", INTEGER),
            Field("replicas", INTEGER_LIST),
            Field("isr", INTEGER_LIST),
            Field("leader", INTEGER),
            Field("leader_epoch", INTEGER),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "acl_bindings",
        "catalog.AclBinding",
        ("public_id",),
        (
            Field("public_id", TEXT),
            Field("tenant", REFERENCE, target="tenants"),
            Field("principal", TEXT),
            Field("resource_type", TEXT, choices=("TOPIC", "GROUP", "CLUSTER")),
            Field("resource_name", TEXT),
            Field("pattern_type", TEXT, choices=("LITERAL", "PREFIXED")),
            Field(
                "operation",
                TEXT,
                choices=("ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"),
            ),
            Field("permission", TEXT, choices=("ALLOW", "DENY")),
            Field("host", TEXT),
            Field("created_at", DATETIME),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "quotas",
        "catalog.Quota",
        ("tenant",),
        (
            Field("tenant", REFERENCE, target="tenants"),
            Field("produce_bytes_per_second", INTEGER, nullable=True),
            Field("consume_bytes_per_second", INTEGER, nullable=True),
            Field("updated_at", DATETIME),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "schema_registries",
        "schemas.Registry",
        ("tenant",),
        (
            Field("tenant", REFERENCE, target="tenants"),
            # The next id to allocate, kept so that a registration after a restore never reuses an id.
            Field("next_schema_id", INTEGER),
            Field("compatibility", TEXT, nullable=True, choices=_COMPATIBILITY_LEVELS),
            Field("mode", TEXT, nullable=True, choices=_MODES),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "schemas",
        "schemas.Schema",
        ("tenant", "schema_id"),  # ids are per tenant: references name a schema by both
        (
            Field("tenant", REFERENCE, target="tenants"),
            Field("schema_id", INTEGER),
            Field("schema_type", TEXT),
            Field("text", TEXT),
            Field("fingerprint", TEXT),  # what makes a registration of the same schema answer the same id
            Field("created_at", DATETIME),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "schema_references",
        "schemas.SchemaReference",
        ("schema", "position"),
        (
            Field("schema", REFERENCE, target="schemas"),
            Field("position", INTEGER),
            Field("name", TEXT),
            Field("subject", TEXT),  # the referenced version by subject and number, as the API names it
            Field("version", INTEGER),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "subject_versions",
        "schemas.SubjectVersion",
        ("tenant", "subject", "version"),
        (
            Field("tenant", REFERENCE, target="tenants"),
            Field("subject", TEXT),
            Field("version", INTEGER),
            Field("schema", REFERENCE, target="schemas"),  # of the same tenant (checked)
            Field("deleted", BOOLEAN),  # soft-deleted versions keep their numbers and stay readable with ?deleted=true
            Field("created_at", DATETIME),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "subject_settings",
        "schemas.SubjectSetting",
        ("tenant", "subject"),
        (
            Field("tenant", REFERENCE, target="tenants"),
            Field("subject", TEXT),
            Field("compatibility", TEXT, nullable=True, choices=_COMPATIBILITY_LEVELS),
            Field("mode", TEXT, nullable=True, choices=_MODES),
        ),
        MappingProxyType(_PRIMARY_KEY),
    ),
    Section(
        "brokers",
        "fleet.BrokerNode",
        ("node_id",),
        (
            Field("node_id", INTEGER),
            Field("host", TEXT),
            Field("port", INTEGER),
            Field("rack", TEXT),
            Field("state", TEXT, choices=("ONLINE", "OFFLINE", "STOPPED", "UNKNOWN")),
            Field("last_seen_at", DATETIME, nullable=True),
            Field("registered_at", DATETIME),
        ),
        MappingProxyType({**_PRIMARY_KEY, "kafka_port": "each broker registers its Kafka listener again when it starts"}),
    ),
    Section(
        "controller_epoch",
        "fleet.ControllerEpoch",
        (),
        (Field("epoch", INTEGER), Field("holder", TEXT), Field("activated_at", DATETIME, nullable=True)),
        MappingProxyType({"id": "always 1: the table has one row"}),
        singleton=True,
    ),
    Section(
        "snapshot_versions",
        "provisioning.SnapshotVersion",
        ("kind",),
        (Field("kind", TEXT, choices=("partitions", "security")), Field("version", INTEGER)),
    ),
)

SECTIONS_BY_NAME: Mapping[str, Section] = MappingProxyType({section.name: section for section in SECTIONS})

# Models of the project that a backup leaves out, and why.
SKIPPED_MODELS: Mapping[str, str] = MappingProxyType(
    {
        "provisioning.ProvisioningJob": "history of pushes to brokers; after a restore `manage.py resync_brokers` pushes everything anew",
        "sessions.Session": "sign-in sessions; users sign in again after a restore",
        "admin.LogEntry": "the Django admin's change log, not state",
        "accounts.ApiKeyApplication": "which applications brokers saw using a cluster key: observations, reported again by the brokers after a restore",
        "audit.AuditEvent": "the tenants' audit log is history, not desired state: admins export it (CSV/JSON) and a restore starts a new log",
        # Sign-in throttling (django-axes): failure counts and lock-outs expire by themselves.
        "axes.AccessAttempt": "sign-in failure counts; they expire with the cool-off, and a restore starts with none",
        "axes.AccessAttemptExpiration": "when an AccessAttempt's lock-out ends; left out with the attempts",
        "axes.AccessFailureLog": "a log of failed sign-ins, not state",
        "axes.AccessLog": "a log of sign-ins, not state",
        "contenttypes.ContentType": "made by `manage.py migrate` on the new database",
        "auth.Permission": "made by `manage.py migrate` on the new database; groups and users name permissions by app label and codename",
        # Metering holds derived data that can be large (a row per tenant, topic and hour): the
        # pipelines compute it again from the internal topics, and their Parquet output is the
        # long-term record. Its cursor is left out with it, so the usage job starts over from
        # what __usage still holds instead of resuming past aggregates that are not there.
        "metering.UsageAggregate": "derived by the usage pipeline from __usage; the Parquet history is the long-term record",
        "metering.PipelineState": "the pipelines' cursors: left out with the results they describe (see above)",
        "metering.PartitionLag": "re-evaluated by the lag evaluator within seconds",
        "metering.GroupLag": "re-evaluated by the lag evaluator within seconds",
        "metering.LagWindow": "the lag evaluator's windows: left out with its cursor (PipelineState), so it starts over from what __consumer_offsets holds",
        "metering.GroupLagHistory": "chart history, pruned after WEIR_METERING_HISTORY_DAYS",
        "metering.PipelineRun": "records of pipeline runs, pruned after WEIR_METERING_HISTORY_DAYS",
    }
)

# The apps whose applied migrations a backup records: a database restored into must have them.
MIGRATED_APPS = ("auth", "contenttypes", "accounts", "catalog", "fleet", "provisioning", "schemas")
