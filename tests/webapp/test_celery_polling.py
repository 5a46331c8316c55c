"""Without Redis, a Celery worker looks for new tasks often enough that a created topic's job does
not wait for kombu's default second (issue 19 goal 6: topic ready)."""

from __future__ import annotations

from pathlib import Path

from kombu import Connection

from tests.support.processes import free_port
from webapp.runtime import FILESYSTEM_POLLING_SECONDS, celery_broker_url


def test_the_filesystem_transport_polls_the_queue_directory_every_fifty_milliseconds(tmp_path: Path) -> None:
    url, options = celery_broker_url(f"redis://127.0.0.1:{free_port()}/0", tmp_path)
    assert url == "filesystem://"

    with Connection(url, transport_options=options) as connection:
        assert connection.transport.polling_interval == FILESYSTEM_POLLING_SECONDS == 0.05
        # The queue still works with it: a message put is the message got.
        queue = connection.SimpleQueue("weir-polling-test")
        queue.put({"job": 1})
        message = queue.get(timeout=5)
        assert message.payload == {"job": 1}
        message.ack()
        queue.close()
