package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// fuzzLimit is the decompression bound FuzzDecode passes to Decode.
const fuzzLimit = 256 << 10

// fuzzSeeds returns valid batches of every codec, some truncated or
// damaged, and a decompression bomb.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	sets := sampleSets()
	for _, name := range []string{"single", "nil key and value", "empty key and value", "headers", "unordered timestamps"} {
		for _, c := range allCodecs {
			opts := DefaultEncodeOptions()
			opts.Compression = c
			opts.LogAppendTime = name == "unordered timestamps"
			b, err := Encode(sets[name], opts)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, b, b[:HeaderSize], b[:len(b)-1], b[:len(b)/2])
		}
	}
	b, err := Encode(manyRecords(30, 40, 1), DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, b, rebuild(b, int16(Snappy), xerialFrame(b[HeaderSize:], 256)))
	bomb, err := compress(nil, Zstd, make([]byte, 4*fuzzLimit))
	if err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, rebuild(b, int16(Zstd), bomb))
	return seeds
}

// FuzzDecode feeds arbitrary bytes to Decode, with fixCRC first making the
// batch length and checksum match the bytes. It must never panic, must
// allocate a bounded multiple of its input and limit, and whatever it
// accepts must re-encode to the same records.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC && len(data) >= HeaderSize {
			// Fix the length and the CRC so that mutations reach the
			// records instead of failing the checksum.
			data = bytes.Clone(data)
			binary.BigEndian.PutUint32(data[offBatchLength:], uint32(len(data)-lengthPrefix))
			reseal(data)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		info, recs, err := Decode(data, fuzzLimit)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(64*len(data)+32*fuzzLimit+16<<20) {
			t.Fatalf("Decode of %d bytes allocated %d bytes", len(data), alloc)
		}
		pi, perr := ParseInfo(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Decode error %v wraps neither ErrCorrupt nor ErrTooLarge", err)
			}
			if perr != nil && !errors.Is(perr, ErrCorrupt) {
				t.Fatalf("ParseInfo error %v does not wrap ErrCorrupt", perr)
			}
			return
		}
		if perr != nil || pi != info {
			t.Fatalf("Decode accepted what ParseInfo rejects: %v", perr)
		}
		if len(recs) != int(info.RecordCount) {
			t.Fatalf("%d records, header says %d", len(recs), info.RecordCount)
		}
		opts := EncodeOptions{
			Compression:   info.Compression,
			ProducerID:    info.ProducerID,
			ProducerEpoch: info.ProducerEpoch,
			BaseSequence:  info.BaseSequence,
			LogAppendTime: info.Attributes&attrLogAppendTime != 0,
		}
		if opts.LogAppendTime {
			return // record timestamps were replaced by the batch's
		}
		b, err := Encode(recs, opts)
		if err != nil {
			// Hostile timestamps can span more than int64.
			return
		}
		if err := SetBaseOffset(b, info.BaseOffset); err != nil {
			t.Fatal(err)
		}
		_, again, err := Decode(b, 0)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		assertRecords(t, again, recs)
	})
}
