"""The usage pipeline (PySpark), the "weir" Spark source, and the continuous consumer-lag evaluator (``lag_monitor``, no Spark)."""
