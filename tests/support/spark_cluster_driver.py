"""A Spark driver on a standalone cluster, run by tests as a process of its own:
``python -m tests.support.spark_cluster_driver '<JSON>'``.

A process can hold only one SparkContext and the test process holds the local one, so the
cluster's driver is this separate process. It reads tenant records through the weir source and
runs the usage job's own code (``store_and_aggregate``: parse, deduplicate, store raw rows,
hour and day buckets in Parquet; the rows for the database collected instead of written) over
``__usage``, all on the cluster, then prints ONE stdout line: a JSON object with the session's
``master`` and ``app_id``, the records read (``records``: [partition, offset, key, value]) and the
usage job's ``result`` and ``hour_rows``.

The JSON argument: ``conf`` (session settings, ``spark.master`` among them), ``records_options``
and ``usage_options`` (options of ``format("weir")``), ``output_dir``, ``usage_partitions``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def main(argument: str) -> int:
    from spark_pipelines.jobs.usage import UsagePaths, store_and_aggregate
    from spark_pipelines.session import spark_session

    given = json.loads(argument)
    conf = dict(given["conf"])
    spark = spark_session("weir-standalone-test", master=conf.pop("spark.master"), extra_conf=conf)
    spark.sparkContext.setLogLevel("WARN")
    written: dict[str, list[dict[str, Any]]] = {}

    def collect_rows(granularity: str, rows: list[dict[str, Any]]) -> int:
        written[granularity] = rows
        return len(rows)

    try:
        records = spark.read.format("weir").options(**given["records_options"]).load()
        read = [[row["partition"], row["offset"], _text(row["key"]), _text(row["value"])] for row in records.collect()]
        usage_records = spark.read.format("weir").options(**given["usage_options"]).load()
        result = store_and_aggregate(spark, usage_records, given["usage_partitions"], UsagePaths.under(Path(given["output_dir"])), collect_rows)
        answer = {
            "master": spark.sparkContext.master,
            "app_id": spark.sparkContext.applicationId,
            "records": sorted(read),
            "result": result,
            "hour_rows": written.get("hour", []),
        }
    finally:
        spark.stop()
    print(json.dumps(answer, default=str), flush=True)
    return 0


def _text(value: bytes | bytearray | None) -> str | None:
    return None if value is None else bytes(value).decode()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
