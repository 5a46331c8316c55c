"""The SparkSession every pipeline and test uses: master from the settings, the Weir DataSource registered.

``spark.master`` defaults to ``local[*]`` (``WEIR_SPARK_MASTER``); on a cluster, spark-submit sets
it and :func:`spark_session` leaves what it set alone. No Spark UI unless ``WEIR_SPARK_UI=1``
(then on loopback unless ``SPARK_LOCAL_IP`` says otherwise). Python workers run the interpreter of this
process (``PYSPARK_PYTHON``), so the DataSource and the SDK it uses are the ones installed here.
"""

from __future__ import annotations

import logging
import os
import sys

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
# The Spark UI is off unless WEIR_SPARK_UI is "1"; then it listens on SPARK_LOCAL_IP, loopback
# unless set (Spark's default is every interface).
UI_VARIABLE = "WEIR_SPARK_UI"
LOOPBACK = "127.0.0.1"


def spark_session(app_name: str, master: str | None = None, extra_conf: dict[str, str] | None = None) -> SparkSession:
    """Get or create the session: ``master`` (else WEIR_SPARK_MASTER, else spark-submit's, else local[*])."""
    # py4j logs each connection at INFO, even from __del__ at interpreter exit, after logging's
    # streams closed (a "--- Logging error ---" block on stderr): only its warnings matter.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    chosen = master or os.environ.get("WEIR_SPARK_MASTER")
    if chosen:
        builder = builder.master(chosen)
    elif "spark.master" not in os.environ.get("SPARK_SUBMIT_OPTS", "") and not os.environ.get("SPARK_ENV_LOADED"):
        builder = builder.master(DEFAULT_MASTER)
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    if os.environ.get(UI_VARIABLE) == "1":
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    else:
        builder = builder.config("spark.ui.enabled", "false")
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    _register_weir_source(session)
    return session


def _register_weir_source(session: SparkSession) -> None:
    from spark_pipelines.source import WeirDataSource  # imported late: source.py imports the SDK

    session.dataSource.register(WeirDataSource)
