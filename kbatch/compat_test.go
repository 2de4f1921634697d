package kbatch

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgRecords parses an uncompressed records section with franz-go.
func kmsgRecords(t *testing.T, raw []byte, n int) []kmsg.Record {
	t.Helper()
	out := make([]kmsg.Record, n)
	for i := range out {
		l, k := binary.Varint(raw)
		if k <= 0 || int(l) > len(raw)-k {
			t.Fatalf("record %d: bad length prefix", i)
		}
		if err := out[i].ReadFrom(raw[:k+int(l)]); err != nil {
			t.Fatalf("kmsg.Record.ReadFrom %d: %v", i, err)
		}
		raw = raw[k+int(l):]
	}
	if len(raw) != 0 {
		t.Fatalf("%d bytes after %d records", len(raw), n)
	}
	return out
}

// TestFranzGoReadsOurBatches decodes Encode's output with franz-go's kmsg
// types and kgo's decompressor.
func TestFranzGoReadsOurBatches(t *testing.T) {
	recs := sampleSets()["headers"]
	recs = append(recs, manyRecords(50, 64, 1700000000000)...)
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := EncodeOptions{Compression: c, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 9}
			b, err := Encode(recs, opts)
			if err != nil {
				t.Fatal(err)
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatalf("kmsg.RecordBatch.ReadFrom: %v", err)
			}
			reenc := rb.AppendTo(nil)
			if !bytes.Equal(reenc, b) {
				t.Fatal("kmsg re-encoding differs from the batch")
			}
			if got := crc32.Checksum(reenc[21:], crc32.MakeTable(crc32.Castagnoli)); int32(got) != rb.CRC {
				t.Fatalf("CRC %08x, franz-go computes %08x", uint32(rb.CRC), got)
			}
			if rb.Magic != 2 || int(rb.Length) != len(b)-12 || rb.NumRecords != int32(len(recs)) ||
				rb.LastOffsetDelta != int32(len(recs)-1) || rb.ProducerID != 7 || rb.ProducerEpoch != 1 ||
				rb.FirstSequence != 9 || rb.Attributes&7 != int16(c) {
				t.Fatalf("unexpected batch header %+v", rb)
			}
			raw, err := kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CompressionCodecType(c))
			if err != nil {
				t.Fatalf("kgo decompress: %v", err)
			}
			got := kmsgRecords(t, raw, len(recs))
			for i, r := range got {
				w := recs[i]
				if r.OffsetDelta != int32(i) || rb.FirstTimestamp+r.TimestampDelta64 != w.Timestamp ||
					!sameBytes(r.Key, w.Key) || !sameBytes(r.Value, w.Value) || len(r.Headers) != len(w.Headers) {
					t.Fatalf("record %d = %+v, want %+v", i, r, w)
				}
				for j, h := range r.Headers {
					if h.Key != w.Headers[j].Key || !sameBytes(h.Value, w.Headers[j].Value) {
						t.Fatalf("record %d header %d = %+v, want %+v", i, j, h, w.Headers[j])
					}
				}
			}
		})
	}
}

// TestWeReadFranzGoBatches decodes batches built with kmsg and compressed
// with kgo's compressor.
func TestWeReadFranzGoBatches(t *testing.T) {
	want := manyRecords(40, 80, 1600000000000)
	want[3].Key = nil
	want[4].Value = nil
	want[5].Headers = []Header{{Key: "a", Value: []byte("b")}, {Key: "n", Value: nil}}
	var raw []byte
	for i, r := range want {
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - want[0].Timestamp,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // a zero Length encodes in one byte
		raw = kr.AppendTo(raw)
	}
	codecs := map[Compression]kgo.CompressionCodec{
		None: kgo.NoCompression(), Gzip: kgo.GzipCompression(), Snappy: kgo.SnappyCompression(),
		LZ4: kgo.Lz4Compression(), Zstd: kgo.ZstdCompression(),
	}
	for c, kc := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			payload := raw
			if c != None {
				comp, err := kgo.DefaultCompressor(kc)
				if err != nil {
					t.Fatal(err)
				}
				out, used := comp.Compress(new(bytes.Buffer), raw)
				if used != kgo.CompressionCodecType(c) {
					t.Fatalf("kgo used codec %d", used)
				}
				payload = bytes.Clone(out)
			}
			rb := kmsg.RecordBatch{
				FirstOffset:          1000,
				Length:               int32(49 + len(payload)),
				PartitionLeaderEpoch: 5,
				Magic:                2,
				Attributes:           int16(c),
				LastOffsetDelta:      int32(len(want) - 1),
				FirstTimestamp:       want[0].Timestamp,
				MaxTimestamp:         want[len(want)-1].Timestamp,
				ProducerID:           -1,
				ProducerEpoch:        -1,
				FirstSequence:        -1,
				NumRecords:           int32(len(want)),
				Records:              payload,
			}
			b := rb.AppendTo(nil)
			binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
			info, got, err := Decode(b, 0)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if info.BaseOffset != 1000 || info.PartitionLeaderEpoch != 5 || info.Compression != c {
				t.Fatalf("info = %+v", info)
			}
			assertRecords(t, got, withOffsets(want, 1000))
		})
	}
}
