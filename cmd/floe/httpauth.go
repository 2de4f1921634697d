package main

import (
	"crypto/x509"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/auth"
)

// httpPart names the part of the HTTP listener a path belongs to: "probe"
// (/healthz, /readyz: always open), one of httpParts, or "" (anything
// else, closed with auth on).
func httpPart(path string) string {
	switch {
	case path == "/healthz" || path == "/readyz":
		return "probe"
	case path == "/metrics":
		return "metrics"
	case path == "/" || path == "/console" || strings.HasPrefix(path, "/console/"):
		return "console"
	case path == icebergRESTPath || strings.HasPrefix(path, icebergRESTPath+"/"):
		return "iceberg"
	case strings.HasPrefix(path, "/debug/pprof/"):
		return "pprof"
	}
	return ""
}

// httpGate enforces auth on the HTTP listener (metrics, console, REST
// catalog, pprof): with auth on, a request outside the probes and the
// parts auth.http_open opens needs a bearer token (or a verified client
// certificate) naming a principal with DESCRIBE on the cluster: else 401
// (no or a bad credential) or 403; 503 before set, or while the token
// store does not answer.
type httpGate struct {
	enabled bool
	open    map[string]bool
	rule    access.CertRule
	late    atomic.Pointer[gateAuth]
}

type gateAuth struct {
	g *access.Guard
	v access.TokenVerifier
}

// newHTTPGate builds the gate of the settings a (validated).
func newHTTPGate(a AuthSettings) (*httpGate, error) {
	cfg, err := a.accessConfig()
	if err != nil {
		return nil, err
	}
	open, _ := parseHTTPOpen(a.HTTPOpen)
	return &httpGate{enabled: cfg.Enabled, open: open, rule: cfg.CertPrincipal}, nil
}

// set gives the gate its guard and token verifier.
func (h *httpGate) set(g *access.Guard, v access.TokenVerifier) { h.late.Store(&gateAuth{g: g, v: v}) }

// wrap returns next behind the gate.
func (h *httpGate) wrap(next http.Handler) http.Handler {
	if h == nil || !h.enabled {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		part := httpPart(r.URL.Path)
		if part == "probe" || h.open[part] {
			next.ServeHTTP(w, r)
			return
		}
		la := h.late.Load()
		if la == nil {
			http.Error(w, "starting: authentication is not ready yet", http.StatusServiceUnavailable)
			return
		}
		var cert *x509.Certificate
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
			cert = r.TLS.VerifiedChains[0][0]
		}
		p, err := access.Authenticate(r.Context(), la.v, h.rule, r.Header.Get("Authorization"), cert)
		switch {
		case access.IsUnauthenticated(err):
			w.Header().Set("WWW-Authenticate", `Bearer realm="floe"`)
			http.Error(w, "unauthenticated: "+err.Error(), http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, "authentication unavailable", http.StatusServiceUnavailable)
			return
		}
		if !la.g.Allowed("http", p, auth.OpDescribe, auth.Cluster()) {
			http.Error(w, p.String()+" may not DESCRIBE the cluster", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r.WithContext(access.WithPrincipal(r.Context(), p)))
	})
}
