package client

import "github.com/floe-broker/floe/internal/kpartition"

// PartitionForKey is the partition of a keyed record among partitions:
// Kafka's default partitioner, toPositive(murmur2(key)) % partitions, as
// the agent applies it to records produced without a partition.
func PartitionForKey(key []byte, partitions int32) int32 {
	return kpartition.ForKey(key, partitions)
}
