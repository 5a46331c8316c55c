"""Parquet datasets partitioned by columns (``<root>/<column>=<value>[/<column2>=<value2>]/part-*.parquet``),
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

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

Columns = str | Sequence[str]  # the partition column, or the nested partition columns in order


def _names(columns: Columns) -> tuple[str, ...]:
    return (columns,) if isinstance(columns, str) else tuple(columns)


def partition_directory(root: Path, columns: Columns, value: object) -> Path:
    """Where the rows with ``columns == value`` are stored (Spark's ``column=value`` layout);
    ``value`` is a tuple, one item per column, when there are several columns."""
    names = _names(columns)
    values = value if len(names) > 1 else (value,)
    directory = root
    for name, item in zip(names, values, strict=True):  # type: ignore[call-overload]
        directory = directory / f"{name}={item}"
    return directory


def stored_partitions(root: Path, columns: Columns, values: Iterable[object]) -> list[Path]:
    """The directories of those of ``values`` that hold at least one Parquet file, sorted."""
    directories = {partition_directory(root, columns, value) for value in values}
    return sorted(directory for directory in directories if directory.is_dir() and any(directory.glob("*.parquet")))


def read_partitions(spark: SparkSession, root: Path, schema_ddl: str, columns: Columns, values: Iterable[object]) -> DataFrame | None:
    """The stored rows of the partitions ``values`` (partition columns included, typed by
    ``schema_ddl``, no inference); None when none of them holds a file."""
    directories = stored_partitions(root, columns, values)
    if not directories:
        return None
    return spark.read.schema(schema_ddl).option("basePath", str(root)).parquet(*(str(directory) for directory in directories))


def append_new_rows(spark: SparkSession, rows: DataFrame, root: Path, schema_ddl: str, columns: Columns, values: Sequence[object], keys: Sequence[str]) -> int:
    """Append the rows of ``rows`` whose ``keys`` are not yet stored under ``root``; returns how many.

    Preconditions: ``values`` are all the values of ``columns`` in ``rows``, and rows with equal
    keys have equal ``columns`` values. ``rows`` is evaluated twice (count, write) when nothing
    is stored yet: persist it when it is expensive to compute. The anti-join is evaluated once
    (its rows are kept while they are counted and written).
    """
    stored = read_partitions(spark, root, schema_ddl, columns, values)
    if stored is None:
        return _append(rows, root, columns)
    new_rows = rows.join(stored.select(*keys), list(keys), "left_anti").select(*rows.columns).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _append(new_rows, root, columns)
    finally:
        new_rows.unpersist()


def _append(rows: DataFrame, root: Path, columns: Columns) -> int:
    # Collected row counts, not the writer's metrics: the count decides whether to write at all.
    count = rows.count()
    if count:
        rows.write.mode("append").partitionBy(*_names(columns)).parquet(str(root))
    return count


def overwrite_partitions(frame: DataFrame, root: Path, columns: Columns) -> None:
    """Replace the partitions of ``root`` that ``frame`` has rows for with ``frame``'s rows."""
    frame.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy(*_names(columns)).parquet(str(root))


def in_values(column: str, values: Iterable[object]) -> Column:
    """``column IN values`` (always false for no values), values sorted for a stable plan."""
    literal_values = sorted(set(values))  # type: ignore[type-var]
    return F.col(column).isin(literal_values) if literal_values else F.lit(False)
