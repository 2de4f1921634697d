package agent

// KafkaPartition exposes the key partitioner to the tests.
var KafkaPartition = partitionForKey
