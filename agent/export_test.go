package agent

import "github.com/floe-broker/floe/internal/kpartition"

// KafkaPartition exposes the key partitioner to the tests.
var KafkaPartition = kpartition.ForKey
