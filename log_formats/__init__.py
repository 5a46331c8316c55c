"""The formats the server side writes and reads, kept out of the SDK (``weir``).

Brokers write these bytes and names; the lag and usage pipelines, the control plane, the
benchmarks and ``weir-dump-log`` read them. None of them is needed by an application that only
produces and consumes, so they live here rather than in the ``weir`` distribution, which
installs alone (docs/architecture.md, "Layout"). Every module is pure Python over the standard
library and the SDK's record codec (``weir.records``): this package imports ``weir`` and never a
server package (``broker_nodes``, ``webapp``, ``spark_pipelines``), so that each of them may use it.

- ``log_files``: segment, index and time-index file names and entry layouts.
- ``dump_log`` and ``dump_log_command``: print and verify those files (``weir-dump-log``).
- ``topic_names``: topic name rules, the tenant separator and the partition directory names.
- ``kafka_schema``: the fields of Kafka's message schemas (ints, strings, arrays, tagged fields), read and written.
- ``offset_commit_records``: Kafka's ``__consumer_offsets`` key and value schemas.
- ``usage_records``: the ``__usage`` record schema (``weir.usage/1``).
- ``lag_statuses``: the lag status names the lag job writes and the control plane reads.
"""
