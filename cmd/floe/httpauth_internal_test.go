package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/access/accesstest"
	"github.com/floe-broker/floe/auth"
)

func TestHTTPPart(t *testing.T) {
	for path, want := range map[string]string{
		"/healthz": "probe", "/readyz": "probe", "/metrics": "metrics", "/": "console", "/console/": "console",
		"/console/api/topics": "console", "/iceberg/v1/config": "iceberg", "/debug/pprof/heap": "pprof",
		"/metricsx": "", "/healthz/x": "", "/other": "", "/icebergx": "",
	} {
		if got := httpPart(path); got != want {
			t.Errorf("httpPart(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestHTTPGate: probes always open, the opened parts open, everything else
// 401 without a (valid) token, 403 without DESCRIBE on the cluster.
func TestHTTPGate(t *testing.T) {
	st := accesstest.NewStore()
	st.Allow("User:ops", auth.OpDescribe, auth.Cluster())
	v := accesstest.NewVerifier()
	v.Add("ops", "ops")
	v.Add("bob", "bob")
	v.Fail("expired", fmt.Errorf("%w: token expired", auth.ErrUnauthenticated))
	set := defaultAuthSettings()
	set.Enabled, set.HTTPOpen = true, "metrics"
	gate, err := newHTTPGate(set)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := set.accessConfig()
	mux := http.NewServeMux()
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/console/", "/iceberg/"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("data")) })
	}
	h := gate.wrap(mux)
	get := func(path, token string) int {
		r := httptest.NewRequest("GET", path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 && w.Body.String() == "data" {
			t.Errorf("%s: refused with the data", path)
		}
		return w.Code
	}
	if c := get("/console/", "ops"); c != http.StatusServiceUnavailable {
		t.Fatalf("before set: %d, want 503", c)
	}
	g, err := access.NewGuard(cfg, st, access.GuardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gate.set(g, v)
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/healthz", "", 200}, {"/readyz", "", 200}, {"/metrics", "", 200},
		{"/console/", "", 401}, {"/iceberg/v1/config", "", 401}, {"/console/", "expired", 401}, {"/console/", "nope", 401},
		{"/console/", "bob", 403}, {"/iceberg/v1/config", "bob", 403},
		{"/console/", "ops", 200}, {"/iceberg/v1/config", "ops", 200},
	} {
		if got := get(tc.path, tc.token); got != tc.want {
			t.Errorf("GET %s as %q: %d, want %d", tc.path, tc.token, got, tc.want)
		}
	}
	off, _ := newHTTPGate(defaultAuthSettings())
	w := httptest.NewRecorder()
	off.wrap(mux).ServeHTTP(w, httptest.NewRequest("GET", "/console/", nil))
	if w.Code != 200 {
		t.Fatalf("auth off: %d", w.Code)
	}
}

func TestAuthSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*AuthSettings)
		bad    bool
	}{
		{func(*AuthSettings) {}, false},
		{func(a *AuthSettings) { a.Superusers = "User:a, User:b" }, false},
		{func(a *AuthSettings) { a.Superusers = "admin" }, true},
		{func(a *AuthSettings) { a.CertPrincipal = "subject" }, true},
		{func(a *AuthSettings) { a.HTTPOpen = "metrics,everything" }, true},
		{func(a *AuthSettings) { a.HTTPOpen = "metrics, console" }, false},
	} {
		a := defaultAuthSettings()
		tc.mutate(&a)
		if err := a.validate(); (err != nil) != tc.bad {
			t.Errorf("%+v: %v", a, err)
		}
	}
}
