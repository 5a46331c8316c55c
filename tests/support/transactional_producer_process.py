"""A transactional producer (librdkafka's, or the SDK's with ``client`` "sdk") as its own process, so that a test can freeze it (SIGSTOP).

``python -m tests.support.transactional_producer_process SPEC.json`` runs transactions until the
spec's stop file exists: each writes 2-6 records to random partitions of one topic, then commits
(``commit_share`` of them) or aborts. Every ended transaction is appended to the history file as
a :class:`tests.support.transaction_history.TransactionRecord` line (flushed at once, so a killed
or frozen process leaves a readable history). When the freeze file exists, the next transaction,
once its records are acknowledged and before it ends, writes a ``frozen`` event and stops its own
process with SIGSTOP: the test resumes it (SIGCONT) after transaction.timeout.ms, by when the
coordinator has aborted the transaction and bumped the epoch, so its end must fail (fenced).
A fatal client error ends the process after a ``fatal`` event; the transaction's outcome is then
unknown (:data:`UNKNOWN`).

:class:`TransactionalProducerProcess` is the test's handle on one such process.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.support.transaction_history import ABORT, ABORTED, COMMIT, COMMITTED, UNKNOWN, TransactionKey, TransactionRecord, read_history, record_value

CLIENT_SECONDS = 60.0  # longest one init/commit/abort/flush may take (failovers included)
END_ATTEMPTS = 5  # commit/abort retried this often on retriable errors
STOP_SECONDS = 90.0  # longest a stopping process may take to end its transaction and exit


@dataclass(frozen=True)
class ProducerSpec:
    name: str
    topic: str
    partitions: int
    history: str
    stop_file: str
    freeze_file: str
    config: dict[str, Any] = field(default_factory=dict)  # the client's settings (transactional.id included)
    seed: int = 0
    commit_share: float = 0.7
    client: str = "librdkafka"  # or "sdk": Weir's Producer over gRPC (KIP-890 transactions version 2: the epoch bumped at every end)


def _client_errors() -> tuple[type[Exception], ...]:
    from confluent_kafka import KafkaException

    from weir import KafkaException as SdkKafkaException

    return KafkaException, SdkKafkaException


def _end(producer: Any, commit: bool) -> None:
    """commit_transaction()/abort_transaction(), retried on retriable errors; raises KafkaException otherwise."""
    for attempt in range(END_ATTEMPTS):
        try:
            (producer.commit_transaction if commit else producer.abort_transaction)(CLIENT_SECONDS)
            return
        except _client_errors() as error:
            if not error.args[0].retriable() or attempt == END_ATTEMPTS - 1:
                raise


def _transaction(producer: Any, spec: ProducerSpec, number: int, rng: random.Random, history: Any) -> bool:
    """One transaction, recorded in ``history``; False when the producer can go on no more (fatal error)."""
    KafkaException = _client_errors()  # noqa: N806 - either client's exception, caught as one
    intent = COMMIT if rng.random() < spec.commit_share else ABORT
    count = rng.randint(2, 6)
    records = tuple((rng.randrange(spec.partitions), record_value(spec.name, number, intent, index, count)) for index in range(count))
    key = TransactionKey(spec.name, number)
    outcome, error_name = UNKNOWN, None
    try:
        producer.begin_transaction()
        for partition, value in records:
            producer.produce(spec.topic, value, partition=partition)
        producer.flush(CLIENT_SECONDS)
        if os.path.exists(spec.freeze_file) and not os.path.exists(spec.freeze_file + ".done"):
            Path(spec.freeze_file + ".done").touch()
            history.write(json.dumps({"event": "frozen", "txn": number}) + "\n")
            os.kill(os.getpid(), signal.SIGSTOP)
        try:
            _end(producer, intent == COMMIT)
            outcome = COMMITTED if intent == COMMIT else ABORTED
        except KafkaException as failure:
            error = failure.args[0]
            error_name = error.name()
            if error.fatal() or not error.txn_requires_abort():
                raise
            _end(producer, False)
            outcome = ABORTED
    except KafkaException as failure:
        error = failure.args[0]
        error_name = error_name or error.name()
        history.write(TransactionRecord(key, intent, outcome, records, error_name).to_json() + "\n")
        history.write(json.dumps({"event": "fatal", "txn": number, "error": error.name(), "fatal": error.fatal()}) + "\n")
        return False
    history.write(TransactionRecord(key, intent, outcome, records, error_name).to_json() + "\n")
    return True


def run(spec: ProducerSpec) -> int:
    if spec.client == "sdk":
        from weir import Producer
    else:
        from confluent_kafka import Producer

    rng = random.Random(spec.seed)
    with open(spec.history, "a", buffering=1) as history:
        producer = Producer(spec.config)
        producer.init_transactions(CLIENT_SECONDS)
        history.write(json.dumps({"event": "initialised"}) + "\n")
        number = 0
        while not os.path.exists(spec.stop_file):
            if not _transaction(producer, spec, number, rng, history):
                return 0
            number += 1
        history.write(json.dumps({"event": "stopped"}) + "\n")
    return 0


class TransactionalProducerProcess:
    """One producer subprocess under ``directory``: start, freeze on request, resume, stop, read its history."""

    def __init__(self, directory: Path, spec_fields: dict[str, Any]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.spec = ProducerSpec(
            history=str(directory / "history.jsonl"),
            stop_file=str(directory / "stop"),
            freeze_file=str(directory / "freeze"),
            **spec_fields,
        )
        self.spec_path = directory / "spec.json"
        self.spec_path.write_text(json.dumps(asdict(self.spec)))
        self.log_path = directory / "process.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def start(self) -> TransactionalProducerProcess:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen([sys.executable, "-m", __name__, str(self.spec_path)], stdout=log, stderr=subprocess.STDOUT)
        return self

    def history(self) -> tuple[list[TransactionRecord], list[dict[str, object]]]:
        return read_history(Path(self.spec.history))

    def ended(self, outcome: str) -> int:
        return sum(1 for transaction in self.history()[0] if transaction.outcome == outcome)

    def request_freeze(self) -> None:
        Path(self.spec.freeze_file).touch()

    def is_frozen(self) -> bool:
        """Whether the process is stopped by a signal (state T in /proc/PID/stat)."""
        if self.process is None or self.process.poll() is not None:
            return False
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")

    def resume(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def stop(self) -> int | None:
        """Ask it to stop after its transaction (bounded by STOP_SECONDS, then SIGKILL); its exit code."""
        if self.process is None:
            return None
        Path(self.spec.stop_file).touch()
        self.resume()
        try:
            return self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:]) if self.log_path.exists() else ""


def main(argv: list[str]) -> int:
    (spec_path,) = argv
    return run(ProducerSpec(**json.loads(Path(spec_path).read_text())))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
