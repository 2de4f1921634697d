package agent_test

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
)

// BenchmarkWholeFileCheck measures what checking a whole file before it
// enters the read cache costs (logfile.ReadIndex: trailer, footer and body
// CRC-32C) against a plain copy of the same bytes, the least a load from
// the object store costs, in the same run: the check-ns/MiB, copy-ns/MiB
// and check/copy metrics. The file is 16 MiB, the largest loaded whole by
// default (CacheFileMaxBytes), of 256 batches of 64 records of 1 KiB.
func BenchmarkWholeFileCheck(b *testing.B) {
	recs := make([]kbatch.Record, 64)
	for i := range recs {
		v := make([]byte, 1<<10)
		for j := range v {
			v[j] = byte(i * j)
		}
		recs[i] = kbatch.Record{Timestamp: 1700000000000, Value: v}
	}
	batch, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
	if err != nil {
		b.Fatal(err)
	}
	w := logfile.NewWriter(256 * len(batch))
	for p := range 256 {
		if _, err := w.Append(1, int32(p), batch); err != nil {
			b.Fatal(err)
		}
	}
	file := w.Finish()
	dst := make([]byte, len(file))
	b.SetBytes(int64(len(file)))
	var copying, checking time.Duration
	for b.Loop() {
		t0 := time.Now()
		copy(dst, file)
		t1 := time.Now()
		if _, err := logfile.ReadIndex(file); err != nil {
			b.Fatal(err)
		}
		copying += t1.Sub(t0)
		checking += time.Since(t1)
	}
	mib := float64(b.N) * float64(len(file)) / (1 << 20)
	b.ReportMetric(float64(copying.Nanoseconds())/mib, "copy-ns/MiB")
	b.ReportMetric(float64(checking.Nanoseconds())/mib, "check-ns/MiB")
	b.ReportMetric(float64(checking)/float64(copying), "check/copy")
}
