package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Frames: every request is a 4-byte big-endian size and that many bytes:
// the request header (api key, api version, correlation id, client id,
// and from the API's first flexible version a tagged-field section), then
// the body. Responses are the size, the correlation id, an empty tagged
// field section for flexible versions (never for ApiVersions, whose
// response header stays v0 so that any client can read it), then the body.

// ErrFrameTooLarge wraps the error of a frame over Config.MaxFrameBytes.
var ErrFrameTooLarge = errors.New("kafka: frame too large")

// ErrMalformed wraps the errors of frames that do not decode.
var ErrMalformed = errors.New("kafka: malformed request")

// readFrameSize reads a frame's size prefix and checks it against max
// before anything is allocated for the frame.
func readFrameSize(r io.Reader, max int) (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(b[:]))
	switch {
	case n < 0:
		return 0, fmt.Errorf("%w: negative frame size %d", ErrMalformed, n)
	case int64(n) > int64(max):
		return 0, fmt.Errorf("%w: frame of %d bytes over kafka.max_frame_bytes (%d)", ErrFrameTooLarge, n, max)
	case n < 8:
		return 0, fmt.Errorf("%w: frame of %d bytes is shorter than a request header", ErrMalformed, n)
	}
	return int(n), nil
}

// header is a request header.
type header struct {
	key, version int16
	correlation  int32
	clientID     string
}

// request is a decoded frame.
type request struct {
	header
	// req is the request, nil when unsupported.
	req kmsg.Request
	// unsupported: kmsg knows the API key but this server does not serve
	// the key or the version; the body is not decoded and the request
	// gets unsupportedResponse.
	unsupported bool
}

// parseRequest decodes a frame (its size prefix removed). A frame that does
// not decode, or names an API key kmsg does not know, is an error wrapping
// ErrMalformed; a known key or version this server does not serve comes
// back with unsupported set, its body undecoded. It never panics.
func parseRequest(frame []byte) (request, error) {
	var out request
	if len(frame) < 8 {
		return out, fmt.Errorf("%w: %d bytes, shorter than a request header", ErrMalformed, len(frame))
	}
	out.key = int16(binary.BigEndian.Uint16(frame[0:]))
	out.version = int16(binary.BigEndian.Uint16(frame[2:]))
	out.correlation = int32(binary.BigEndian.Uint32(frame[4:]))
	b := kbin.Reader{Src: frame[8:]}
	if id := b.NullableString(); id != nil {
		out.clientID = *id
	}
	if !b.Ok() {
		return out, fmt.Errorf("%w: short client id in %s v%d header", ErrMalformed, kmsg.NameForKey(out.key), out.version)
	}
	if kmsg.RequestForKey(out.key) == nil || out.version < 0 {
		return out, fmt.Errorf("%w: api key %d v%d is not a Kafka API", ErrMalformed, out.key, out.version)
	}
	if api, ok := apis[out.key]; !ok || out.version < api.min || out.version > api.max {
		out.unsupported = true
		return out, nil
	}
	req := kmsg.RequestForKey(out.key)
	req.SetVersion(out.version)
	if req.IsFlexible() {
		skipTags(&b)
	}
	if !b.Ok() {
		return out, fmt.Errorf("%w: bad tagged fields in %s v%d header", ErrMalformed, kmsg.NameForKey(out.key), out.version)
	}
	if err := req.ReadFrom(b.Src); err != nil {
		return out, fmt.Errorf("%w: %s v%d: %v", ErrMalformed, kmsg.NameForKey(out.key), out.version, err)
	}
	out.req = req
	return out, nil
}

// skipTags skips a tagged-field section.
func skipTags(b *kbin.Reader) {
	for n := b.Uvarint(); n > 0 && b.Ok(); n-- {
		b.Uvarint() // tag
		b.Span(int(b.Uvarint()))
	}
}

// appendResponse appends a framed response to dst.
func appendResponse(dst []byte, correlation int32, resp kmsg.Response) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlation))
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}
