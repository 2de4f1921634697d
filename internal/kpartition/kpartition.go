// Package kpartition is Kafka's default partitioner for keyed records, shared
// by the agent (records produced without a partition) and the Go client, so
// that keys land on the partitions Kafka clients would choose.
package kpartition

// ForKey is the partition of a keyed record among partitions:
// toPositive(murmur2(key)) % partitions, as Kafka's default partitioner.
func ForKey(key []byte, partitions int32) int32 {
	return (Murmur2(key) & 0x7fffffff) % partitions
}

// Murmur2 is Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils.murmur2),
// so keys land on the partitions Kafka clients would choose.
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	length := len(data)
	h := seed ^ uint32(length)
	n := length / 4
	for i := 0; i < n; i++ {
		i4 := i * 4
		k := uint32(data[i4]) | uint32(data[i4+1])<<8 | uint32(data[i4+2])<<16 | uint32(data[i4+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := n * 4
	switch length % 4 {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}
