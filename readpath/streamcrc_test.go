package readpath

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/objectstore"
)

// streamCRC's prefix is the CRC-32C of the buffer's first n bytes for the
// largest mark within the limit, whatever the chunks; a chunk out of
// order, or of another buffer, leaves nothing known; a read started afresh
// at 0 starts the hash again.
func TestStreamCRC(t *testing.T) {
	data := make([]byte, 5*crcStep+123)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	whole := func(chunks ...int) *streamCRC {
		var h streamCRC
		off := 0
		for _, c := range chunks {
			h.observe(off, data[off:off+c])
			off += c
		}
		return &h
	}
	full := len(data)
	for _, tc := range []struct {
		name   string
		h      *streamCRC
		limit  int
		want   int // n; -1: nothing known
		buffer []byte
	}{
		{"one chunk", whole(full), full, 5 * crcStep, data},
		{"one-byte chunks then the rest", whole(1, 1, 1, full-3), full, 5 * crcStep, data},
		{"chunks across marks", whole(crcStep-1, 2, crcStep, 3*crcStep-1, full-5*crcStep), full, 5 * crcStep, data},
		{"limit between marks", whole(full), 3*crcStep + 10, 3 * crcStep, data},
		{"limit under the first mark", whole(full), crcStep - 1, -1, data},
		{"half arrived", whole(2*crcStep + 7), full, 2 * crcStep, data},
		{"another buffer returned", whole(full), full, -1, bytes.Clone(data)},
		{"nothing shown", &streamCRC{}, full, -1, data},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crc, n := tc.h.prefix(tc.buffer, tc.limit)
			if tc.want < 0 {
				if crc != 0 || n != 0 {
					t.Fatalf("prefix = %08x, %d; want nothing known", crc, n)
				}
				return
			}
			if n != tc.want || crc != crc32.Checksum(data[:n], castagnoli) {
				t.Fatalf("prefix = %08x, %d; want the CRC of the first %d bytes", crc, n, tc.want)
			}
		})
	}

	var h streamCRC
	h.observe(0, data[:crcStep])
	h.observe(2*crcStep, data[2*crcStep:]) // a gap
	if _, n := h.prefix(data, full); n != 0 {
		t.Errorf("after a gap: %d bytes known, want 0", n)
	}
	h.observe(0, data[:full]) // read afresh
	if crc, n := h.prefix(data, full); n != 5*crcStep || crc != crc32.Checksum(data[:n], castagnoli) {
		t.Errorf("read afresh: %08x, %d", crc, n)
	}
	other := bytes.Clone(data)
	h.observe(0, data[:crcStep])
	h.observe(crcStep, other[crcStep:]) // the next chunk, but of another buffer
	if _, n := h.prefix(data, full); n != 0 {
		t.Errorf("a chunk of another buffer: %d bytes known, want 0", n)
	}
}

// observingStore is a store that reads like s3store: into the context's
// buffer, in chunks, each shown to the context's observer; corrupt flips a
// byte of the object as it is read (damaged at rest or on the way).
type observingStore struct {
	objectstore.Store
	chunk   int
	corrupt int // byte to flip; -1: none
}

func (s *observingStore) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	src, err := s.Store.Get(ctx, key, off, length)
	if err != nil {
		return nil, err
	}
	buf := objectstore.Buffer(ctx, len(src))
	obs := objectstore.Observer(ctx)
	for at := 0; at < len(src); at += s.chunk {
		end := min(at+s.chunk, len(src))
		copy(buf[at:end], src[at:end])
		if s.corrupt >= at && s.corrupt < end {
			buf[s.corrupt] ^= 0x10
		}
		if obs != nil {
			obs(at, buf[at:end])
		}
	}
	return buf, nil
}

// A load hashes the body as the store reads it and still tells every
// damaged byte: of the part hashed on the way, of the rest hashed at the
// check (past the last mark, the footer's side), and of a store that shows
// nothing. An intact file is cached verified.
func TestLoaderStreamCRCDetectsCorruption(t *testing.T) {
	mem := objectstore.NewMemory()
	file := mappedFile(t, mem, "f")                                        // ~512 KiB of batches
	bodyEnd := len(file) - logfile.TrailerSize - (4 + 8*logfile.EntrySize) // 8 batches
	for _, tc := range []struct {
		name    string
		chunk   int
		corrupt int
		observe bool
	}{
		{"intact, 4 KiB chunks", 4 << 10, -1, true},
		{"intact, one chunk", len(file), -1, true},
		{"byte 100 (hashed on the way)", 4 << 10, 100, true},
		{"a byte in the middle", 32 << 10, len(file) / 2, true},
		{"the body's last byte (hashed at the check)", 8 << 10, bodyEnd - 1, true},
		{"a footer byte", 8 << 10, bodyEnd + 10, true},
		{"byte 100, store shows nothing", 4 << 10, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var store objectstore.Store = &observingStore{Store: mem, chunk: tc.chunk, corrupt: tc.corrupt}
			if !tc.observe {
				store = &copyingStore{Store: mem, corrupt: tc.corrupt}
			}
			l := NewLoader(store, NewCache(4<<20), testConfig())
			defer l.Close()
			data, verified, err := l.File(context.Background(), "f", int64(len(file)))
			var dl *DataLossError
			if tc.corrupt < 0 {
				if err != nil || !verified || !bytes.Equal(data, file) {
					t.Fatalf("intact load: verified %v, equal %v, %v", verified, bytes.Equal(data, file), err)
				}
				if got, want := l.StreamHashedBytes(), int64(bodyEnd/crcStep*crcStep); got != want {
					t.Fatalf("%d bytes hashed as they arrived, want %d (every mark before the body's end)", got, want)
				}
				return
			}
			if !tc.observe && l.StreamHashedBytes() != 0 {
				t.Fatalf("%d bytes taken as hashed from a store that showed nothing", l.StreamHashedBytes())
			}
			if !errors.As(err, &dl) {
				t.Fatalf("load of a file with byte %d flipped: %v, want data loss", tc.corrupt, err)
			}
		})
	}
}

// copyingStore reads into the context's buffer without showing anything
// (a store that does not observe), flipping byte corrupt.
type copyingStore struct {
	objectstore.Store
	corrupt int
}

func (s *copyingStore) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	src, err := s.Store.Get(ctx, key, off, length)
	if err != nil {
		return nil, err
	}
	buf := objectstore.Buffer(ctx, len(src))
	copy(buf, src)
	if s.corrupt >= 0 {
		buf[s.corrupt] ^= 0x10
	}
	return buf, nil
}
