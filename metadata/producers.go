package metadata

import "context"

// ProducerInfo is an idempotent producer's state in one partition, as
// the sequencer keeps it (Kafka's DescribeProducers shows it).
type ProducerInfo struct {
	ProducerID     int64
	Epoch          int16
	LastSequence   int32 // of its last appended batch
	LastBaseOffset int64 // where its last appended batch starts
}

// ProducerStore reads producer states.
type ProducerStore interface {
	// Producers returns the producer states of a partition ordered by
	// producer id, at most limit of them (none for an unknown partition).
	Producers(ctx context.Context, topicID int64, partition int32, limit int) ([]ProducerInfo, error)
}
