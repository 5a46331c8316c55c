"""A librdkafka consume-transform-produce worker as its own process (KIP-447's exactly-once pipeline).

``python -m tests.support.ctp_worker_process SPEC.json`` reads the input topic at read_committed as
a member of a group (auto commit off) and, per batch of up to ``batch`` records, writes each record as
``out:<input value>`` to the output topic (same partition) and commits the consumer's positions
with send_offsets_to_transaction in the same transaction. ``abort_share`` of the transactions are
aborted on purpose: the consumer seeks back to the batch's first offsets and processes it again.
An abortable error does the same; a fatal one ends the process. Each ended transaction is a line
of the history file (``{"outcome": ..., "inputs": [...], "error": ...}``); the process stops once
it committed ``expected`` inputs or the stop file exists. Exactly-once means the output read at
read_committed holds every input once (:func:`tests.support.transaction_history.check_exactly_once`).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLIENT_SECONDS = 60.0  # longest one client call may take (failovers included)
EMPTY_POLLS_BEFORE_GIVING_UP = 600  # consume() calls of 0.5 s that found nothing (5 minutes: bounded)


@dataclass(frozen=True)
class WorkerSpec:
    input_topic: str
    output_topic: str
    group: str
    expected: int  # input records in all
    history: str
    stop_file: str
    config: dict[str, Any] = field(default_factory=dict)  # librdkafka connection settings
    transactional_id: str = "jepsen-ctp"
    seed: int = 0
    abort_share: float = 0.2
    batch: int = 3  # input records per transaction, at most: small, so that the work spans the faults


def _rewind(consumer: Any, batch: list[Any]) -> None:
    """Seek each partition of ``batch`` back to its first record: an aborted transaction's input is read again."""
    from confluent_kafka import TopicPartition

    first: dict[int, int] = {}
    for message in batch:
        first.setdefault(message.partition(), message.offset())
    for partition, offset in first.items():
        consumer.seek(TopicPartition(batch[0].topic(), partition, offset))


def run(spec: WorkerSpec) -> int:
    from confluent_kafka import Consumer, KafkaException, Producer

    rng = random.Random(spec.seed)
    consumer = Consumer(
        {
            **spec.config,
            "group.id": spec.group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    producer = Producer({**spec.config, "transactional.id": spec.transactional_id, "transaction.timeout.ms": 60000, "linger.ms": 5})
    producer.init_transactions(CLIENT_SECONDS)
    consumer.subscribe([spec.input_topic])
    committed, empty_polls = 0, 0
    with open(spec.history, "a", buffering=1) as history:
        while committed < spec.expected and not os.path.exists(spec.stop_file) and empty_polls < EMPTY_POLLS_BEFORE_GIVING_UP:
            batch = [message for message in consumer.consume(spec.batch, 0.5) if message.error() is None]
            if not batch:
                empty_polls += 1
                continue
            empty_polls = 0
            inputs = [message.value().decode() for message in batch]
            abort = rng.random() < spec.abort_share
            try:
                producer.begin_transaction()
                for message in batch:
                    producer.produce(spec.output_topic, b"out:" + message.value(), partition=message.partition())
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), CLIENT_SECONDS)
                if abort:
                    producer.abort_transaction(CLIENT_SECONDS)
                    _rewind(consumer, batch)
                    history.write(json.dumps({"outcome": "aborted", "inputs": inputs, "error": None}) + "\n")
                    continue
                producer.commit_transaction(CLIENT_SECONDS)
            except KafkaException as failure:
                error = failure.args[0]
                if error.fatal() or not error.txn_requires_abort():
                    history.write(json.dumps({"outcome": "unknown", "inputs": inputs, "error": error.name()}) + "\n")
                    history.write(json.dumps({"event": "fatal", "error": error.name()}) + "\n")
                    return 1
                producer.abort_transaction(CLIENT_SECONDS)
                _rewind(consumer, batch)
                history.write(json.dumps({"outcome": "aborted", "inputs": inputs, "error": error.name()}) + "\n")
                continue
            committed += len(batch)
            history.write(json.dumps({"outcome": "committed", "inputs": inputs, "error": None}) + "\n")
        history.write(json.dumps({"event": "stopped", "committed": committed}) + "\n")
    consumer.close()
    return 0


class CtpWorkerProcess:
    """The test's handle on one worker process under ``directory``."""

    def __init__(self, directory: Path, **spec_fields: Any) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.spec = WorkerSpec(history=str(directory / "history.jsonl"), stop_file=str(directory / "stop"), **spec_fields)
        self.spec_path = directory / "spec.json"
        self.spec_path.write_text(json.dumps(self.spec.__dict__))
        self.log_path = directory / "process.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> CtpWorkerProcess:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen([sys.executable, "-m", __name__, str(self.spec_path)], stdout=log, stderr=subprocess.STDOUT)
        return self

    def lines(self) -> list[dict[str, Any]]:
        path = Path(self.spec.history)
        found = []
        for line in path.read_text().splitlines() if path.exists() else []:
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:  # a line still being written
                continue
        return found

    def committed_inputs(self) -> int:
        return sum(len(line["inputs"]) for line in self.lines() if line.get("outcome") == "committed")

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def stop(self, timeout: float = 90.0) -> int | None:
        """Ask it to stop after its transaction (bounded, then SIGKILL); its exit code."""
        if self.process is None:
            return None
        Path(self.spec.stop_file).touch()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


def main(argv: list[str]) -> int:
    (spec_path,) = argv
    return run(WorkerSpec(**json.loads(Path(spec_path).read_text())))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
