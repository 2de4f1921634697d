package batcher

import (
	"math"
	"testing"
)

func TestLatencyBuckets(t *testing.T) {
	b := latencyBuckets(0.001, 8.192)
	if len(b) != 53 || math.Abs(b[0]-0.001) > 1e-12 || math.Abs(b[len(b)-1]-8.192) > 1e-9 {
		t.Fatalf("buckets %d from %g to %g, want 53 from 0.001 to 8.192", len(b), b[0], b[len(b)-1])
	}
	for i := 1; i < len(b); i++ {
		if r := b[i] / b[i-1]; math.Abs(r-math.Pow(2, 0.25)) > 1e-9 {
			t.Fatalf("bucket %d: ratio %g to the one before, want 2^(1/4)", i, r)
		}
	}
}
