"""PySpark pipelines (usage metering, consumer lag): arrive with the pipelines issue."""
