"""Exit codes and the errors commands raise, and how a Kafka error is put in words."""

from __future__ import annotations

from weir.errors import ErrorCode, KafkaError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2  # what argparse exits with
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a command stopped by Ctrl-C

# Both names exist across Kafka versions: UNKNOWN_TOPIC_OR_PARTITION from brokers,
# _UNKNOWN_TOPIC from clients that found the topic missing in their cluster map.
UNKNOWN_TOPIC_CODES = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode._UNKNOWN_TOPIC})
# Codes by which the SDK says that no broker answered.
UNREACHABLE_CODES = frozenset({ErrorCode._TRANSPORT, ErrorCode._ALL_BROKERS_DOWN, ErrorCode._TIMED_OUT})


class CommandError(Exception):
    """A failure the user can act on: reported as one line on stderr, exit code 1."""

    retriable = False


class UsageError(Exception):
    """Options that parse but do not make sense together: reported like argparse, exit code 2."""

    retriable = False


def describe_kafka_error(error: KafkaError, bootstrap_servers: str | None = None) -> str:
    """``<message> (<ERROR_NAME>)``; names the brokers tried when none could be reached."""
    text = f"{error.str()} ({error.name()})"
    if bootstrap_servers is not None and error.code() in UNREACHABLE_CODES:
        return f"cannot reach a broker at {bootstrap_servers}: {text}"
    return text
