"""HTTP to the registry with the standard library: JSON bodies, HTTP Basic, retries.

A request goes to the first base URL; when that one cannot be reached it goes to the next (as
confluent-kafka does). An answer of 408, 429, 500, 502, 503 or 504 is retried up to
``max.retries`` times, waiting ``retries.wait.ms`` doubled per attempt, never above
``retries.max.wait.ms`` (``weir.backoff``). An error answer becomes a :class:`SchemaRegistryError`
with the registry's ``error_code`` and ``message``; no answer at all is one with status -1.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from weir.backoff import exponential_backoff
from weir.schema_registry.conf import ClientConf
from weir.schema_registry.error import SchemaRegistryError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; q=0.9, application/json; q=0.5"
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def path_segment(value: object) -> str:
    """``value`` as one URL path segment (a subject may hold '/', ':' or spaces)."""
    return quote(str(value), safe="")


def _query_string(query: dict[str, Any] | None) -> str:
    if not query:
        return ""
    pairs = {key: (str(value).lower() if isinstance(value, bool) else value) for key, value in query.items() if value is not None}
    return "?" + urlencode(pairs) if pairs else ""


class RestClient:
    """Sends one request and returns its decoded JSON answer. Thread-safe (holds no connection)."""

    def __init__(self, conf: ClientConf, sleep: Callable[[float], None] = time.sleep) -> None:
        self._conf = conf
        self._sleep = sleep
        handlers: list[urllib.request.BaseHandler] = [urllib.request.HTTPSHandler(context=conf.ssl_context)]
        if conf.proxy is not None:
            handlers.append(urllib.request.ProxyHandler({"http": conf.proxy, "https": conf.proxy}))
        self._opener = urllib.request.build_opener(*handlers)
        self._headers = {"Accept": ACCEPT, "Content-Type": CONTENT_TYPE}
        if conf.auth is not None:
            token = base64.b64encode(f"{conf.auth[0]}:{conf.auth[1]}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"

    def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        return self.send("GET", path, None, query)

    def post(self, path: str, body: Any, query: dict[str, Any] | None = None) -> Any:
        return self.send("POST", path, body, query)

    def put(self, path: str, body: Any = None) -> Any:
        return self.send("PUT", path, body, None)

    def delete(self, path: str, query: dict[str, Any] | None = None) -> Any:
        return self.send("DELETE", path, None, query)

    def send(self, method: str, path: str, body: Any, query: dict[str, Any] | None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        suffix = "/" + path.lstrip("/") + _query_string(query)
        unreachable: SchemaRegistryError | None = None
        for base_url in self._conf.base_urls:
            try:
                return self._send_with_retries(method, base_url + suffix, data)
            except _Unreachable as error:
                unreachable = SchemaRegistryError(-1, SchemaRegistryError.UNKNOWN, f"{base_url} could not be reached: {error.reason}")
        assert unreachable is not None  # base_urls is never empty (conf.parse_client_conf)
        raise unreachable

    def _send_with_retries(self, method: str, url: str, data: bytes | None) -> Any:
        attempt = 0
        while True:
            status, payload = self._send_once(method, url, data)
            if status < 400:
                return _decode(status, payload) if payload else None
            if status in RETRIED_STATUSES and attempt < self._conf.max_retries:
                self._sleep(exponential_backoff(self._conf.retries_wait_ms, attempt, self._conf.retries_max_wait_ms) / 1000)
                attempt += 1
                continue
            raise _error_of(status, payload)

    def _send_once(self, method: str, url: str, data: bytes | None) -> tuple[int, bytes]:
        request = urllib.request.Request(url, data=data, method=method, headers=self._headers)
        try:
            with self._opener.open(request, timeout=self._conf.timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.read()
        except (urllib.error.URLError, OSError) as error:
            raise _Unreachable(getattr(error, "reason", error)) from error


class _Unreachable(Exception):
    def __init__(self, reason: object) -> None:
        super().__init__(reason)
        self.reason = reason


def _decode(status: int, payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except ValueError as error:
        raise SchemaRegistryError(status, SchemaRegistryError.UNKNOWN, f"the registry's answer is not JSON: {payload[:200]!r}") from error


def _error_of(status: int, payload: bytes) -> SchemaRegistryError:
    """The registry's ``{"error_code", "message"}`` as an exception; anything else with its text."""
    try:
        document = json.loads(payload)
    except ValueError:
        document = None
    if isinstance(document, dict) and "error_code" in document:
        code = document.get("error_code")
        return SchemaRegistryError(status, code if isinstance(code, int) else SchemaRegistryError.UNKNOWN, str(document.get("message", "")))
    text = payload.decode("utf-8", "replace").strip()[:500] or "no body"
    return SchemaRegistryError(status, SchemaRegistryError.UNKNOWN, f"Unknown Schema Registry Error: {text}")
