"""One local SparkSession for the whole test run (starting a JVM costs seconds), and a Spark
standalone master and worker for the tests marked ``spark_cluster``, started once per test
process and only when such a test runs (the pipelines' tests run on ``local[2]`` otherwise: the
Spark tests are CPU-bound, and running them all twice would double their cost)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_pipelines.session import spark_session
from spark_pipelines.standalone import StandaloneCluster

CLUSTER_MARKER = "spark_cluster"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{CLUSTER_MARKER}: runs a Spark driver on the standalone cluster of the spark_standalone fixture")


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and one worker of one core (1 GiB), from the installed PySpark, on loopback."""
    with StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), workers=1, cores=1, memory="1g") as cluster:
        yield cluster


# The tests' data is tiny: compiling costs more CPU than it saves. The JVM's quick compiler only,
# no whole-stage code generation, no adaptive re-planning: the Spark tests' CPU went from 148 s to
# 103 s (whole process tree, tests/spark_pipelines). The standalone cluster's driver and executor
# get the same (test_standalone_cluster).
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:CICompilerCount=1"
LITTLE_DATA_CONF = {
    "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session(
        "weir-tests",
        master="local[2]",
        extra_conf={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "1g",
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            **LITTLE_DATA_CONF,
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
