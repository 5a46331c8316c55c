"""Thin pipeline jobs: read, call the transforms, write (control-plane database + Parquet). Run as ``python -m spark_pipelines.jobs.<name>``."""
