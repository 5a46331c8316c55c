"""bench.transaction_timeline: a transaction's steps rebuilt from librdkafka's debug lines, or the SDK's."""

from __future__ import annotations

import logging

import pytest

from bench.transaction_timeline import BEGIN, END, SDK_STEPS, Event, _Recorder, parse_log, step_durations, transaction_timelines
from weir.client_logging import ClientLog


def _transaction(start: float) -> list[Event]:
    lines = [
        (0.000, BEGIN),
        (0.002, "TxnCoordinator/1: Registering partitions with transaction"),
        (0.002, "TxnCoordinator/1: Sent AddPartitionsToTxnRequest (v0, 123 bytes @ 0, CorrId 65)"),
        (0.011, "TxnCoordinator/1: Received AddPartitionsToTxnResponse (v0, 49 bytes, CorrId 65, rtt 9.00ms)"),
        (0.011, "broker/3: Sent ProduceRequest (v10, 11114 bytes @ 0, CorrId 36)"),
        (0.018, "broker/3: Received ProduceResponse (v10, 72 bytes, CorrId 36, rtt 7.00ms)"),
        (0.018, "TxnCoordinator/1: Sent EndTxnRequest (v1, 81 bytes @ 0, CorrId 66)"),
        (0.025, "TxnCoordinator/1: Received EndTxnResponse (v1, 6 bytes, CorrId 66, rtt 7.00ms)"),
        (0.025, "TxnCoordinator/1: Sent ProduceRequest (a second one, ignored)"),
        (0.026, END),
    ]
    return [Event(start + offset, text) for offset, text in lines]


def test_each_step_is_timed_from_the_first_line_that_marks_it():
    durations = step_durations(transaction_timelines([Event(0.5, "before any transaction"), *_transaction(1.0), *_transaction(2.0)]))
    assert durations["add sent -> add answered"] == pytest.approx([9.0, 9.0])
    assert durations["produce sent -> produce answered"] == pytest.approx([7.0, 7.0])
    assert durations["end answered -> end"] == pytest.approx([1.0, 1.0])
    assert durations["transaction"] == pytest.approx([26.0, 26.0])


def test_a_transaction_missing_a_step_is_left_out():
    partial = [event for event in _transaction(1.0) if "EndTxnResponse" not in event.text]
    durations = step_durations(transaction_timelines([*partial, *_transaction(2.0)]))
    assert durations["transaction"] == pytest.approx([26.0])


def test_the_captured_log_is_read_in_time_order_and_other_lines_are_skipped():
    lines = [
        "%7|1700000000.020|ENDTXN|rdkafka#producer-1| [thrd:main]: EndTxn returned NO_ERROR\n",
        "APP|1700000000.010000|begin\n",
        "transactions: starting the stack ...\n",
        "%7|not-a-time|X|y| z\n",
    ]
    assert [(event.seconds, event.text) for event in parse_log(lines)] == [(1700000000.01, "begin"), (1700000000.02, "[thrd:main]: EndTxn returned NO_ERROR")]


def test_the_sdks_log_has_every_step_but_the_registration():
    """The SDK logs the same request names through its logger (debug=eos,protocol); it has no registration line."""
    recorder = _Recorder()
    logger = logging.getLogger("tests.bench.transaction_timeline.sdk")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(recorder)
    log = ClientLog(logger, "weir#producer-1", {"eos", "protocol"})
    try:
        recorder.events.append(Event(1.0, BEGIN))
        log.debug("eos", "ADDPARTS", "Sent AddPartitionsToTxnRequest for %d partition(s) to %s", 1, "127.0.0.1:1")
        log.debug("eos", "ADDPARTS", "Received AddPartitionsToTxnResponse from %s", "127.0.0.1:1")
        log.debug("protocol", "SEND", "Sent ProduceRequest (%d batch(es), %d bytes) to %s", 1, 100, "127.0.0.1:2")
        log.debug("protocol", "RECV", "Received ProduceResponse from %s", "127.0.0.1:2")
        log.debug("eos", "ENDTXN", "Sent EndTxnRequest (commit, producer id %d, epoch %d)", 7, 1)
        log.debug("eos", "ENDTXN", "Received EndTxnResponse (error %d)", 0)
        recorder.events.append(Event(recorder.events[-1].seconds + 0.001, END))
    finally:
        logger.removeHandler(recorder)
    timelines = transaction_timelines(sorted(recorder.events, key=lambda event: event.seconds))
    assert set(timelines[0]) == set(SDK_STEPS)
    assert "transaction" not in step_durations(timelines)  # librdkafka's steps include the registration
    assert len(step_durations(timelines, SDK_STEPS)["transaction"]) == 1
