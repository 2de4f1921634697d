package logfile

import (
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

func benchWrite(b *testing.B, batches [][]byte) {
	size := 0
	for _, bt := range batches {
		size += len(bt)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		w := NewWriter(size + size/8)
		for i, bt := range batches {
			if _, err := w.Append(1, int32(i), bt); err != nil {
				b.Fatal(err)
			}
		}
		_ = w.Finish()
	}
}

// BenchmarkWriteFile writes a file of 1000 partitions with one batch of 10
// records of 100 bytes each, and a file of one 4 MiB batch.
func BenchmarkWriteFile(b *testing.B) {
	b.Run("1000x10x100B", func(b *testing.B) {
		batches := make([][]byte, 1000)
		for i := range batches {
			batches[i] = encode(b, makeRecords(10, 100, 1700000000000, "b"), kbatch.None)
		}
		benchWrite(b, batches)
	})
	b.Run("1x40000x100B", func(b *testing.B) {
		benchWrite(b, [][]byte{encode(b, makeRecords(40000, 100, 1700000000000, "b"), kbatch.None)})
	})
}

func BenchmarkReadIndex(b *testing.B) {
	w := NewWriter(0)
	for i := range 1000 {
		if _, err := w.Append(1, int32(i), encode(b, makeRecords(10, 100, 1700000000000, "b"), kbatch.None)); err != nil {
			b.Fatal(err)
		}
	}
	file := w.Finish()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadIndex(file); err != nil {
			b.Fatal(err)
		}
	}
}
