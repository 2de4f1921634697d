package kafka

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fuzz targets of the decoders that read what clients send: the frame's
// size prefix and the request (header and body). Seeds are in
// testdata/fuzz (one valid request per API key served, at its lowest and
// highest version, and a few broken frames); run with
//
//	go test -run '^$' -fuzz FuzzParseRequest -fuzztime 30s ./kafka/

// seedFrames are one request per served key and version bound.
func seedFrames() [][]byte {
	var out [][]byte
	for key, a := range apis {
		for _, v := range []int16{a.min, a.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			out = append(out, encodeFrame(req, 1, "seed"))
		}
	}
	return out
}

// encodeFrame is a request as a client frames it, without the size prefix.
func encodeFrame(req kmsg.Request, correlation int32, clientID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlation))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		r, err := parseRequest(frame)
		if err != nil || r.unsupported {
			return
		}
		// A request that decodes encodes again, and that decodes to the
		// same encoding.
		again := encodeFrame(r.req, r.correlation, r.clientID)
		r2, err := parseRequest(again)
		if err != nil {
			t.Fatalf("re-encoded %s v%d does not decode: %v", kmsg.NameForKey(r.key), r.version, err)
		}
		if third := encodeFrame(r2.req, r2.correlation, r2.clientID); !bytes.Equal(third, again) {
			t.Fatalf("%s v%d does not round-trip", kmsg.NameForKey(r.key), r.version)
		}
	})
}

func FuzzReadFrameSize(f *testing.F) {
	f.Add([]byte{0, 0, 0, 8}, 1024)
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff}, 1024)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 1024)
	f.Add([]byte{0, 0}, 1024)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		n, err := readFrameSize(bytes.NewReader(b), max)
		if err == nil && (n < 8 || n > max) {
			t.Fatalf("size %d accepted with max %d", n, max)
		}
	})
}

// TestSeedsDecode: every seed request decodes (the handlers' table and
// kmsg agree on versions).
func TestSeedsDecode(t *testing.T) {
	for _, s := range seedFrames() {
		r, err := parseRequest(s)
		if err != nil || r.req == nil {
			t.Errorf("seed %s v%d: %v", kmsg.NameForKey(r.key), r.version, err)
		}
	}
}
