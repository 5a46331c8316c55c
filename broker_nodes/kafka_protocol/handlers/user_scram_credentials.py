"""DescribeUserScramCredentials (key 50, v0) and AlterUserScramCredentials (key 51, v0), KIP-554:
``requests.scram_credentials``.

Kafka numbers the mechanisms (1 SCRAM-SHA-256, 2 SCRAM-SHA-512, 0 unknown); the request layer
names them as SASL does. A number Kafka does not define is passed on as an unknown name, which
the controller answers UNSUPPORTED_SASL_MECHANISM. An upsertion carries the client's salt and
salted password, never the password (Kafka's own AdminClient and librdkafka compute it).
"""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i8, i32

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, error_fields, response_module
from broker_nodes.requests import scram_credentials as scram_requests
from grpc_protos.weir.v1 import broker_pb2

DESCRIBE_USER_SCRAM_CREDENTIALS_KEY = 50
ALTER_USER_SCRAM_CREDENTIALS_KEY = 51
# Kafka's ScramMechanism type numbers.
MECHANISM_NAMES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MECHANISM_NUMBERS = {name: number for number, name in MECHANISM_NAMES.items()}
UNKNOWN_MECHANISM = 0


def mechanism_name(number: int) -> str:
    """The SASL name of Kafka's mechanism ``number``, or ``UNKNOWN(<number>)`` (which the controller refuses by name)."""
    return MECHANISM_NAMES.get(number, f"UNKNOWN({number})")


@api.handles(DESCRIBE_USER_SCRAM_CREDENTIALS_KEY, 0, 0)
def handle_describe_user_scram_credentials(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    users = None if request.users is None else [str(user.name) for user in request.users]
    described = scram_requests.describe_scram_credentials(context.broker, context.call, users)
    results = tuple(
        schema.DescribeUserScramCredentialsResult(
            user=user.user,
            **error_fields(user.error_code, user.error_message),
            credential_infos=tuple(
                schema.CredentialInfo(mechanism=i8(MECHANISM_NUMBERS.get(mechanism, UNKNOWN_MECHANISM)), iterations=i32(iterations))
                for mechanism, iterations in user.credentials
            ),
        )
        for user in described.users
    )
    return schema.DescribeUserScramCredentialsResponse(
        throttle_time=NO_THROTTLE, **error_fields(described.error_code, described.error_message), results=results
    )


@api.handles(ALTER_USER_SCRAM_CREDENTIALS_KEY, 0, 0)
def handle_alter_user_scram_credentials(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    alteration = broker_pb2.AlterUserScramCredentialsRequest(
        deletions=[
            broker_pb2.ScramCredentialDeletion(user=str(deletion.name), mechanism=mechanism_name(int(deletion.mechanism))) for deletion in request.deletions
        ],
        upsertions=[
            broker_pb2.ScramCredentialUpsertion(
                user=str(upsertion.name),
                mechanism=mechanism_name(int(upsertion.mechanism)),
                iterations=int(upsertion.iterations),
                salt=bytes(upsertion.salt),
                salted_password=bytes(upsertion.salted_password),
            )
            for upsertion in request.upsertions
        ],
    )
    results = scram_requests.alter_scram_credentials(context.broker, context.call, alteration)
    answers = tuple(schema.AlterUserScramCredentialsResult(user=result.user, **error_fields(result.error_code, result.error_message)) for result in results)
    return schema.AlterUserScramCredentialsResponse(throttle_time=NO_THROTTLE, results=answers)
