"""The server side of SASL/SCRAM (RFC 5802, RFC 7677): SCRAM-SHA-256 and SCRAM-SHA-512 as Kafka speaks them.

One authentication is two round trips (Kafka's ``ScramSaslServer``)::

    client-first   n,[a=authzid],n=<key>,r=<client nonce>
    server-first   r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=<base64 gs2 header>,r=<combined nonce>,p=<base64 ClientProof>
    server-final   v=<base64 ServerSignature>

The username is the cluster API key or a SCRAM user's login name (a SASLname: ``=2C`` stands for ``,`` and ``=3D`` for
``=``). The broker holds, per key and mechanism, only a salt, an iteration count, StoredKey and
ServerKey (``webapp.accounts.scram`` derives them when the key is created). With ``AuthMessage``
= client-first-bare ``,`` server-first ``,`` client-final-without-proof, the proof is checked
by recovering ``ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage)`` and comparing
``H(ClientKey)`` with StoredKey in constant time; the server proves it knows ServerKey with
``ServerSignature = HMAC(ServerKey, AuthMessage)``.

Refused, with :class:`ScramError` naming what was wrong (never a value of a nonce, proof or
key): channel binding (``p=``; Weir offers no ``-PLUS`` mechanism), a mandatory extension
(``m=``) or any extension (Kafka's ``tokenauth`` included: Weir has no delegation tokens), an
authorization id other than the username, a nonce that is not the one this exchange made, a
message out of order (a replayed client-first, a client-final before it), a garbled one.

Who the key is and what its credential holds is the
:class:`~broker_nodes.security.authenticator.Authenticator`'s business: the exchange is handed
a lookup. Not thread-safe: one exchange belongs to one connection.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from weir.admin_scram import MIN_SCRAM_ITERATIONS, SCRAM_HASHES

# Mechanism name (as Kafka spells it) -> hashlib name of its hash function.
# Kafka's mechanisms -> hashlib names, and its minimum iteration count (a credential with fewer is
# refused when a snapshot is applied): the SDK's definitions, which the control plane checks too.
SCRAM_MECHANISMS = SCRAM_HASHES
MIN_ITERATIONS = MIN_SCRAM_ITERATIONS
MAX_ITERATIONS = 1_000_000  # clients compute PBKDF2 with the count the server sends (kafka-python refuses more)
SERVER_NONCE_BYTES = 24  # random bytes of the server's part of the nonce (32 base64url characters)


class ScramError(Exception):
    """A SCRAM message that is malformed, out of order, or whose proof is wrong; the message says which."""

    retriable = False


@dataclass(frozen=True)
class ScramCredential:
    """One key's credential for one mechanism, as the control plane pushed it. No value in a repr."""

    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    def __repr__(self) -> str:
        return f"ScramCredential({self.mechanism}, iterations={self.iterations})"

    def problem(self) -> str | None:
        """Why this credential cannot be used (unknown mechanism, too few iterations, key sizes), or None."""
        hash_name = SCRAM_MECHANISMS.get(self.mechanism)
        if hash_name is None:
            return f"unknown SCRAM mechanism {self.mechanism!r}"
        if not MIN_ITERATIONS <= self.iterations <= MAX_ITERATIONS:
            return f"{self.mechanism} iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}, not {self.iterations}"
        size = hashlib.new(hash_name).digest_size
        if not self.salt or len(self.stored_key) != size or len(self.server_key) != size:
            return f"{self.mechanism} needs a salt and a {size}-byte StoredKey and ServerKey"
        return None


# Given the username (the API key) and the mechanism, the key's credential; raises when there is none.
CredentialLookup = Callable[[str, str], ScramCredential]


def new_server_nonce() -> str:
    return secrets.token_urlsafe(SERVER_NONCE_BYTES)


def decode_saslname(name: str) -> str:
    """RFC 5802's SASLname: ``=2C`` is ``,``, ``=3D`` is ``=``, any other ``=`` is malformed."""
    parts = name.split("=")
    decoded = [parts[0]]
    for part in parts[1:]:
        if part[:2] == "2C":
            decoded.append("," + part[2:])
        elif part[:2] == "3D":
            decoded.append("=" + part[2:])
        else:
            raise ScramError("the username has an '=' that is not =2C or =3D")
    return "".join(decoded)


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    """``name=value`` pairs separated by commas, in order (RFC 5802's names are one letter; Kafka's extensions, like ``tokenauth``, longer)."""
    pairs = []
    for item in message.split(","):
        name, separator, value = item.partition("=")
        if not separator or not name.isascii() or not name.isalnum():
            raise ScramError(f"the {what} message is not a list of attribute=value pairs")
        pairs.append((name, value))
    return pairs


def _check_nonce(nonce: str) -> str:
    if not nonce or any(not 0x21 <= ord(char) <= 0x7E for char in nonce):
        raise ScramError("the client nonce must be one or more printable ASCII characters other than ','")
    return nonce


def _decode_text(message: bytes, what: str) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"the {what} message is not UTF-8") from None


def _reject_extensions(pairs: list[tuple[str, str]], what: str) -> None:
    if pairs:
        names = ", ".join(sorted({name for name, _ in pairs}))
        raise ScramError(f"the {what} message has attributes this server does not support ({names}): Weir knows no SCRAM extension")


@dataclass(frozen=True)
class ClientFirst:
    gs2_header: str
    username: str
    nonce: str
    bare: str


