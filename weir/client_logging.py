"""Where a client's logs go: confluent-kafka's ``logger``, ``debug`` and ``log_level`` keys.

librdkafka logs through the application's ``logger`` (a ``logging.Logger``) when one is
configured, as ``logger.log(level, "%s [%s] %s", facility, client name, message)``, and to
stderr otherwise. Weir's clients do the same with the ``weir.client`` logger as the default
(Python's last-resort handler prints its warnings to stderr).

- ``log_level`` is a syslog level (0 emergency ... 6 info, 7 debug): records more detailed
  than it are not emitted at all.
- ``debug`` names librdkafka debug contexts (``broker``, ``msg``, ``cgrp``, ``fetch``... or
  ``all``); debug records of those contexts are emitted, and setting it raises the level to 7
  as librdkafka does. Without ``debug`` no debug record is emitted whatever the level.

One ``ClientLog`` per client configuration, shared by its threads (logging is thread-safe).
"""

from __future__ import annotations

import logging
from collections.abc import Set
from typing import Any

DEFAULT_LOGGER = "weir.client"

# Syslog levels -> logging levels.
_LEVELS = {
    0: logging.CRITICAL,
    1: logging.CRITICAL,
    2: logging.CRITICAL,
    3: logging.ERROR,
    4: logging.WARNING,
    5: logging.INFO,
    6: logging.INFO,
    7: logging.DEBUG,
}
SYSLOG_ERROR = 3
SYSLOG_WARNING = 4
SYSLOG_INFO = 6
SYSLOG_DEBUG = 7


class ClientLog:
    """The log of one client: ``logger`` (or weir.client), filtered by ``log_level`` and ``debug``."""

    __slots__ = ("logger", "name", "_contexts", "_max_level")

    def __init__(self, logger: Any, name: str, contexts: Set[str] = frozenset(), log_level: int = SYSLOG_INFO) -> None:
        self.logger = logger if logger is not None else logging.getLogger(DEFAULT_LOGGER)
        self.name = name
        self._contexts = frozenset(contexts)
        self._max_level = SYSLOG_DEBUG if self._contexts else log_level

    def debugs(self, context: str) -> bool:
        """Whether debug records of ``context`` (a librdkafka debug context) are emitted."""
        return self._max_level >= SYSLOG_DEBUG and (context in self._contexts or "all" in self._contexts)

    def log(self, syslog_level: int, facility: str, message: str, *args: Any) -> None:
        """Emit ``message % args`` at ``syslog_level`` unless log_level leaves it out."""
        if syslog_level > self._max_level:
            return
        text = message % args if args else message
        self.logger.log(_LEVELS[syslog_level], "%s [%s] %s", facility, self.name, text)

    def debug(self, context: str, facility: str, message: str, *args: Any) -> None:
        """A debug record, emitted only when ``debug`` names ``context`` (or all)."""
        if self.debugs(context):
            self.log(SYSLOG_DEBUG, facility, message, *args)

    def info(self, facility: str, message: str, *args: Any) -> None:
        self.log(SYSLOG_INFO, facility, message, *args)

    def warning(self, facility: str, message: str, *args: Any) -> None:
        self.log(SYSLOG_WARNING, facility, message, *args)

    def error(self, facility: str, message: str, *args: Any) -> None:
        self.log(SYSLOG_ERROR, facility, message, *args)
