package logfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/floe-broker/floe/kbatch"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var allCodecs = []kbatch.Compression{kbatch.None, kbatch.Gzip, kbatch.Snappy, kbatch.LZ4, kbatch.Zstd}

// makeRecords returns n records of size-byte values starting at timestamp ts.
func makeRecords(n, size int, ts int64, tag string) []kbatch.Record {
	recs := make([]kbatch.Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(v, fmt.Sprintf("%s-%d", tag, i))
		recs[i] = kbatch.Record{
			Timestamp: ts + int64(i),
			Key:       fmt.Appendf(nil, "%s-key-%d", tag, i),
			Value:     v,
			Headers:   []kbatch.Header{{Key: "tag", Value: []byte(tag)}},
		}
	}
	return recs
}

func encode(t testing.TB, recs []kbatch.Record, c kbatch.Compression) []byte {
	t.Helper()
	opts := kbatch.DefaultEncodeOptions()
	opts.Compression = c
	b, err := kbatch.Encode(recs, opts)
	if err != nil {
		t.Fatalf("kbatch.Encode: %v", err)
	}
	return b
}

// storedGzip gzips data with stored (uncompressed) deflate blocks: a byte
// stream that depends on no compressor's choices, for the golden file.
func storedGzip(data []byte) []byte {
	out := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255} // no name, mtime 0, OS unknown
	rest := data
	for {
		n := min(len(rest), 0xffff)
		final := n == len(rest)
		if final {
			out = append(out, 1)
		} else {
			out = append(out, 0)
		}
		out = binary.LittleEndian.AppendUint16(out, uint16(n))
		out = binary.LittleEndian.AppendUint16(out, ^uint16(n))
		out = append(out, rest[:n]...)
		rest = rest[n:]
		if final {
			break
		}
	}
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(data))
	return binary.LittleEndian.AppendUint32(out, uint32(len(data)))
}

// gzipStoredBatch encodes recs as a gzip batch whose deflate stream is
// stored blocks, byte-for-byte deterministic.
func gzipStoredBatch(t testing.TB, recs []kbatch.Record) []byte {
	plain := encode(t, recs, kbatch.None)
	b := append(bytes.Clone(plain[:kbatch.HeaderSize]), storedGzip(plain[kbatch.HeaderSize:])...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|uint16(kbatch.Gzip))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// assertRecords compares decoded records with the encoded ones, which got
// offsets base, base+1, ...
func assertRecords(t *testing.T, got, want []kbatch.Record, base int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != base+int64(i) || g.Timestamp != w.Timestamp ||
			!sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) || len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d = {%d %d %q %.30q %v}, want offset %d and {%d %q %.30q %v}", i,
				g.Offset, g.Timestamp, g.Key, g.Value, g.Headers, base+int64(i), w.Timestamp, w.Key, w.Value, w.Headers)
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d = %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// resealFile recomputes a file's checksums after an edit, so that tests
// and the fuzzer reach the checks behind them. It leaves files whose
// trailer does not locate a footer alone.
func resealFile(b []byte) {
	if len(b) < MinFileSize {
		return
	}
	size := int64(len(b))
	tr := b[size-TrailerSize:]
	footerLen := int64(binary.BigEndian.Uint32(tr[trFooterLen:]))
	if footerLen > size-HeaderSize-TrailerSize {
		return
	}
	footerOff := size - TrailerSize - footerLen
	binary.BigEndian.PutUint32(tr[trBodyCRC:], crc32.Checksum(b[:footerOff], castagnoli))
	binary.BigEndian.PutUint32(tr[trFooterCRC:], crc32.Checksum(b[footerOff:size-8], castagnoli))
}
