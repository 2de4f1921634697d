package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression is a Kafka record batch compression codec. Its value is the
// code Kafka stores in the low three bits of a batch's attributes.
type Compression int8

// The codecs Kafka defines.
const (
	None   Compression = 0
	Gzip   Compression = 1
	Snappy Compression = 2
	LZ4    Compression = 3
	Zstd   Compression = 4
)

// compressionMask selects the codec bits of a batch's attributes.
const compressionMask = 0x07

// ParseCompression returns the codec named s: "none", "gzip", "snappy",
// "lz4" or "zstd".
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "none":
		return None, nil
	case "gzip":
		return Gzip, nil
	case "snappy":
		return Snappy, nil
	case "lz4":
		return LZ4, nil
	case "zstd":
		return Zstd, nil
	}
	return None, fmt.Errorf("kbatch: unknown compression %q (want none, gzip, snappy, lz4 or zstd)", s)
}

// String returns the codec's name as ParseCompression accepts it, or
// "compression(N)" for a code Kafka does not define.
func (c Compression) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", int8(c))
}

// valid reports whether c is a codec Kafka defines.
func (c Compression) valid() bool { return c >= None && c <= Zstd }

// errTooLarge is wrapped (with ErrCorrupt) when a batch decompresses past
// the caller's bound.
var errTooLarge = errors.New("decompressed size exceeds limit")

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

type gzipEncoder struct {
	w   *gzip.Writer
	dst appendWriter
}

type lz4Encoder struct {
	w   *lz4.Writer
	dst appendWriter
}

var (
	gzipEncoders = sync.Pool{New: func() any {
		e := new(gzipEncoder)
		e.w = gzip.NewWriter(&e.dst)
		return e
	}}
	lz4Encoders = sync.Pool{New: func() any {
		e := new(lz4Encoder)
		e.w = lz4.NewWriter(&e.dst)
		// 64 KiB blocks, as Kafka's Java producer writes them: the
		// default 4 MiB blocks cost every reader a 4 MiB buffer.
		_ = e.w.Apply(lz4.BlockSizeOption(lz4.Block64Kb))
		return e
	}}

	zstdEncoderOnce sync.Once
	zstdEncoder     *zstd.Encoder
)

// sharedZstdEncoder returns the package's zstd encoder. EncodeAll may be
// called concurrently and starts no goroutine, so one encoder serves all.
func sharedZstdEncoder() *zstd.Encoder {
	zstdEncoderOnce.Do(func() {
		var err error
		zstdEncoder, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithWindowSize(1<<20),
			zstd.WithZeroFrames(true))
		if err != nil {
			panic(fmt.Sprintf("kbatch: zstd encoder options: %v", err)) // fixed options: cannot fail
		}
	})
	return zstdEncoder
}

// compress appends src compressed with c to dst.
func compress(dst []byte, c Compression, src []byte) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		e := gzipEncoders.Get().(*gzipEncoder)
		defer gzipEncoders.Put(e)
		e.dst.b = dst
		e.w.Reset(&e.dst)
		_, err := e.w.Write(src)
		if err == nil {
			err = e.w.Close()
		}
		out := e.dst.b
		e.dst.b = nil
		if err != nil {
			return nil, fmt.Errorf("kbatch: gzip compression: %w", err)
		}
		return out, nil
	case Snappy:
		// Raw block snappy, as franz-go writes it; readers accept both this
		// and the xerial framing of the Java producer.
		n := len(dst)
		dst = growCap(dst, s2.MaxEncodedLen(len(src)))
		enc := s2.EncodeSnappy(dst[n:cap(dst)], src)
		return dst[:n+len(enc)], nil
	case LZ4:
		e := lz4Encoders.Get().(*lz4Encoder)
		defer lz4Encoders.Put(e)
		e.dst.b = dst
		e.w.Reset(&e.dst)
		_, err := e.w.Write(src)
		if err == nil {
			err = e.w.Close()
		}
		out := e.dst.b
		e.dst.b = nil
		if err != nil {
			return nil, fmt.Errorf("kbatch: lz4 compression: %w", err)
		}
		return out, nil
	case Zstd:
		return sharedZstdEncoder().EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("kbatch: unknown compression %d", int8(c))
}

