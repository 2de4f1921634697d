package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var allCodecs = []Compression{None, Gzip, Snappy, LZ4, Zstd}

// sampleSets are the record shapes every codec must round-trip.
func sampleSets() map[string][]Record {
	large := make([]byte, 300<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range large {
		large[i] = byte('a' + rng.IntN(8)) // compressible but not trivial
	}
	return map[string][]Record{
		"single": {{Timestamp: 1700000000000, Key: []byte("k"), Value: []byte("v")}},
		"nil key and value": {
			{Timestamp: 1, Key: nil, Value: nil},
			{Timestamp: 2, Key: nil, Value: []byte("x")},
		},
		"empty key and value": {
			{Timestamp: 5, Key: []byte{}, Value: []byte{}},
			{Timestamp: 5, Key: []byte{}, Value: nil},
		},
		"headers": {
			{Timestamp: 10, Key: []byte("a"), Value: []byte("1"), Headers: []Header{
				{Key: "trace", Value: []byte("abc")},
				{Key: "", Value: []byte{}},
				{Key: "null", Value: nil},
			}},
			{Timestamp: 9, Value: []byte("2"), Headers: []Header{{Key: "h", Value: []byte("v")}}},
		},
		"unordered timestamps": {
			{Timestamp: 1000, Value: []byte("a")},
			{Timestamp: 10, Value: []byte("b")},
			{Timestamp: 5000, Value: []byte("c")},
			{Timestamp: -1, Value: []byte("no timestamp")},
		},
		"large value": {
			{Timestamp: 7, Key: []byte("big"), Value: large},
			{Timestamp: 8, Key: []byte("small"), Value: []byte("s")},
		},
		"many": manyRecords(500, 100, 1700000000000),
	}
}

func manyRecords(n, size int, ts int64) []Record {
	recs := make([]Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(v, fmt.Sprintf("record-%06d", i))
		recs[i] = Record{Timestamp: ts + int64(i), Key: fmt.Appendf(nil, "key-%d", i%17), Value: v}
	}
	return recs
}

// withOffsets returns recs with Offset set as Decode reports them.
func withOffsets(recs []Record, base int64) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.Offset = base + int64(i)
		out[i] = r
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	for name, recs := range sampleSets() {
		for _, c := range allCodecs {
			t.Run(name+"/"+c.String(), func(t *testing.T) {
				opts := DefaultEncodeOptions()
				opts.Compression = c
				opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 42, 3, 100
				b, err := Encode(recs, opts)
				if err != nil {
					t.Fatalf("Encode: %v", err)
				}
				info, got, err := Decode(b, 0)
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if info.BatchLength != len(b) {
					t.Errorf("BatchLength = %d, want %d", info.BatchLength, len(b))
				}
				if info.Compression != c || Compression(info.Attributes&7) != c {
					t.Errorf("Compression = %v (attributes %#x), want %v", info.Compression, info.Attributes, c)
				}
				if info.RecordCount != int32(len(recs)) || info.LastOffsetDelta != int32(len(recs)-1) {
					t.Errorf("RecordCount, LastOffsetDelta = %d, %d; want %d, %d",
						info.RecordCount, info.LastOffsetDelta, len(recs), len(recs)-1)
				}
				minTS, maxTS := recs[0].Timestamp, recs[0].Timestamp
				for _, r := range recs {
					minTS, maxTS = min(minTS, r.Timestamp), max(maxTS, r.Timestamp)
				}
				if info.FirstTimestamp != minTS || info.MaxTimestamp != maxTS {
					t.Errorf("timestamps = %d..%d, want %d..%d", info.FirstTimestamp, info.MaxTimestamp, minTS, maxTS)
				}
				if info.ProducerID != 42 || info.ProducerEpoch != 3 || info.BaseSequence != 100 {
					t.Errorf("producer = %d/%d/%d, want 42/3/100", info.ProducerID, info.ProducerEpoch, info.BaseSequence)
				}
				if info.BaseOffset != 0 || info.PartitionLeaderEpoch != -1 {
					t.Errorf("BaseOffset, PartitionLeaderEpoch = %d, %d; want 0, -1", info.BaseOffset, info.PartitionLeaderEpoch)
				}
				assertRecords(t, got, withOffsets(recs, 0))
				pi, err := ParseInfo(b)
				if err != nil || pi != info {
					t.Errorf("ParseInfo = %+v, %v; want %+v", pi, err, info)
				}
			})
		}
	}
}

