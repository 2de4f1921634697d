package agent

import (
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

// A produce request's batch must stay readable: readers and the compactor
// decompress at most kbatch.DefaultMaxDecompressed, and produce batches
// may decompress to MaxRequestBytes + 64 KiB, so a larger request limit is
// refused at start.
func TestMaxRequestBytesWithinWhatReadersDecode(t *testing.T) {
	for _, c := range []struct {
		n  int
		ok bool
	}{{kbatch.DefaultMaxDecompressed - 64<<10, true}, {kbatch.DefaultMaxDecompressed - 64<<10 + 1, false}, {kbatch.DefaultMaxDecompressed, false}} {
		cfg := DefaultConfig()
		cfg.MaxRequestBytes = c.n
		err := cfg.validate()
		if (err == nil) != c.ok {
			t.Errorf("MaxRequestBytes %d: %v, want ok=%v", c.n, err, c.ok)
		}
	}
}
