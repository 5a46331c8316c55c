"""Metering: usage aggregates and consumer lag computed by the Spark pipelines, the records of
their runs, and the launcher that runs them.

The pipelines (``spark_pipelines.jobs``) write only through :mod:`webapp.metering.writer`;
the REST API and the dashboard read through :mod:`webapp.metering.facade`.
"""
