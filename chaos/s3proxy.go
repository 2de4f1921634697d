package chaos

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// S3Mode is what the S3 proxy does to requests; the zero value forwards
// them.
type S3Mode struct {
	// Outage closes every connection without an answer.
	Outage bool
	// SlowDown answers 503 SlowDown without forwarding.
	SlowDown bool
	// Latency delays every request before forwarding it.
	Latency time.Duration
	// ErrorAfterWrite forwards writes (PUT, POST, DELETE) and answers 500
	// InternalError whatever the server said: applied, answered an error.
	ErrorAfterWrite bool
	// Link delays each request (Link).
	Link Link
}

// S3Proxy is a reverse proxy in front of the S3 server, whose mode the
// fault schedule changes.
type S3Proxy struct {
	ln     net.Listener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	mu     sync.Mutex // guards mode
	mode   S3Mode
	served atomic.Int64
	// Applied counts the writes forwarded and answered with an error.
	Applied atomic.Int64
}

// StartS3Proxy listens on a free loopback port and forwards to target.
func StartS3Proxy(target string, log *slog.Logger) (*S3Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("chaos: S3 endpoint %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: S3 proxy: %w", err)
	}
	p := &S3Proxy{ln: ln, rp: httputil.NewSingleHostReverseProxy(u)}
	// The request keeps its Host header: the client signed it (SigV4).
	p.rp.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Listen adds a listener on host (an address of the driver's own) and
// returns its endpoint URL.
func (p *S3Proxy) Listen(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("chaos: S3 proxy: %w", err)
	}
	go func() { _ = p.srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// URL is the proxy's endpoint.
func (p *S3Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Set changes the mode.
func (p *S3Proxy) Set(m S3Mode) {
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
}

// Served is the number of requests the proxy has handled.
func (p *S3Proxy) Served() int64 { return p.served.Load() }

func (p *S3Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.served.Add(1)
	p.mu.Lock()
	m := p.mode
	p.mu.Unlock()
	if m.Latency > 0 {
		select {
		case <-time.After(m.Latency):
		case <-r.Context().Done():
			return
		}
	}
	m.Link.wait(r.Context())
	write := r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodDelete
	switch {
	case m.Outage:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case m.SlowDown:
		s3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case m.ErrorAfterWrite && write:
		rec := &discard{header: http.Header{}}
		p.rp.ServeHTTP(rec, r)
		p.Applied.Add(1)
		s3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	default:
		p.rp.ServeHTTP(w, r)
	}
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

// discard is a ResponseWriter that drops the server's answer.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return io.Discard.Write(b) }
func (d *discard) WriteHeader(int)             {}

// Close stops the proxy.
func (p *S3Proxy) Close() { _ = p.srv.Close() }
