"""Pure DataFrame -> DataFrame functions of the pipelines (usage, lag); no reads, no writes."""
