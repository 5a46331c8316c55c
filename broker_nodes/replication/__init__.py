"""Leader/follower replication between brokers: follower fetchers, ISR, high watermark, acks=all."""
