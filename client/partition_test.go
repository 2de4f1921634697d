package client_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/client"
)

// The client's partitioner agrees with franz-go's Kafka-compatible one (so
// with the agent's, which is tested against it too).
func TestPartitionForKeyMatchesKafka(t *testing.T) {
	for _, n := range []int{1, 3, 7, 100} {
		p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
		for i := 0; i < 500; i++ {
			key := []byte(fmt.Sprintf("key-%d-%s", i, string(make([]byte, i%5))))
			want := p.Partition(&kgo.Record{Key: key}, n)
			if got := client.PartitionForKey(key, int32(n)); int(got) != want {
				t.Fatalf("key %q over %d partitions: %d, franz-go %d", key, n, got, want)
			}
		}
	}
}
