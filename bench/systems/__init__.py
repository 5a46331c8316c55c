"""The systems a benchmark measures: Weir and its peers, each behind ``BenchmarkedSystem``."""