// growCap returns b with room for at least n more bytes.
func growCap(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

type gzipDecoder struct {
	r   gzip.Reader
	src bytes.Reader
	lim io.LimitedReader
}

type lz4Decoder struct {
	r   *lz4.Reader
	src bytes.Reader
	lim io.LimitedReader
}

// zstdDecoder is a pooled zstd decoder bounded to limit bytes of output.
type zstdDecoder struct {
	d     *zstd.Decoder
	limit int
}

var (
	gzipDecoders = sync.Pool{New: func() any {
		d := new(gzipDecoder)
		d.lim.R = &d.r
		return d
	}}
	lz4Decoders = sync.Pool{New: func() any {
		d := &lz4Decoder{r: lz4.NewReader(nil)}
		d.lim.R = d.r
		return d
	}}
	zstdDecoders sync.Pool // of *zstdDecoder
)

// getZstdDecoder returns a decoder whose output is bounded to limit bytes.
// The decoder rejects frames whose declared content or window size is over
// the bound before it allocates. Callers use one limit in practice, so a
// pooled decoder with another limit is closed and replaced.
func getZstdDecoder(limit int) (*zstdDecoder, error) {
	if d, ok := zstdDecoders.Get().(*zstdDecoder); ok {
		if d.limit == limit {
			return d, nil
		}
		d.d.Close()
	}
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(limit)))
	if err != nil {
		return nil, fmt.Errorf("kbatch: zstd decoder: %w", err)
	}
	return &zstdDecoder{d: d, limit: limit}, nil
}

// decompress returns src decompressed with c (not None) into a new slice
// of at most limit bytes. It allocates no more than a small multiple of limit
// whatever src claims.
func decompress(c Compression, src []byte, limit int) ([]byte, error) {
	switch c {
	case Gzip:
		d := gzipDecoders.Get().(*gzipDecoder)
		defer gzipDecoders.Put(d)
		d.src.Reset(src)
		if err := d.r.Reset(&d.src); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		out, err := readBounded(&d.lim, limit, len(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return out, nil
	case Snappy:
		return decodeSnappy(src, limit)
	case LZ4:
		d := lz4Decoders.Get().(*lz4Decoder)
		defer lz4Decoders.Put(d)
		d.src.Reset(src)
		d.r.Reset(&d.src)
		out, err := readBounded(&d.lim, limit, len(src))
		d.r.Reset(nil)
		if err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return out, nil
	case Zstd:
		d, err := getZstdDecoder(limit)
		if err != nil {
			return nil, err
		}
		defer zstdDecoders.Put(d)
		out, err := d.d.DecodeAll(src, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return nil, fmt.Errorf("zstd: %w: %w", errTooLarge, err)
		}
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		if len(out) > limit {
			return nil, fmt.Errorf("zstd: %w", errTooLarge)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown compression %d", int8(c))
}

// readBounded reads lim to its end into a new slice, failing with
// errTooLarge past limit bytes. The first guess at the output size is a
// few times the input, so the buffer grows by doubling at most to about
// twice limit.
func readBounded(lim *io.LimitedReader, limit, srcLen int) ([]byte, error) {
	lim.N = int64(limit) + 1
	var buf bytes.Buffer
	buf.Grow(min(limit+1, 4*srcLen+512))
	n, err := buf.ReadFrom(lim)
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, errTooLarge
	}
	return buf.Bytes(), nil
}

// xerialMagic starts the snappy framing of Kafka's Java producer (the
// snappy-java stream format): the magic, then a version and a minimum
// compatible version (both int32), then blocks of a big-endian int32 length
// followed by a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

// decodeSnappy decodes raw block snappy or xerial-framed snappy. Every
// decoded length is read from the block headers and checked against limit
// before anything is allocated.
func decodeSnappy(src []byte, limit int) ([]byte, error) {
	if len(src) >= xerialHeaderLen && bytes.HasPrefix(src, xerialMagic) {
		return decodeXerial(src[xerialHeaderLen:], limit)
	}
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > limit {
		return nil, fmt.Errorf("snappy: %w", errTooLarge)
	}
	out, err := s2.Decode(make([]byte, n), src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return out, nil
}

var errXerial = errors.New("snappy: malformed xerial framing")

func decodeXerial(src []byte, limit int) ([]byte, error) {
	// First pass: walk the block headers and bound the total.
	total := 0
	for rem := src; len(rem) > 0; {
		if len(rem) < 4 {
			return nil, errXerial
		}
		size := binary.BigEndian.Uint32(rem)
		rem = rem[4:]
		if uint64(size) > uint64(len(rem)) {
			return nil, errXerial
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if n > limit-total {
			return nil, fmt.Errorf("snappy: %w", errTooLarge)
		}
		total += n
		rem = rem[size:]
	}
	out := make([]byte, total)
	at := 0
	for rem := src; len(rem) > 0; {
		size := binary.BigEndian.Uint32(rem)
		block := rem[4 : 4+size]
		rem = rem[4+size:]
		n, _ := s2.DecodedLen(block)
		if _, err := s2.Decode(out[at:at+n], block); err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		at += n
	}
	return out, nil
}
