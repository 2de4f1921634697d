package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"time"
)

// System is a broker under test as the harness sees it: floe (FloeSystem)
// or the peer, NATS JetStream (JetStreamSystem).
type System interface {
	// Name names the system in reports ("floe", "jetstream").
	Name() string
	// Setup creates the topic (stream) the run writes to.
	Setup(ctx context.Context, topic string, partitions int) error
	// NewProducer opens producer i's connection to the topic.
	NewProducer(ctx context.Context, i int) (Producer, error)
	// Consume reads consumer i of n's share of the partitions from the
	// earliest record or from the end, calling fn (from one goroutine at a
	// time per call of Consume) with every record's value, until ctx ends.
	Consume(ctx context.Context, i, n int, earliest bool, fn func(value []byte)) error
	// Stats reads the servers' cost figures now.
	Stats(ctx context.Context) (ServerStats, error)
	// Close releases the system's connections (not the servers).
	Close() error
}

// Reconnecter is a System whose connections must be made again when its
// servers restart (RunConfig.BeforeRead): Disconnect, before the restart,
// lets go of what the restart breaks (and notes what the read needs of
// it); Reconnect, after, returns once the system serves again through
// fresh connections. Without it, a consumer of a catch-up read dials into
// a connection still waiting out its reconnect backoff, fails
// (Unavailable) or falls back to another server.
type Reconnecter interface {
	Disconnect() error
	Reconnect(ctx context.Context) error
}

// Producer is one producer connection: a Sink that must be closed.
type Producer interface {
	Sink
	// Close waits (bounded by ctx) for outstanding answers and closes.
	Close(ctx context.Context) error
}

// ServerStats are cumulative server-side figures at one instant.
type ServerStats struct {
	// Metrics are the agents' Prometheus counters, summed over agents
	// (empty for a peer).
	Metrics Metrics
	// CPUSeconds is the servers' CPU time so far, summed.
	CPUSeconds float64
	// RSSBytes is each server process's resident memory now.
	RSSBytes []float64
}

// valueHeader is the part of every record value the harness reads back:
// the intended send time (unix ns) and the producer's record index.
const valueHeader = 16

// ErrRecordTooSmall is returned for a record size below the stamped header.
var ErrRecordTooSmall = errors.New("bench: record size must be at least 16 bytes")

// filler makes record values incompressible-ish and identical across
// systems.
var filler = func() []byte {
	b := make([]byte, 1<<20)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}()

// MakeValue returns a record value of size bytes stamped with the intended
// send time and the record's index.
func MakeValue(size int, intended int64, index uint64) []byte {
	v := make([]byte, size)
	fillValue(v)
	stampValue(v, intended, index)
	return v
}

// fillValue writes the filler past the stamp of v.
func fillValue(v []byte) {
	for off := valueHeader; off < len(v); off += len(filler) {
		copy(v[off:], filler)
	}
}

// stampValue writes the intended send time and the index into v's stamp.
func stampValue(v []byte, intended int64, index uint64) {
	binary.BigEndian.PutUint64(v[0:8], uint64(intended))
	binary.BigEndian.PutUint64(v[8:16], index)
}

// StampOf returns the intended send time stamped in a value.
func StampOf(value []byte) (time.Time, bool) {
	if len(value) < valueHeader {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(value[0:8]))), true
}

// TopicDropper is a System that can delete a topic once its run is
// measured: -systems writes a new topic per run (tens of gigabytes over a
// comparison at full speed), and drops each after its run so that the
// disk holds about one run's data, not every run's.
type TopicDropper interface {
	DropTopic(ctx context.Context, topic string) error
}
