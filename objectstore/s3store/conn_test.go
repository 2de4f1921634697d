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

// net/http's request body copy reaches bodyConn.ReadFrom: an 8 MiB
// plain-HTTP PUT takes a few large writes (through its own 32 KiB copy
// buffer it takes 256). A failed dial is returned as it is.
func TestTransportWritesBodyInLargeChunks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	defer srv.Close()
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
	mu.Lock()
	defer mu.Unlock()
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
