package kbatch

import "testing"

// benchRecords is the benchmark batch: 1000 records of 100-byte values.
func benchRecords() ([]Record, int) {
	recs := manyRecords(1000, 100, 1700000000000)
	size := 0
	for _, r := range recs {
		size += len(r.Key) + len(r.Value)
	}
	return recs, size
}

var benchCodecs = []Compression{None, LZ4, Zstd}

func BenchmarkEncode(b *testing.B) {
	recs, size := benchRecords()
	for _, c := range benchCodecs {
		b.Run(c.String(), func(b *testing.B) {
			opts := DefaultEncodeOptions()
			opts.Compression = c
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(recs, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	recs, size := benchRecords()
	for _, c := range benchCodecs {
		b.Run(c.String(), func(b *testing.B) {
			opts := DefaultEncodeOptions()
			opts.Compression = c
			batch, err := Encode(recs, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Decode(batch, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(batch)), "batch-bytes")
		})
	}
}
