package kbatch

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

var updateValidate = flag.Bool("update-validate", false, "rewrite testdata/validate.golden")

const validateGolden = "testdata/validate.golden"

// mustEncode encodes recs or fails the test.
func mustEncode(t testing.TB, recs []Record, opts EncodeOptions) []byte {
	t.Helper()
	b, err := Encode(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit returns a copy of b changed by fn and resealed (CRC fixed).
func edit(b []byte, fn func(b []byte)) []byte {
	b = bytes.Clone(b)
	fn(b)
	reseal(b)
	return b
}

// validateCases are the inputs of the golden file: one accepted batch of
// each shape and one refusal of each kind.
func validateCases(t testing.TB) []struct {
	name string
	b    []byte
} {
	plain := DefaultEncodeOptions()
	recs := []Record{
		{Timestamp: 1735689600000, Key: []byte("user-1"), Value: []byte(`{"event":"login"}`),
			Headers: []Header{{Key: "trace-id", Value: []byte("abc123")}, {Key: "null", Value: nil}}},
		{Timestamp: 1735689600250, Key: nil, Value: nil},
		{Timestamp: 1735689600100, Key: []byte{}, Value: []byte{}},
	}
	good := mustEncode(t, recs, plain)
	idem := mustEncode(t, recs[:1], EncodeOptions{ProducerID: 7, ProducerEpoch: 1, BaseSequence: 40})
	noHeaders := mustEncode(t, recs[1:], plain)
	be := binary.BigEndian
	var cases []struct {
		name string
		b    []byte
	}
	add := func(name string, b []byte) {
		cases = append(cases, struct {
			name string
			b    []byte
		}{name, b})
	}
	add("ok plain", good)
	add("ok idempotent", idem)
	add("ok two batches", append(bytes.Clone(good), idem...))
	add("ok franz-go non-idempotent fields", edit(noHeaders, func(b []byte) {
		be.PutUint16(b[offProducerEpoch:], 0xffff)
		be.PutUint32(b[offBaseSequence:], 0)
	}))
	add("bad crc", func() []byte { b := bytes.Clone(good); b[len(b)-1] ^= 1; return b }())
	add("bad magic", edit(good, func(b []byte) { b[offMagic] = 1 }))
	add("truncated", good[:len(good)-3])
	add("trailing garbage", append(bytes.Clone(good), 1, 2, 3))
	add("lying record count", edit(good, func(b []byte) {
		be.PutUint32(b[offRecordCount:], 2)
		be.PutUint32(b[offLastOffsetDelta:], 1)
	}))
	add("record count too high", edit(good, func(b []byte) {
		be.PutUint32(b[offRecordCount:], 4)
		be.PutUint32(b[offLastOffsetDelta:], 3)
	}))
	add("record over the limit", mustEncode(t, []Record{{Timestamp: 1, Value: bytes.Repeat([]byte("v"), 1025)}}, plain))
	add("not dense", edit(good, func(b []byte) { be.PutUint32(b[offLastOffsetDelta:], 5) }))
	add("unknown codec", edit(good, func(b []byte) { be.PutUint16(b[offAttributes:], 5) }))
	add("bad compression", edit(good, func(b []byte) { be.PutUint16(b[offAttributes:], uint16(Gzip)) }))
	add("log append time", edit(good, func(b []byte) { be.PutUint16(b[offAttributes:], attrLogAppendTime) }))
	add("transactional", edit(good, func(b []byte) { be.PutUint16(b[offAttributes:], attrTransactional) }))
	add("control", edit(good, func(b []byte) { be.PutUint16(b[offAttributes:], attrControl) }))
	add("unknown attribute", edit(good, func(b []byte) { be.PutUint16(b[offAttributes:], 0x100) }))
	add("producer id -2", edit(good, func(b []byte) { be.PutUint64(b[offProducerID:], uint64(1<<64-2)) }))
	add("idempotent without sequence", edit(idem, func(b []byte) { be.PutUint32(b[offBaseSequence:], 0xffffffff) }))
	add("idempotent without epoch", edit(idem, func(b []byte) { be.PutUint16(b[offProducerEpoch:], 0xffff) }))
	add("max timestamp low", edit(good, func(b []byte) { be.PutUint64(b[offMaxTimestamp:], 1735689600100) }))
	add("max timestamp high", edit(good, func(b []byte) { be.PutUint64(b[offMaxTimestamp:], 1735689600251) }))
	add("negative timestamp", edit(good, func(b []byte) { be.PutUint64(b[offFirstTimestamp:], uint64(1<<64-5)) }))
	add("record bytes after fields", func() []byte {
		// Record 2 (empty key, empty value, no headers: length 7) claims
		// one byte more, taken from nothing: the batch ends early.
		b := edit(good, func(b []byte) {})
		return rebuild(b, 0, append(bytes.Clone(b[HeaderSize:]), 0))
	}())
	return cases
}

// verdict is Validate's answer in the golden file's words.
func verdict(b []byte) string {
	c, err := Validate(b, Limits{MaxRecordBytes: 1 << 10}, nil, nil)
	if err != nil {
		kind := "other"
		for _, k := range []struct {
			err  error
			name string
		}{{ErrCorrupt, "corrupt"}, {ErrRefused, "refused"}, {ErrTooLarge, "too-large"}, {ErrRecordTooLarge, "record-too-large"}} {
			if errors.Is(err, k.err) {
				kind = k.name
				break
			}
		}
		return "error " + kind + ": " + err.Error()
	}
	return fmt.Sprintf("ok %d records", c.Records)
}

// TestValidateGolden pins the validator's verdict on fixed batches: each
// line of testdata/validate.golden is a case name, its bytes in hex and
// the verdict. -update-validate rewrites it from validateCases.
func TestValidateGolden(t *testing.T) {
	if *updateValidate {
		var out strings.Builder
		out.WriteString("# kbatch.Validate verdicts (MaxRecordBytes 1024): name | batch bytes (hex) | verdict\n")
		for _, c := range validateCases(t) {
			fmt.Fprintf(&out, "%s | %s | %s\n", c.name, hex.EncodeToString(c.b), verdict(c.b))
		}
		if err := os.WriteFile(validateGolden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(validateGolden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		parts := strings.SplitN(line, " | ", 3)
		if len(parts) != 3 {
			t.Fatalf("bad golden line %q", line)
		}
		b, err := hex.DecodeString(parts[1])
		if err != nil {
			t.Fatalf("%s: %v", parts[0], err)
		}
		if got := verdict(b); got != parts[2] {
			t.Errorf("%s: verdict %q, golden %q", parts[0], got, parts[2])
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if want := len(validateCases(t)); n != want {
		t.Fatalf("golden file has %d cases, validateCases %d: run with -update-validate", n, want)
	}
}

// TestValidateAcceptsEncode: every sample set in every codec validates
// with its record count, and each and value see every batch and value.
func TestValidateAcceptsEncode(t *testing.T) {
	for name, recs := range sampleSets() {
		if name == "unordered timestamps" {
			recs = recs[:3] // a negative timestamp is refused
		}
		for _, c := range allCodecs {
			opts := DefaultEncodeOptions()
			opts.Compression = c
			b := mustEncode(t, recs, opts)
			two := append(bytes.Clone(b), b...)
			var batches int
			var values [][]byte
			cnt, err := Validate(two, Limits{}, func(i int, batch []byte, info Info) error {
				if i != batches || !bytes.Equal(batch, b) || info.RecordCount != int32(len(recs)) {
					t.Fatalf("%s/%s: batch %d: %d bytes, info %+v", name, c, i, len(batch), info)
				}
				batches++
				return nil
			}, func(i int, v []byte) error {
				if i != len(values) {
					t.Fatalf("%s/%s: value %d seen at %d", name, c, i, len(values))
				}
				values = append(values, bytes.Clone(v))
				return nil
			})
			if err != nil {
				t.Fatalf("%s/%s: %v", name, c, err)
			}
			n := cnt.Records
			wantBytes := 0
			for _, r := range recs {
				wantBytes += len(r.Key) + len(r.Value)
				for _, h := range r.Headers {
					wantBytes += len(h.Key) + len(h.Value) + HeaderOverhead
				}
			}
			if cnt.RecordBytes != 2*wantBytes {
				t.Fatalf("%s/%s: %d record bytes, want %d", name, c, cnt.RecordBytes, 2*wantBytes)
			}
			if n != 2*len(recs) || batches != 2 || len(values) != n {
				t.Fatalf("%s/%s: %d records, %d batches, %d values", name, c, n, batches, len(values))
			}
			for i, v := range values {
				if w := recs[i%len(recs)].Value; !bytes.Equal(v, w) || (v == nil) != (w == nil) {
					t.Fatalf("%s/%s: value %d = %q, want %q", name, c, i, v, w)
				}
			}
		}
	}
}

// TestValidateLimits: each size limit refuses just past it.
func TestValidateLimits(t *testing.T) {
	recs := manyRecords(10, 100, 1700000000000)
	b := mustEncode(t, recs, DefaultEncodeOptions())
	z := mustEncode(t, recs, EncodeOptions{Compression: Zstd, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
	two := append(bytes.Clone(b), b...)
	cases := []struct {
		name string
		b    []byte
		lim  Limits
		want error
	}{
		{"batch at limit", b, Limits{MaxBatchBytes: len(b)}, nil},
		{"batch over limit", b, Limits{MaxBatchBytes: len(b) - 1}, ErrTooLarge},
		{"total at limit", two, Limits{MaxDecompressed: len(two)}, nil},
		{"total over limit", two, Limits{MaxDecompressed: len(two) - 1}, ErrTooLarge},
		{"compressed at limit", z, Limits{MaxDecompressed: len(b)}, nil},
		{"compressed over limit", z, Limits{MaxDecompressed: len(b) - 1}, ErrTooLarge},
		{"record at limit", b, Limits{MaxRecordBytes: len(recs[0].Key) + 100}, nil},
		{"record over limit", b, Limits{MaxRecordBytes: len(recs[0].Key) + 99}, ErrRecordTooLarge},
	}
	for _, c := range cases {
		_, err := Validate(c.b, c.lim, nil, nil)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	stop := errors.New("stop")
	if _, err := Validate(b, Limits{}, nil, func(i int, _ []byte) error {
		if i == 3 {
			return stop
		}
		return nil
	}); err != stop {
		t.Fatalf("value's error = %v, want it returned as is", err)
	}
}

// FuzzValidate feeds arbitrary bytes to Validate (fixCRC first makes the
// first batch's length and checksum match). It must never panic, allocate
// a bounded multiple of its input and limit, and whatever it accepts must
// decode with Decode to the same records count, batch by batch.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	for _, c := range validateCases(f) {
		f.Add(c.b, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC && len(data) >= HeaderSize {
			data = bytes.Clone(data)
			binary.BigEndian.PutUint32(data[offBatchLength:], uint32(len(data)-lengthPrefix))
			reseal(data)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var infos []Info
		var batches [][]byte
		cnt, err := Validate(data, Limits{MaxDecompressed: fuzzLimit}, func(_ int, batch []byte, info Info) error {
			infos = append(infos, info)
			batches = append(batches, batch)
			return nil
		}, func(int, []byte) error { return nil })
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(64*len(data)+32*fuzzLimit+16<<20) {
			t.Fatalf("Validate of %d bytes allocated %d bytes", len(data), alloc)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrRefused) && !errors.Is(err, ErrRecordTooLarge) {
				t.Fatalf("Validate error %v wraps no kbatch sentinel", err)
			}
			return
		}
		total := 0
		for i, b := range batches {
			info, recs, err := Decode(b, fuzzLimit)
			if err != nil {
				t.Fatalf("batch %d: Validate accepted what Decode refuses: %v", i, err)
			}
			if info != infos[i] || len(recs) != int(info.RecordCount) {
				t.Fatalf("batch %d: Decode info %+v with %d records, Validate %+v", i, info, len(recs), infos[i])
			}
			for _, r := range recs {
				if r.Timestamp < 0 || r.Timestamp > info.MaxTimestamp {
					t.Fatalf("batch %d: accepted timestamp %d outside [0, %d]", i, r.Timestamp, info.MaxTimestamp)
				}
			}
			total += len(recs)
		}
		if n := cnt.Records; total != n {
			t.Fatalf("Validate counted %d records, Decode %d", n, total)
		}
	})
}

// A header key that is not UTF-8 is refused: floe's API carries header
// keys as strings, so such a record could be stored but never fetched
// through the per-record API. The same key in UTF-8 passes.
func TestValidateRefusesNonUTF8HeaderKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		want error
	}{{"trace-id", nil}, {"caf\xc3\xa9", nil}, {"bad\xff", ErrRefused}, {"\xc3", ErrRefused}} {
		for _, comp := range []Compression{None, Zstd} {
			b := mustEncode(t, []Record{{Key: []byte("k"), Value: []byte("v"), Headers: []Header{{Key: c.key, Value: []byte("x")}}}},
				EncodeOptions{Compression: comp, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
			_, err := Validate(b, Limits{}, nil, nil)
			if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Errorf("header key %q, %v: %v, want %v", c.key, comp, err, c.want)
			}
		}
	}
}