// assertRecords compares records, telling nil from empty slices apart.
func assertRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || g.Timestamp != w.Timestamp {
			t.Fatalf("record %d: offset, timestamp = %d, %d; want %d, %d", i, g.Offset, g.Timestamp, w.Offset, w.Timestamp)
		}
		if !sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) {
			t.Fatalf("record %d: key/value = %q/%.40q, want %q/%.40q (nil-ness %v/%v, want %v/%v)", i,
				g.Key, g.Value, w.Key, w.Value, g.Key == nil, g.Value == nil, w.Key == nil, w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d = %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func TestDecodeDoesNotAliasInput(t *testing.T) {
	b, err := Encode([]Record{{Key: []byte("key"), Value: []byte("value")}}, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := Decode(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0
	}
	if string(recs[0].Key) != "key" || string(recs[0].Value) != "value" {
		t.Fatalf("records changed with the input: %q/%q", recs[0].Key, recs[0].Value)
	}
}

func TestLogAppendTime(t *testing.T) {
	opts := DefaultEncodeOptions()
	opts.LogAppendTime = true
	b, err := Encode([]Record{{Timestamp: 10}, {Timestamp: 30}, {Timestamp: 20}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	info, recs, err := Decode(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Attributes&0x08 == 0 {
		t.Fatalf("attributes %#x lack the LogAppendTime bit", info.Attributes)
	}
	for i, r := range recs {
		if r.Timestamp != 30 {
			t.Errorf("record %d timestamp = %d, want the max timestamp 30", i, r.Timestamp)
		}
	}
}

func TestSetBaseOffset(t *testing.T) {
	recs := manyRecords(10, 20, 1000)
	for _, c := range allCodecs {
		opts := DefaultEncodeOptions()
		opts.Compression = c
		b, err := Encode(recs, opts)
		if err != nil {
			t.Fatal(err)
		}
		crc := binary.BigEndian.Uint32(b[17:])
		if err := SetBaseOffset(b, 123456789); err != nil {
			t.Fatal(err)
		}
		if binary.BigEndian.Uint32(b[17:]) != crc {
			t.Fatalf("%v: SetBaseOffset changed the CRC field", c)
		}
		info, got, err := Decode(b, 0)
		if err != nil {
			t.Fatalf("%v: Decode after SetBaseOffset: %v", c, err)
		}
		if info.BaseOffset != 123456789 {
			t.Fatalf("%v: BaseOffset = %d", c, info.BaseOffset)
		}
		assertRecords(t, got, withOffsets(recs, 123456789))
	}
	if err := SetBaseOffset(make([]byte, HeaderSize-1), 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("SetBaseOffset on a short slice = %v, want ErrCorrupt", err)
	}
}

// reseal recomputes the CRC of a batch whose header was edited.
func reseal(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
}

func TestParseInfoRejects(t *testing.T) {
	good, err := Encode(manyRecords(3, 10, 1), DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(b []byte) []byte{
		"crc mismatch in records": func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"crc mismatch in header":  func(b []byte) []byte { b[30] ^= 0x40; return b },
		"crc field flipped":       func(b []byte) []byte { b[17] ^= 1; return b },
		"magic 1":                 func(b []byte) []byte { b[16] = 1; reseal(b); return b },
		"length past end":         func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], uint32(len(b))); return b },
		"length negative":         func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 0xffffffff); return b },
		"length under header":     func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 48); return b },
		"unknown codec":           func(b []byte) []byte { b[22] |= 5; reseal(b); return b },
		"zero records": func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 0)
			binary.BigEndian.PutUint32(b[23:], math.MaxUint32)
			reseal(b)
			return b
		},
		"not dense": func(b []byte) []byte { binary.BigEndian.PutUint32(b[23:], 5); reseal(b); return b },
		"count too large for bytes": func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 1<<30)
			binary.BigEndian.PutUint32(b[23:], 1<<30-1)
			reseal(b)
			return b
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			b := mutate(bytes.Clone(good))
			if _, err := ParseInfo(b); !errors.Is(err, ErrCorrupt) {
				t.Errorf("ParseInfo = %v, want ErrCorrupt", err)
			}
			if _, _, err := Decode(b, 0); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Decode = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestTruncationsRejected(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultEncodeOptions()
		opts.Compression = c
		b, err := Encode(sampleSets()["headers"], opts)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(b) {
			if _, _, err := Decode(b[:n], 0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v: Decode of %d/%d bytes = %v, want ErrCorrupt", c, n, len(b), err)
			}
		}
		// Trailing bytes after the batch are not part of it.
		if _, _, err := Decode(append(bytes.Clone(b), 1, 2, 3), 0); err != nil {
			t.Fatalf("%v: Decode with trailing bytes: %v", c, err)
		}
	}
}

