"""The ``SchemaRegistryClient`` configuration, read as confluent-kafka reads it.

``url`` (one, or several separated by commas, tried in turn when one cannot be reached),
``basic.auth.user.info`` (``key:secret``, a Weir cloud API key and its secret) or the same in the
URL's userinfo, ``basic.auth.credentials.source`` (``USER_INFO`` or ``URL``, as older
confluent-kafka releases and the Java client name them), TLS (``ssl.ca.location``,
``ssl.certificate.location``, ``ssl.key.location``, ``ssl.key.password``), ``proxy``, ``timeout``
(seconds, 30 unless set), ``cache.capacity``, ``cache.latest.ttl.sec``, ``max.retries``, ``retries.wait.ms``,
``retries.max.wait.ms``. Any other key is refused by name, as confluent-kafka does.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

DEFAULT_CACHE_CAPACITY = 1000  # confluent-kafka's
DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRIES_WAIT_MS = 1000
DEFAULT_RETRIES_MAX_WAIT_MS = 20000
# Seconds a request may take. confluent-kafka waits without limit by default; a registry that
# hangs would then hang every producer that meets a new subject, so Weir bounds it.
DEFAULT_TIMEOUT_S = 30.0
CREDENTIAL_SOURCES = ("USER_INFO", "URL")


@dataclass(frozen=True)
class ClientConf:
    base_urls: tuple[str, ...]
    auth: tuple[str, str] | None
    ssl_context: ssl.SSLContext | None
    proxy: str | None
    timeout: float | None
    cache_capacity: int
    cache_latest_ttl_sec: float | None
    max_retries: int
    retries_wait_ms: int
    retries_max_wait_ms: int


def _number(conf: dict[str, Any], key: str, default: float | None) -> float | None:
    value = conf.pop(key, None)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{key} must be a number, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{key} must not be negative, got {value}")
    return value


def _split_urls(value: object) -> tuple[list[str], tuple[str, str] | None]:
    """The base URLs without userinfo, and the first URL's userinfo (if any)."""
    if value is None:
        raise ValueError("Missing required configuration property url")
    if not isinstance(value, str):
        raise TypeError(f"url must be a str, not {type(value).__name__}")
    urls: list[str] = []
    userinfo: tuple[str, str] | None = None
    for raw in value.split(","):
        url = raw.strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"Invalid url {url!r}: an http:// or https:// URL is needed")
        if parts.username is not None and userinfo is None:
            userinfo = (unquote(parts.username), unquote(parts.password or ""))
        netloc = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
        if ":" in parts.hostname:  # an IPv6 literal keeps its brackets
            netloc = f"[{parts.hostname}]" + ("" if parts.port is None else f":{parts.port}")
        urls.append(urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")))
    return urls, userinfo


def _auth(conf: dict[str, Any], url_userinfo: tuple[str, str] | None) -> tuple[str, str] | None:
    source = conf.pop("basic.auth.credentials.source", None)
    if source is not None and str(source).upper() not in CREDENTIAL_SOURCES:
        raise ValueError(f"basic.auth.credentials.source must be one of {', '.join(CREDENTIAL_SOURCES)}, got {source!r}")
    user_info = conf.pop("basic.auth.user.info", None)
    if user_info is not None and url_userinfo is not None:
        raise ValueError(
            "basic.auth.user.info configured with userinfo credentials in the URL. Remove userinfo credentials from the url or remove basic.auth.user.info from the configuration"
        )
    if source is not None and str(source).upper() == "URL":
        if url_userinfo is None:
            raise ValueError("basic.auth.credentials.source URL needs the credentials in the url (https://key:secret@host)")
        return url_userinfo
    if user_info is None:
        return url_userinfo
    if not isinstance(user_info, str) or ":" not in user_info:
        raise ValueError("basic.auth.user.info must be in the form of {username}:{password}")
    key, secret = user_info.split(":", 1)
    return key, secret


def _ssl_context(conf: dict[str, Any]) -> ssl.SSLContext | None:
    ca = conf.pop("ssl.ca.location", None)
    certificate = conf.pop("ssl.certificate.location", None)
    key = conf.pop("ssl.key.location", None)
    password = conf.pop("ssl.key.password", None)
    if (key is not None or password is not None) and certificate is None:
        raise ValueError("ssl.certificate.location required when configuring ssl.key.location or ssl.key.password")
    if ca is None and certificate is None:
        return None  # urllib's default context for https
    if ca is False:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=ca if isinstance(ca, str) else None)
    if certificate is not None:
        context.load_cert_chain(certfile=certificate, keyfile=key, password=password)
    return context


def parse_client_conf(conf: dict[str, Any]) -> ClientConf:
    """Read ``conf`` (not changed); ValueError or TypeError naming the key that is wrong."""
    if not isinstance(conf, dict):
        raise TypeError(f"conf must be a dict, not {type(conf).__name__}")
    remaining = dict(conf)
    urls, url_userinfo = _split_urls(remaining.pop("url", None))
    auth = _auth(remaining, url_userinfo)
    context = _ssl_context(remaining)
    proxy = remaining.pop("proxy", None)
    timeout = _number(remaining, "timeout", DEFAULT_TIMEOUT_S)
    capacity = _number(remaining, "cache.capacity", DEFAULT_CACHE_CAPACITY)
    ttl = _number(remaining, "cache.latest.ttl.sec", None)
    retries = _number(remaining, "max.retries", DEFAULT_MAX_RETRIES)
    wait = _number(remaining, "retries.wait.ms", DEFAULT_RETRIES_WAIT_MS)
    longest = _number(remaining, "retries.max.wait.ms", DEFAULT_RETRIES_MAX_WAIT_MS)
    if remaining:
        raise ValueError(f"Unrecognized properties: {', '.join(sorted(remaining))}")
    return ClientConf(
        base_urls=tuple(urls),
        auth=auth,
        ssl_context=context,
        proxy=str(proxy) if proxy is not None else None,
        timeout=timeout,
        cache_capacity=int(capacity or 0),
        cache_latest_ttl_sec=ttl,
        max_retries=int(retries or 0),
        retries_wait_ms=int(wait or 0),
        retries_max_wait_ms=int(longest or 0),
    )
