"""The errors the Weir DataSource raises, each naming what was wrong.

Spark wraps an exception raised in a Python worker (planning or reading) into its own
(``AnalysisException``, ``PythonException``, ``StreamingQueryException``) and keeps the Python
message, so the message alone must say which option, topic, partition or offset is at fault.
Every class carries the fields a caller may want to inspect and a ``retriable`` flag as the
SDK's errors do: a stalled read may succeed later, a bad option never will.

One line, not a traceback: Spark puts the Python traceback of a worker's exception into its
own message (an ``AnalysisException`` of eleven lines for a bad option, the traceback
inside the job's failure for a task), unless ``spark.sql.execution.pyspark.udf.hideTraceback.enabled``
is set. The source's entry points (:func:`one_line_errors`, :func:`one_line_iteration`)
therefore ask the Python worker to report only the exception's line when the exception is one
of these errors, which name what was wrong themselves: the worker exits after reporting an
exception, so nothing else it runs is affected. Any other exception (a bug) keeps its
traceback, and ``WEIR_SOURCE_TRACEBACK=1`` in the workers' environment keeps them all.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")


class WeirSourceError(Exception):
    """Base class of every error of the Weir DataSource."""

    retriable = False


class InvalidOptionError(WeirSourceError, ValueError):
    """An option is missing, unknown to the SDK, malformed, or contradicts another one."""

    def __init__(self, option: str, reason: str) -> None:
        super().__init__(f"weir source: option {option!r}: {reason}")
        self.option = option
        self.reason = reason


class UnknownTopicError(WeirSourceError):
    """A topic (or partition) named in subscribe / assign / an offsets JSON does not exist for this caller."""

    def __init__(self, topic: str, detail: str) -> None:
        super().__init__(f"weir source: topic {topic!r}: {detail}")
        self.topic = topic
        self.detail = detail


class AuthenticationFailedError(WeirSourceError):
    """The brokers refused the credentials (``sasl.username`` / ``sasl.password`` or ``weir.internal.token``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"weir source: the brokers refused the credentials: {detail}")
        self.detail = detail


class AuthorizationFailedError(WeirSourceError):
    """The credentials are valid but the principal may not read (or describe) ``topic``."""

    def __init__(self, topic: str, detail: str) -> None:
        super().__init__(f"weir source: not authorized to read topic {topic!r}: {detail}")
        self.topic = topic
        self.detail = detail


class BrokersUnavailableError(WeirSourceError):
    """No broker answered (wrong ``bootstrap.servers``, brokers down, TLS mismatch)."""

    retriable = True

    def __init__(self, bootstrap_servers: str, detail: str) -> None:
        super().__init__(f"weir source: no broker answered at {bootstrap_servers}: {detail}")
        self.bootstrap_servers = bootstrap_servers
        self.detail = detail


class DataLossError(WeirSourceError):
    """Records of a requested range are gone (retention, a topic recreated) or offsets are past the end.

    Raised only with ``failOnDataLoss`` true (the default); with false the range is clamped to
    what the partition holds and the read goes on.
    """

    def __init__(self, topic: str, partition: int, detail: str) -> None:
        super().__init__(
            f"weir source: {topic} [{partition}]: {detail}. Some data may have been lost; set failOnDataLoss=false to skip what is missing instead of failing"
        )
        self.topic = topic
        self.partition = partition
        self.detail = detail


class ReadTimeoutError(WeirSourceError):
    """Reading a range made no progress for ``kafkaConsumer.pollTimeoutMs``."""

    retriable = True

    def __init__(self, topic: str, partition: int, position: int, until: int, seconds: float, last_error: str | None = None) -> None:
        cause = f"; last client error: {last_error}" if last_error else ""
        super().__init__(
            f"weir source: {topic} [{partition}]: no record arrived for {seconds:g} s at offset {position} "
            f"while reading up to offset {until} (kafkaConsumer.pollTimeoutMs){cause}"
        )
        self.topic = topic
        self.partition = partition
        self.position = position
        self.until = until


def _report_message_only() -> None:
    """Make the Python worker report the exception being raised as its line alone (see the module docstring)."""
    if not os.environ.get("WEIR_SOURCE_TRACEBACK"):
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"  # read by pyspark.util.handle_worker_exception


def one_line_errors(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """A DataSource method whose :class:`WeirSourceError` reaches the user as one line."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return function(*args, **kwargs)
        except WeirSourceError:
            _report_message_only()
            raise

    return wrapper


def one_line_iteration(items: Iterator[_T]) -> Iterator[_T]:
    """``items``, with a :class:`WeirSourceError` raised while iterating reaching the user as one line."""
    try:
        yield from items
    except WeirSourceError:
        _report_message_only()
        raise
