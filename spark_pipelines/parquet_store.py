"""Parquet datasets partitioned by one column (``<root>/<column>=<value>/part-*.parquet``),
written so that doing it twice leaves the same rows.

Two ways to write, both safe to repeat after a run that died half-way:

- :func:`append_new_rows`: append only the rows whose key is not stored yet in the
  partitions they go to (an anti-join against those partitions), so a batch written again,
  whole or in part, adds nothing twice. Needs rows of a key to always land in the same
  partition (the key determines the partition value).
- :func:`overwrite_partitions`: replace exactly the partitions present in the frame
  (Spark's dynamic partition overwrite), leaving the others alone.

The root is a local path (or a shared file system mounted at the same path on the driver and
every executor of a cluster): :func:`stored_partitions` looks at the directories from the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F


def partition_directory(root: Path, column: str, value: object) -> Path:
    """Where the rows with ``column == value`` are stored (Spark's ``column=value`` layout)."""
    return root / f"{column}={value}"


def stored_partitions(root: Path, column: str, values: Iterable[object]) -> list[Path]:
    """The directories of those of ``values`` that hold at least one Parquet file, sorted."""
    directories = {partition_directory(root, column, value) for value in values}
    return sorted(directory for directory in directories if directory.is_dir() and any(directory.glob("*.parquet")))


def read_partitions(spark: SparkSession, root: Path, schema_ddl: str, column: str, values: Iterable[object]) -> DataFrame | None:
    """The stored rows of the partitions ``values`` (``column`` included, typed by ``schema_ddl``,
    no inference); None when none of them holds a file."""
    directories = stored_partitions(root, column, values)
    if not directories:
        return None
    return spark.read.schema(schema_ddl).option("basePath", str(root)).parquet(*(str(directory) for directory in directories))


def append_new_rows(spark: SparkSession, rows: DataFrame, root: Path, schema_ddl: str, column: str, values: Sequence[object], keys: Sequence[str]) -> int:
    """Append the rows of ``rows`` whose ``keys`` are not yet stored under ``root``; returns how many.

    Preconditions: ``values`` are all the values of ``column`` in ``rows``, and rows with equal
    keys have equal ``column`` values. ``rows`` is evaluated twice (count, write): persist it
    when it is expensive to compute.
    """
    stored = read_partitions(spark, root, schema_ddl, column, values)
    new_rows = rows if stored is None else rows.join(stored.select(*keys), list(keys), "left_anti")
    # Collected row counts, not the writer's metrics: the count decides whether to write at all.
    count = new_rows.count()
    if count:
        new_rows.select(*rows.columns).write.mode("append").partitionBy(column).parquet(str(root))
    return count


def overwrite_partitions(frame: DataFrame, root: Path, column: str) -> None:
    """Replace the partitions of ``root`` that ``frame`` has rows for with ``frame``'s rows."""
    frame.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy(column).parquet(str(root))


def in_values(column: str, values: Iterable[object]) -> Column:
    """``column IN values`` (always false for no values), values sorted for a stable plan."""
    literal_values = sorted(set(values))  # type: ignore[type-var]
    return F.col(column).isin(literal_values) if literal_values else F.lit(False)
