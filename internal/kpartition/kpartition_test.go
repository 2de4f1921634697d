package kpartition

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The partitioner agrees with franz-go's Kafka-compatible murmur2 one.
func TestMurmur2MatchesFranzGo(t *testing.T) {
	for _, n := range []int{1, 3, 7, 100} {
		p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
		for i := 0; i < 500; i++ {
			key := []byte(fmt.Sprintf("key-%d-%s", i, string(make([]byte, i%5))))
			want := p.Partition(&kgo.Record{Key: key}, n)
			if got := ForKey(key, int32(n)); int(got) != want {
				t.Fatalf("key %q over %d partitions: %d, franz-go %d", key, n, got, want)
			}
		}
	}
}

// Known values of Kafka's murmur2 (from Kafka's UtilsTest).
func TestMurmur2KnownValues(t *testing.T) {
	cases := map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	}
	for s, want := range cases {
		if got := Murmur2([]byte(s)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", s, got, want)
		}
	}
}
