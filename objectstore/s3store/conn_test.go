package s3store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floe-broker/floe/objectstore"
)

// countingConn records what is written to it.
type countingConn struct {
	net.Conn
	writes int
	got    bytes.Buffer
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes++
	return c.got.Write(p)
}

// A body is written whole, in bodyCopyBytes chunks, whatever wraps it
// (net/http hands over an io.LimitedReader); at zero bytes nothing is
// written.
func TestBodyConnWritesLargeChunks(t *testing.T) {
	for _, size := range []int{0, 1, bodyCopyBytes - 1, bodyCopyBytes, bodyCopyBytes + 1, 8 << 20} {
		data := make([]byte, size)
		rand.New(rand.NewSource(int64(size))).Read(data)
		cc := &countingConn{}
		n, err := bodyConn{cc}.ReadFrom(io.LimitReader(struct{ io.Reader }{bytes.NewReader(data)}, int64(size)))
		if err != nil || n != int64(size) || !bytes.Equal(cc.got.Bytes(), data) {
			t.Fatalf("size %d: wrote %d (%v), bytes equal %v", size, n, err, bytes.Equal(cc.got.Bytes(), data))
		}
		if want := (size + bodyCopyBytes - 1) / bodyCopyBytes; cc.writes != want {
			t.Fatalf("size %d: %d writes, want %d", size, cc.writes, want)
		}
	}
}

// A *bytes.Reader within net/http's limit is written as it lies: one
// write, no copy; one longer than the limit is copied up to the limit
// and no further.
func TestBodyConnWritesBytesReaderWhole(t *testing.T) {
	for _, size := range []int{0, 1, bodyCopyBytes + 1, 8 << 20} {
		data := make([]byte, size)
		rand.New(rand.NewSource(int64(size))).Read(data)
		cc := &countingConn{}
		lr := io.LimitReader(bytes.NewReader(data), int64(size)).(*io.LimitedReader)
		n, err := bodyConn{cc}.ReadFrom(lr)
		if err != nil || n != int64(size) || lr.N != 0 || !bytes.Equal(cc.got.Bytes(), data) {
			t.Fatalf("size %d: wrote %d (%v), limit left %d, bytes equal %v", size, n, err, lr.N, bytes.Equal(cc.got.Bytes(), data))
		}
		if want := min(size, 1); cc.writes != want {
			t.Fatalf("size %d: %d writes, want %d", size, cc.writes, want)
		}
	}
	data := make([]byte, 3*bodyCopyBytes)
	cc := &countingConn{}
	n, err := bodyConn{cc}.ReadFrom(io.LimitReader(bytes.NewReader(data), bodyCopyBytes+5))
	if err != nil || n != bodyCopyBytes+5 || cc.got.Len() != bodyCopyBytes+5 {
		t.Fatalf("reader past the limit: wrote %d (%v), %d bytes", n, err, cc.got.Len())
	}
}

// bodyClient sends a Put's own bytes in place of the SDK's wrapped body
// (which net/http could only copy through a buffer), so that an 8 MiB
// PUT's body is one write; a request whose length is not the Put's, or
// that encodes its body, or a context without a Put's bytes, is sent as
// it came. The server receives the same bytes either way.
func TestBodyClientSendsPutBytesWhole(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(b)
	}))
	defer srv.Close()
	dial, conns := countingDials()
	tr := &http.Transport{DialContext: dial}
	defer tr.CloseIdleConnections()
	hc := bodyClient{&http.Client{Transport: tr}}
	const size = 8 << 20
	data := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(data)
	other := bytes.Repeat([]byte{'x'}, size)
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		length   int64
		encoding string
		want     []byte
		whole    bool
	}{
		{"put", withPutBody(t.Context(), data), size, "", data, true},
		{"no put bytes", t.Context(), size, "", other, false},
		{"other length", withPutBody(t.Context(), data[:size-1]), size, "", other, false},
		{"encoded", withPutBody(t.Context(), data), size, "aws-chunked", other, false},
	} {
		// The SDK's wrapper hides the reader: net/http must copy it.
		req, err := http.NewRequestWithContext(tc.ctx, http.MethodPut, srv.URL, struct{ io.Reader }{bytes.NewReader(other)})
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = tc.length
		if tc.encoding != "" {
			req.Header.Set("Content-Encoding", tc.encoding)
		}
		before := int64(0)
		if c := conns(); len(c) > 0 {
			before = c[0].writes.Load()
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if b, _ := got.Load().([]byte); !bytes.Equal(b, tc.want) {
			t.Fatalf("%s: the server received %d bytes, not the ones expected", tc.name, len(b))
		}
		c := conns()
		if len(c) != 1 {
			t.Fatalf("%s: %d connections dialed", tc.name, len(c))
		}
		writes := c[0].writes.Load() - before
		if whole := writes <= 2; whole != tc.whole { // the header, then the body
			t.Fatalf("%s: %d writes for an %d-byte body", tc.name, writes, size)
		}
	}
}

