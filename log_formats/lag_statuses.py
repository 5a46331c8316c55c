"""The names of consumer-lag statuses (Burrow's), stated once for the lag job, its writer and the web app.

The lag job (spark_pipelines.transforms.lag_rules) evaluates partitions and groups into these
names, the control plane's writer (webapp.metering.writer) refuses rows with any other, and the
web app's gauges export one series per group status. They live here, in ``log_formats``, because
those three may not import one another; every one of them may import this package.
"""

from __future__ import annotations

OK = "OK"
WARNING = "WARNING"
ERROR = "ERROR"
STOP = "STOP"
STALL = "STALL"
REWIND = "REWIND"
# Burrow's StatusConstant order (protocol.StatusOK=1 ... StatusRewind=6): higher is worse.
SEVERITY = {OK: 1, WARNING: 2, ERROR: 3, STOP: 4, STALL: 5, REWIND: 6}
PARTITION_STATUSES = tuple(SEVERITY)
GROUP_STATUSES = (OK, WARNING, ERROR)  # a group status is never worse than ERROR
