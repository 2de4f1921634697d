package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// httpLimits bound the HTTP listener (/metrics, /healthz, /readyz, the
// console): settings server.http_*.
type httpLimits struct {
	// ReadHeaderTimeout: time to send a request's headers.
	ReadHeaderTimeout time.Duration
	// WriteTimeout: time to write one answer; a client that does not read
	// is disconnected then, and what its answer held is freed.
	WriteTimeout time.Duration
	// IdleTimeout: how long an idle keep-alive connection stays open.
	IdleTimeout time.Duration
	// MaxInFlight: console API requests, and /metrics scrapes, served at
	// once (each); past it the next is refused, not queued.
	MaxInFlight int
}

// defaultHTTPLimits are the settings' defaults. WriteTimeout stays above
// pprof's usual 30 s CPU profile.
var defaultHTTPLimits = httpLimits{ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second, MaxInFlight: 16}

// withDefaults fills the zero fields from defaultHTTPLimits.
func (l httpLimits) withDefaults() httpLimits {
	d := defaultHTTPLimits
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = d.MaxInFlight
	}
	return l
}

// newHTTPServer is the HTTP listener's server: no request may hold a
// connection (and the memory of its answer) past these bounds; headers
// are at most 64 KiB (every request here is a GET).
func newHTTPServer(h http.Handler, l httpLimits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout, WriteTimeout: l.WriteTimeout,
		IdleTimeout: l.IdleTimeout, MaxHeaderBytes: 64 << 10}
}

// printConsoleURL wraps ready (optional) to print the console's address
// once serving: "console: http://127.0.0.1:7071/console/" (an unspecified
// host as 127.0.0.1); https:// when the listener serves TLS.
func printConsoleURL(ready func(grpcAddr, metricsAddr string), w io.Writer, https bool) func(grpcAddr, metricsAddr string) {
	return func(grpcAddr, metricsAddr string) {
		if ready != nil {
			ready(grpcAddr, metricsAddr)
		}
		u := consoleURL(metricsAddr)
		if https {
			u = "https" + strings.TrimPrefix(u, "http")
		}
		fmt.Fprintf(w, "console: %s\n", u)
	}
}

// consoleURL is the console's URL on the HTTP listener bound at addr.
func consoleURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/console/"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/console/"
}