// net/http's request body copy reaches bodyConn.ReadFrom: an 8 MiB
// plain-HTTP PUT takes a few large writes (through its own 32 KiB copy
// buffer it takes 256). A failed dial is returned as it is.
func TestTransportWritesBodyInLargeChunks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	defer srv.Close()
	dial, dialed := countingDials()
	hc := &http.Client{Transport: &http.Transport{DialContext: dial}}
	defer hc.CloseIdleConnections()
	const size = 8 << 20
	req, err := http.NewRequest(http.MethodPut, srv.URL, bytes.NewReader(make([]byte, size)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != fmt.Sprint(size) {
		t.Fatalf("server read %s bytes, want %d", body, size)
	}
	conns := dialed()
	if len(conns) != 1 {
		t.Fatalf("%d connections dialed", len(conns))
	}
	if w := conns[0].writes.Load(); w > 2*size/bodyCopyBytes {
		t.Fatalf("%d writes for an %d-byte body: the body copy did not reach bodyConn.ReadFrom", w, size)
	}
	if _, err := dialBodyConns(nil)(context.Background(), "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
}

// writeCounter counts the writes made to its connection.
type writeCounter struct {
	net.Conn
	writes atomic.Int64
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// Through the SDK: an 8 MiB Put to a plain-HTTP endpoint reaches the
// socket as the file's own bytes, the body in one write (signed, its
// payload hashed from the SDK's reader, and unsigned), and the server
// receives exactly them.
func TestPutBodyWrittenWhole(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(b)
		w.Header().Set("ETag", `"x"`)
	}))
	defer srv.Close()
	const size = 8 << 20
	data := make([]byte, size)
	rand.New(rand.NewSource(2)).Read(data)
	for _, unsigned := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Endpoint, cfg.Region, cfg.Bucket, cfg.PathStyle = srv.URL, "us-east-1", "b", true
		cfg.AccessKey, cfg.SecretKey, cfg.UnsignedPayload = "k", "s", unsigned
		s, err := New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		dial, dialed := countingDials()
		s.transport.DialContext = dial
		if err := s.Put(t.Context(), "k", data, objectstore.PutOptions{}); err != nil {
			t.Fatalf("unsigned=%v: put: %v", unsigned, err)
		}
		if b, _ := got.Load().([]byte); !bytes.Equal(b, data) {
			t.Fatalf("unsigned=%v: the server received %d bytes, not the file's", unsigned, len(b))
		}
		conns := dialed()
		if len(conns) != 1 {
			t.Fatalf("unsigned=%v: %d connections dialed", unsigned, len(conns))
		}
		if w := conns[0].writes.Load(); w > 2 {
			t.Fatalf("unsigned=%v: %d writes: the body was copied", unsigned, w)
		}
		s.Close()
	}
}

// countingDials returns a dialer of bodyConns whose connections count
// their writes, and the connections it dialed.
func countingDials() (func(ctx context.Context, network, addr string) (net.Conn, error), func() []*writeCounter) {
	var mu sync.Mutex
	var conns []*writeCounter
	dial := dialBodyConns(func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		wc := &writeCounter{Conn: c}
		mu.Lock()
		conns = append(conns, wc)
		mu.Unlock()
		return wc, nil
	})
	return dial, func() []*writeCounter {
		mu.Lock()
		defer mu.Unlock()
		return append([]*writeCounter(nil), conns...)
	}
}
