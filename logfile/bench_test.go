package logfile

import (
	"fmt"
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

// BenchmarkAppendParsed is the batcher's path: batches checked at the
// edge (info from kbatch.ParseInfo) copied into a file, 500 batches of
// 16 KiB and 4,000 of 1 KiB (8 MiB files).
func BenchmarkAppendParsed(b *testing.B) {
	for _, tc := range []struct{ n, recs, size int }{{500, 16, 1000}, {4000, 1, 1000}} {
		b.Run(fmt.Sprintf("%dx%dB", tc.n, tc.recs*tc.size), func(b *testing.B) {
			batches := make([][]byte, tc.n)
			infos := make([]kbatch.Info, tc.n)
			size := 0
			for i := range batches {
				batches[i] = encode(b, makeRecords(tc.recs, tc.size, 1700000000000, "p"), kbatch.None)
				info, err := kbatch.ParseInfo(batches[i])
				if err != nil {
					b.Fatal(err)
				}
				infos[i], size = info, size+len(batches[i])
			}
			b.SetBytes(int64(size))
			buf := make([]byte, 0, size+size/8)
			for b.Loop() {
				w := NewWriterBuffer(buf)
				for i, bt := range batches {
					if _, err := w.AppendParsed(1, int32(i%16), bt, infos[i]); err != nil {
						b.Fatal(err)
					}
				}
				_ = w.Finish()
			}
		})
	}
}
