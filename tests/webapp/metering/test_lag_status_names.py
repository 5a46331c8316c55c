"""The lag status names the database stores are the ones the lag job writes (log_formats.lag_statuses)."""

from log_formats.lag_statuses import GROUP_STATUSES, PARTITION_STATUSES
from webapp.metering.models import GroupStatus, PartitionStatus


def test_the_stored_status_choices_are_the_lag_jobs_status_names() -> None:
    assert tuple(PartitionStatus.values) == PARTITION_STATUSES
    assert tuple(GroupStatus.values) == GROUP_STATUSES
