-- An agent's gRPC address (host:port) in its own column, for
-- TopicService.DescribePlacement; '' for agents of earlier releases,
-- which get no partitions' gRPC clients.
ALTER TABLE agents ADD COLUMN grpc_addr TEXT NOT NULL DEFAULT '';