// rebuild makes a batch from a header template and a new records section.
func rebuild(template []byte, attrs int16, payload []byte) []byte {
	b := append(bytes.Clone(template[:HeaderSize]), payload...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], uint16(attrs))
	reseal(b)
	return b
}

func TestRecordLevelCorruption(t *testing.T) {
	recs := []Record{{Timestamp: 1, Key: []byte("k"), Value: []byte("v"), Headers: []Header{{Key: "h", Value: []byte("x")}}}}
	b, err := Encode(recs, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Clone(b[HeaderSize:])
	cases := map[string][]byte{
		// body: len, attrs, tsDelta, offDelta, key, value, headers
		"offset delta not dense": func() []byte { p := bytes.Clone(payload); p[3] = 2; return p }(),
		"key length past end":    func() []byte { p := bytes.Clone(payload); p[4] = 100; return p }(),
		"negative key length":    func() []byte { p := bytes.Clone(payload); p[4] = 3; return p }(),
		"header count too big":   func() []byte { p := bytes.Clone(payload); p[8] = 100; return p }(),
		"null header key":        func() []byte { p := bytes.Clone(payload); p[9] = 1; return p }(),
		"trailing bytes":         append(bytes.Clone(payload), 0),
		"record length short":    func() []byte { p := bytes.Clone(payload); p[0] -= 2; return p }(),
		"unterminated varint":    bytes.Repeat([]byte{0xff}, 12),
	}
	for name, p := range cases {
		for _, c := range []Compression{None, Zstd} {
			cp, err := compress(nil, c, p)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := Decode(rebuild(b, int16(c), cp), 0); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s/%v: Decode = %v, want ErrCorrupt", name, c, err)
			}
		}
	}
	// A compressed batch whose count exceeds what its decompressed bytes
	// can hold.
	cp, _ := compress(nil, Gzip, payload)
	bad := rebuild(b, int16(Gzip), cp)
	binary.BigEndian.PutUint32(bad[57:], 1000)
	binary.BigEndian.PutUint32(bad[23:], 999)
	reseal(bad)
	if _, _, err := Decode(bad, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("count over decompressed size: Decode = %v, want ErrCorrupt", err)
	}
}

func TestDecompressionBomb(t *testing.T) {
	// 8 MiB of zero-length records compresses to almost nothing.
	payload := make([]byte, 8<<20)
	b, err := Encode([]Record{{}}, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Compression{Gzip, Snappy, LZ4, Zstd} {
		cp, err := compress(nil, c, payload)
		if err != nil {
			t.Fatal(err)
		}
		bomb := rebuild(b, int16(c), cp)
		_, _, err = Decode(bomb, 1<<20)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v (%d bytes compressed): Decode = %v, want ErrTooLarge", c, len(cp), err)
		}
		if errors.Is(err, ErrCorrupt) {
			t.Errorf("%v: a too-large batch is reported corrupt: %v", c, err)
		}
	}
}

func TestDecodeLimitBoundary(t *testing.T) {
	recs := manyRecords(100, 100, 1)
	raw := appendRecords(nil, recs, 1)
	for _, c := range []Compression{Gzip, Snappy, LZ4, Zstd} {
		opts := DefaultEncodeOptions()
		opts.Compression = c
		b, err := Encode(recs, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Decode(b, len(raw)); err != nil {
			t.Errorf("%v: Decode with limit = exact size: %v", c, err)
		}
		if _, _, err := Decode(b, len(raw)-1); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v: Decode with limit one under: %v, want ErrTooLarge", c, err)
		}
	}
}