def parse_client_first(message: bytes) -> ClientFirst:
    """``gs2-header client-first-message-bare``; raise ScramError when it is not one this server accepts."""
    text = _decode_text(message, "client-first")
    pieces = text.split(",", 2)
    if len(pieces) != 3:
        raise ScramError("the client-first message must start with a GS2 header such as 'n,,'")
    flag, authzid, bare = pieces
    if flag.startswith("p="):
        raise ScramError("channel binding is not supported (no -PLUS mechanism is offered): use gs2 flag 'n'")
    if flag not in ("n", "y"):
        raise ScramError("the GS2 channel-binding flag must be 'n' or 'y'")
    if authzid and not authzid.startswith("a="):
        raise ScramError("the GS2 authorization id must be empty or 'a=<name>'")
    pairs = _attributes(bare, "client-first")
    if pairs[0][0] == "m":
        raise ScramError("the client-first message has a mandatory extension (m=), which this server does not support")
    if len(pairs) < 2 or pairs[0][0] != "n" or pairs[1][0] != "r":
        raise ScramError("the client-first message must have n=<username> then r=<nonce>")
    _reject_extensions(pairs[2:], "client-first")
    username = decode_saslname(pairs[0][1])
    if not username:
        raise ScramError("the username (the cluster API key) is empty")
    if authzid and decode_saslname(authzid[2:]) != username:
        raise ScramError("an authorization id other than the username (the API key) is not supported")
    return ClientFirst(f"{flag},{authzid},", username, _check_nonce(pairs[1][1]), bare)


class ScramExchange:
    """The server's side of one SCRAM authentication: :meth:`first`, then :meth:`final`, each once, in that order."""

    def __init__(self, mechanism: str, lookup: CredentialLookup, *, server_nonce: Callable[[], str] = new_server_nonce) -> None:
        hash_name = SCRAM_MECHANISMS.get(mechanism)
        if hash_name is None:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}: one of {', '.join(SCRAM_MECHANISMS)}")
        self.mechanism = mechanism
        self._hash_name = hash_name
        self._lookup = lookup
        self._server_nonce = server_nonce
        self._client_first: ClientFirst | None = None
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None
        self._done = False
        self._verified = False

    @property
    def username(self) -> str:
        """The API key the client named (after :meth:`first`)."""
        return self._client_first.username if self._client_first is not None else ""

    @property
    def credential(self) -> ScramCredential:
        """The credential the client proved it holds (after :meth:`final` returned)."""
        if self._credential is None or not self._verified:
            raise ScramError("the SCRAM exchange has not completed")
        return self._credential

    @property
    def complete(self) -> bool:
        """Whether :meth:`final` verified the client's proof (the client is who it said)."""
        return self._done and self._verified

    def respond(self, message: bytes) -> bytes:
        """The answer to the client's next message: :meth:`first` for the first, :meth:`final` for the second."""
        return self.first(message) if self._client_first is None else self.final(message)

    def first(self, message: bytes) -> bytes:
        """Answer the client-first message with the server-first message (combined nonce, salt, iterations)."""
        if self._client_first is not None:
            raise ScramError("a second client-first message in one exchange (replayed or out of order)")
        client_first = parse_client_first(message)
        self._client_first = client_first
        credential = self._lookup(client_first.username, self.mechanism)
        self._credential = credential
        self._nonce = client_first.nonce + self._server_nonce()
        self._server_first = f"r={self._nonce},s={base64.b64encode(credential.salt).decode('ascii')},i={credential.iterations}"
        return self._server_first.encode("ascii")

    def final(self, message: bytes) -> bytes:
        """Verify the client-final message's proof; answer with the server-final message (the server signature)."""
        client_first, credential = self._client_first, self._credential
        if client_first is None or credential is None or self._done:
            raise ScramError("a client-final message out of order (before the client-first, or replayed)")
        self._done = True  # one try: a wrong proof ends the exchange
        text = _decode_text(message, "client-final")
        if text.startswith(("n,", "y,", "p=")):
            raise ScramError("a second client-first message in one exchange (replayed or out of order)")
        without_proof, separator, proof_text = text.rpartition(",p=")
        if not separator:
            raise ScramError("the client-final message must end with p=<proof>")
        pairs = _attributes(without_proof, "client-final")
        if len(pairs) < 2 or pairs[0][0] != "c" or pairs[1][0] != "r":
            raise ScramError("the client-final message must have c=<channel binding>, r=<nonce>, then p=<proof>")
        _reject_extensions(pairs[2:], "client-final")
        if _base64_decode(pairs[0][1], "channel binding") != client_first.gs2_header.encode("utf-8"):
            raise ScramError("the channel binding (c=) does not repeat the client-first message's GS2 header")
        if not hmac.compare_digest(pairs[1][1].encode("utf-8"), self._nonce.encode("ascii")):
            raise ScramError("the nonce is not the one this exchange made (replayed or forged)")
        proof = _base64_decode(proof_text, "proof")
        auth_message = f"{client_first.bare},{self._server_first},{without_proof}".encode()
        client_signature = hmac.digest(credential.stored_key, auth_message, self._hash_name)
        if len(proof) != len(client_signature):
            raise ScramError(f"the proof must be {len(client_signature)} bytes for {self.mechanism}")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash_name, client_key).digest(), credential.stored_key):
            raise ScramError("wrong API secret or SCRAM password: the proof does not match")
        self._verified = True
        server_signature = hmac.digest(credential.server_key, auth_message, self._hash_name)
        return b"v=" + base64.b64encode(server_signature)


def _base64_decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ScramError(f"the {what} is not valid base64") from None
