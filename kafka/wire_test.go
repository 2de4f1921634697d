package kafka_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/kafka"
)

// rawConn is a hand-driven Kafka connection.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// frame builds a request frame: header v1 (client id), then body.
func frame(key, version int16, correlation int32, clientID string, body []byte, flexible bool) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(correlation))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if flexible {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// send writes a kmsg request at its version.
func (c *rawConn) send(req kmsg.Request, correlation int32) {
	c.t.Helper()
	body := req.AppendTo(nil)
	if _, err := c.nc.Write(frame(req.Key(), req.GetVersion(), correlation, "raw-client", body, req.IsFlexible())); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads one response frame and returns its correlation id and the
// rest.
func (c *rawConn) recv() (int32, []byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(c.br, sz[:]); err != nil {
		return 0, nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c.br, b); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:], nil
}

// TestApiVersionsUnsupported: an ApiVersions of a version not served gets a
// v0 answer with UNSUPPORTED_VERSION and the versions served, and the
// connection stays open.
func TestApiVersionsUnsupported(t *testing.T) {
	b := startBroker(t, nil)
	c := dialRaw(t, b.addr)
	// Version 99, with a body this server cannot know.
	if _, err := c.nc.Write(frame(18, 99, 7, "future-client", []byte{1, 2, 3, 4, 5}, true)); err != nil {
		t.Fatal(err)
	}
	corr, body, err := c.recv()
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("v0 answer does not decode: %v", err)
	}
	if corr != 7 || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("correlation %d, error %d: want 7 and UNSUPPORTED_VERSION", corr, resp.ErrorCode)
	}
	var av *kmsg.ApiVersionsResponseApiKey
	for i := range resp.ApiKeys {
		if resp.ApiKeys[i].ApiKey == 18 {
			av = &resp.ApiKeys[i]
		}
	}
	if av == nil || av.MinVersion != 0 || av.MaxVersion != 3 {
		t.Fatalf("ApiVersions not listed as v0-v3: %+v", resp.ApiKeys)
	}
	// The connection still serves: a v3 request now.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	c.send(req, 8)
	corr, body, err = c.recv()
	if err != nil {
		t.Fatalf("connection closed after an unsupported version: %v", err)
	}
	ok := kmsg.NewPtrApiVersionsResponse()
	ok.SetVersion(3)
	if err := ok.ReadFrom(body); err != nil || corr != 8 || ok.ErrorCode != 0 || len(ok.ApiKeys) < 20 {
		t.Fatalf("v3 answer: corr %d err %v code %d keys %d", corr, err, ok.ErrorCode, len(ok.ApiKeys))
	}
}

// TestFrameTooLarge: a frame over kafka.max_frame_bytes closes its
// connection (from its size prefix: the body is never sent) with a log
// line naming the client; another connection is unaffected.
func TestFrameTooLarge(t *testing.T) {
	b := startBroker(t, func(c *kafka.Config) { c.MaxFrameBytes = 4096 })
	good := dialRaw(t, b.addr)
	bad := dialRaw(t, b.addr)
	// A valid first request names the client.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(1)
	bad.send(req, 1)
	if _, _, err := bad.recv(); err != nil {
		t.Fatal(err)
	}
	// 1 GiB announced, 4 bytes sent.
	if _, err := bad.nc.Write([]byte{0x40, 0, 0, 0, 0, 18, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bad.recv(); err == nil {
		t.Fatal("the connection answered after an oversized frame")
	}
	waitFor(t, "the log line", func() bool {
		l := logOf(t)
		return strings.Contains(l, "kafka.max_frame_bytes") && strings.Contains(l, "raw-client@")
	})
	good.send(req, 2)
	if corr, _, err := good.recv(); err != nil || corr != 2 {
		t.Fatalf("the other connection: corr %d, %v", corr, err)
	}
}

// TestMalformedFrame: frames that do not decode close only their own
// connection, naming the client.
func TestMalformedFrame(t *testing.T) {
	b := startBroker(t, nil)
	good := dialRaw(t, b.addr)
	for i, f := range [][]byte{
		frame(3, 12, 1, "bad-metadata", []byte{0xff, 0xff, 0xff}, true), // a truncated Metadata
		frame(999, 0, 1, "bad-key", nil, false),                         // an unknown API
		frame(0, -1, 1, "neg-version", []byte{0, 0}, false),             // a negative version
		{0, 0, 0, 9, 0, 18, 0, 0, 0, 0, 0, 1, 0x7f},                     // a client id past the frame
	} {
		bad := dialRaw(t, b.addr)
		if _, err := bad.nc.Write(f); err != nil {
			t.Fatal(err)
		}
		if _, _, err := bad.recv(); err == nil {
			t.Fatalf("frame %d: the connection answered", i)
		}
	}
	waitFor(t, "log lines naming the clients", func() bool {
		l := logOf(t)
		return strings.Contains(l, "bad-metadata@") && strings.Contains(l, "bad-key@") && strings.Contains(l, "neg-version@") && strings.Contains(l, "bad request")
	})
	req := kmsg.NewPtrApiVersionsRequest()
	good.send(req, 5)
	if corr, _, err := good.recv(); err != nil || corr != 5 {
		t.Fatalf("the good connection: corr %d, %v", corr, err)
	}
}

// TestConnectionLimit: past kafka.max_connections a new connection is
// closed at once; once one closes, another is served.
func TestConnectionLimit(t *testing.T) {
	b := startBroker(t, func(c *kafka.Config) { c.MaxConnections = 2 })
	req := kmsg.NewPtrApiVersionsRequest()
	c1, c2 := dialRaw(t, b.addr), dialRaw(t, b.addr)
	for _, c := range []*rawConn{c1, c2} {
		c.send(req, 1)
		if _, _, err := c.recv(); err != nil {
			t.Fatal(err)
		}
	}
	c3 := dialRaw(t, b.addr)
	c3.send(req, 1)
	if _, _, err := c3.recv(); err == nil {
		t.Fatal("a third connection was served past the limit of 2")
	}
	c1.nc.Close()
	waitFor(t, "the first connection to close", func() bool { return b.srv.Connections() < 2 })
	c4 := dialRaw(t, b.addr)
	c4.send(req, 4)
	if corr, _, err := c4.recv(); err != nil || corr != 4 {
		t.Fatalf("after a close: corr %d, %v", corr, err)
	}
}

// TestPipelinedInOrder: many requests sent at once, more than the
// in-flight bound, are all answered in order.
func TestPipelinedInOrder(t *testing.T) {
	b := startBroker(t, func(c *kafka.Config) { c.MaxInFlight = 2 })
	c := dialRaw(t, b.addr)
	var all []byte
	for i := range 50 {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(int16(i % 13))
		all = append(all, frame(req.Key(), req.GetVersion(), int32(i), "pipe", req.AppendTo(nil), req.IsFlexible())...)
	}
	go func() { _, _ = c.nc.Write(all) }()
	for i := range 50 {
		corr, _, err := c.recv()
		if err != nil || corr != int32(i) {
			t.Fatalf("answer %d: correlation %d, %v", i, corr, err)
		}
	}
}