// xerialFrame frames src as Kafka's Java producer does, in blocks of size.
func xerialFrame(src []byte, size int) []byte {
	out := append(bytes.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1)
	for len(src) > 0 {
		n := min(size, len(src))
		blk := s2.EncodeSnappy(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
		out = append(out, blk...)
		src = src[n:]
	}
	return out
}

func TestXerialSnappy(t *testing.T) {
	recs := manyRecords(300, 200, 5)
	b, err := Encode(recs, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	framed := rebuild(b, int16(Snappy), xerialFrame(b[HeaderSize:], 32<<10))
	_, got, err := Decode(framed, 0)
	if err != nil {
		t.Fatalf("Decode xerial: %v", err)
	}
	assertRecords(t, got, withOffsets(recs, 0))
	if _, _, err := Decode(framed, len(b)-HeaderSize-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decode xerial over limit = %v, want ErrTooLarge", err)
	}
	// A block length past the end.
	bad := xerialFrame(b[HeaderSize:], 32<<10)
	binary.BigEndian.PutUint32(bad[16:], 1<<30)
	if _, _, err := Decode(rebuild(b, int16(Snappy), bad), 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode bad xerial = %v, want ErrCorrupt", err)
	}
}

func TestSplit(t *testing.T) {
	var all []byte
	var want [][]byte
	for i, c := range allCodecs {
		opts := DefaultEncodeOptions()
		opts.Compression = c
		b, err := Encode(manyRecords(i+1, 50, int64(i)), opts)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b)
		all = append(all, b...)
	}
	var got [][]byte
	if err := Split(all, func(b []byte) error { got = append(got, b); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Split returned %d batches, not the %d encoded ones", len(got), len(want))
	}
	if err := Split(nil, func([]byte) error { t.Fatal("fn called on empty input"); return nil }); err != nil {
		t.Fatalf("Split(nil) = %v", err)
	}
	if err := Split(all[:len(all)-1], func([]byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Split of truncated input = %v, want ErrCorrupt", err)
	}
	if err := Split(append(bytes.Clone(all), 0, 0), func([]byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Split with trailing garbage = %v, want ErrCorrupt", err)
	}
	stop := errors.New("stop")
	calls := 0
	if err := Split(all, func([]byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Split = %v after %d calls, want fn's error after 1", err, calls)
	}
}

func TestEncodeErrors(t *testing.T) {
	if _, err := Encode(nil, DefaultEncodeOptions()); err == nil {
		t.Error("Encode(nil) succeeded")
	}
	opts := DefaultEncodeOptions()
	opts.Compression = 5
	if _, err := Encode([]Record{{}}, opts); err == nil || !strings.Contains(err.Error(), "EncodeOptions.Compression") {
		t.Errorf("Encode with codec 5 = %v", err)
	}
	if _, err := Encode([]Record{{Timestamp: math.MinInt64}, {Timestamp: math.MaxInt64}}, DefaultEncodeOptions()); err == nil {
		t.Error("Encode with timestamps spanning all of int64 succeeded")
	}
}

func TestCompressionNames(t *testing.T) {
	for _, c := range allCodecs {
		got, err := ParseCompression(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCompression(%q) = %v, %v", c.String(), got, err)
		}
	}
	for i, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if allCodecs[i].String() != name || int(allCodecs[i]) != i {
			t.Errorf("codec %d = %v (%d), want %s", i, allCodecs[i], int(allCodecs[i]), name)
		}
	}
	if _, err := ParseCompression("brotli"); err == nil {
		t.Error("ParseCompression(brotli) succeeded")
	}
	if s := Compression(7).String(); s != "compression(7)" {
		t.Errorf("Compression(7).String() = %q", s)
	}
}

// TestHostileCountsDoNotAllocate decodes batches whose counts claim far
// more than their bytes hold: they fail before allocating for the claim.
func TestHostileCountsDoNotAllocate(t *testing.T) {
	b, err := Encode([]Record{{Value: []byte("v"), Headers: []Header{{Key: "k"}}}}, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	manyRecords := func(c Compression) []byte {
		cp, err := compress(nil, c, b[HeaderSize:])
		if err != nil {
			t.Fatal(err)
		}
		x := rebuild(b, int16(c), cp)
		binary.BigEndian.PutUint32(x[57:], math.MaxInt32)
		binary.BigEndian.PutUint32(x[23:], math.MaxInt32-1)
		reseal(x)
		return x
	}
	// Record body: length, attributes, ts delta, offset delta, key, value
	// (2 bytes), then the header count at byte 7.
	p := b[HeaderSize:]
	hc := binary.AppendVarint(nil, math.MaxInt32)
	payload := append(append(bytes.Clone(p[:7]), hc...), p[8:]...)
	payload[0] = byte(2 * (len(payload) - 1)) // zigzag record length
	cases := map[string][]byte{
		"records/none": manyRecords(None),
		"records/zstd": manyRecords(Zstd),
		"records/gzip": manyRecords(Gzip),
		"headers":      rebuild(b, 0, payload),
	}
	for name, x := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := Decode(x, 0)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "cannot fit") && !strings.Contains(err.Error(), "header count") {
			t.Errorf("%s: Decode = %v, want ErrCorrupt about a count", name, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s: Decode allocated %d bytes", name, alloc)
		}
	}
}
