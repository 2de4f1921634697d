package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveHTTP runs newHTTPServer(h, l) on a free port until the test ends.
func serveHTTP(t *testing.T, h http.Handler, l httpLimits) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, l.withDefaults())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return lis.Addr().String()
}

// A client that asks for a large answer and never reads it is
// disconnected after the write timeout: the handler's write fails and
// what it held is freed (without the timeout it blocks as long as the
// client stays).
func TestHTTPServerDropsClientsThatDoNotRead(t *testing.T) {
	failed := make(chan error, 1)
	chunk := make([]byte, 64<<10)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for range 1024 { // 64 MiB, far more than the socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				failed <- err
				return
			}
		}
		failed <- nil
	})
	addr := serveHTTP(t, h, httpLimits{WriteTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("64 MiB written to a client that reads nothing")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the answer to a client that never reads is still being written after 20 s: no write timeout")
	}
}

// An idle keep-alive connection is closed after the idle timeout, and
// headers sent too slowly end the connection.
func TestHTTPServerClosesIdleAndSlowConnections(t *testing.T) {
	addr := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		httpLimits{IdleTimeout: 200 * time.Millisecond, ReadHeaderTimeout: 200 * time.Millisecond})
	for _, tc := range []struct{ name, send string }{
		{"idle after one request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"headers never finished", "GET / HTTP/1.1\r\nHost: x\r\n"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, tc.send); err != nil {
			t.Fatal(err)
		}
		// Read until the server closes; a bound far above the timeouts
		// catches a server that never does.
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = io.ReadAll(bufio.NewReader(conn))
		conn.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: the server kept the connection open", tc.name)
		}
	}
}

func TestConsoleURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:7071": "http://127.0.0.1:7071/console/",
		"[::]:7071":      "http://127.0.0.1:7071/console/",
		"0.0.0.0:80":     "http://127.0.0.1:80/console/",
		"[::1]:7071":     "http://[::1]:7071/console/",
	} {
		if got := consoleURL(addr); got != want {
			t.Errorf("consoleURL(%q) = %q, want %q", addr, got, want)
		}
	}
	var out strings.Builder
	printConsoleURL(nil, &out, false)("127.0.0.1:7070", "127.0.0.1:7071")
	if out.String() != "console: http://127.0.0.1:7071/console/\n" {
		t.Errorf("printed %q", out.String())
	}
	out.Reset()
	printConsoleURL(nil, &out, true)("127.0.0.1:7070", "127.0.0.1:7071")
	if out.String() != "console: https://127.0.0.1:7071/console/\n" {
		t.Errorf("with TLS: printed %q", out.String())
	}
}
