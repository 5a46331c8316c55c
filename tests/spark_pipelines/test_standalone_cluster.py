"""The pipelines on a real Spark standalone cluster (issue 17): a master and a worker started
from the installed PySpark (``spark_standalone``), a driver process on ``spark://...`` that reads
a tenant's topic through the weir source and runs the usage job's code over ``__usage`` from a
managed broker. The one test here checks the figures and that the work ran on the worker's
executor: the master lists the application, the worker its executor, and the executor's own
log the tasks it ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from log_formats.usage_records import USAGE_TOPIC, TrafficRow, encode
from spark_pipelines.standalone import StandaloneCluster
from tests.spark_pipelines.conftest import LITTLE_DATA_CONF, TEST_JVM_OPTIONS
from tests.spark_pipelines.source_cluster import ORDERS_RECORDS, USAGE_RECORDS, SourceCluster, order_record, running_source_cluster
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark_cluster, pytest.mark.slow, pytest.mark.timeout(720)]

DRIVER_SECONDS = 600.0  # the JVMs and Python workers on a 2-core machine loaded far past its cores (over 240 s at load 25)
MASTER_SECONDS = 30.0  # the master marks an application completed once its driver has gone
WINDOW_MS = 60_000
WINDOW_START_MS = 1_772_323_200_000  # 2026-03-01T00:00:00Z


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SourceCluster]:
    with running_source_cluster(tmp_path_factory.mktemp("standalone-source")) as running:
        yield running


def usage_row(partition: int, bytes_in: int) -> TrafficRow:
    return TrafficRow(1, "i1", 7, WINDOW_START_MS, WINDOW_START_MS + WINDOW_MS, "tn-a", "orders", partition, bytes_in=bytes_in, records_in=1)


def run_driver(cluster: StandaloneCluster, brokers: SourceCluster, output_dir: Path) -> dict:
    argument = {
        "conf": {
            **cluster.session_conf(),
            **LITTLE_DATA_CONF,
            "spark.executor.extraJavaOptions": TEST_JVM_OPTIONS,
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "512m",
        },
        "records_options": brokers.tenant_options(subscribe="orders"),
        "usage_options": brokers.internal_options(subscribe=USAGE_TOPIC),
        "output_dir": str(output_dir),
        "usage_partitions": [0],
    }
    environment = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    completed = subprocess.run(
        [sys.executable, "-m", "tests.support.spark_cluster_driver", json.dumps(argument)],
        capture_output=True,
        text=True,
        timeout=DRIVER_SECONDS,
        env=environment,
        check=False,
    )
    assert completed.returncode == 0, f"the driver failed:\n{completed.stderr[-4000:]}"
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_the_source_and_the_usage_job_run_on_the_standalone_workers_executor(
    spark_standalone: StandaloneCluster, brokers: SourceCluster, tmp_path: Path
) -> None:
    # Three unusable records are in __usage already (source_cluster); then two windows' rows, one re-sent.
    rows = [usage_row(0, 100), usage_row(1, 40), usage_row(0, 100)]
    brokers.produce(USAGE_TOPIC, [(0, None, encode(row), WINDOW_START_MS, None) for row in rows], tenant=None)

    answer = run_driver(spark_standalone, brokers, tmp_path / "pipelines")

    assert answer["master"] == spark_standalone.master_url
    expected = sorted(
        [record.partition, record.offset, None if record.key is None else record.key.decode(), record.value.decode()]
        for record in map(order_record, range(ORDERS_RECORDS))
    )
    assert answer["records"] == expected
    # The broker meters the test's own reads into __usage too (other tenants, other hours): the
    # figures of tenant tn-a's hour are exactly the rows produced here, the re-sent one once.
    result = answer["result"]
    assert result["rejected"] == USAGE_RECORDS and result["records_read"] >= USAGE_RECORDS + len(rows) and result["raw_rows_added"] >= 2
    [hour] = [row for row in answer["hour_rows"] if row["tenant_id"] == "tn-a"]
    assert (hour["topic"], hour["bytes_in"], hour["records_in"], hour["bucket_start"]) == ("orders", 140, 2, "2026-03-01 00:00:00+00:00")

    # Where it ran: the master completed the application, the worker ran its executor, and the
    # executor's log (in the worker's work directory) shows the tasks it ran.
    app_id = answer["app_id"]
    wait_until(
        lambda: any(app["id"] == app_id for app in spark_standalone.master_state()["completedapps"]),
        f"application {app_id} completed at the master",
        MASTER_SECONDS,
    )
    worker = spark_standalone.worker_state()
    executors = [executor for executor in worker["executors"] + worker["finishedexecutors"] if executor["appid"] == app_id]
    assert executors, f"the worker ran no executor of {app_id}: {worker}"
    logs = list((spark_standalone.directory / "worker-1" / app_id).glob("*/stderr"))
    assert any("Running task" in log.read_text(errors="replace") for log in logs), f"no task in the executor logs {logs}"
