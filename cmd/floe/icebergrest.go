package main

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/rest"
)

// icebergRESTPath is where `floe compactor` and `floe dev` serve the
// read-only Iceberg REST catalog (iceberg/rest) on their HTTP listener:
// the catalog URI an engine is given is http://HOST:PORT/iceberg.
const icebergRESTPath = "/iceberg"

// icebergREST returns the REST catalog over w's catalog, with the limits
// of s; tableConfig is what every loaded table tells an engine's FileIO
// (no secrets).
func icebergREST(w *iceberg.Writer, s IcebergSettings, tableConfig map[string]string, log *slog.Logger) (http.Handler, error) {
	return rest.New(w.Catalog(), s.restConfig(tableConfig, log))
}

// restConfig is the REST catalog's configuration of the settings.
func (s IcebergSettings) restConfig(tableConfig map[string]string, log *slog.Logger) rest.Config {
	cfg := rest.DefaultConfig()
	cfg.Prefix, cfg.TableConfig, cfg.Logger = icebergRESTPath, tableConfig, log
	cfg.MaxRequestBytes, cfg.MaxPathBytes = s.RESTMaxRequestBytes, s.RESTMaxPathBytes
	cfg.MaxRequestName, cfg.MaxPathName = "iceberg.rest_max_request_bytes", "iceberg.rest_max_path_bytes"
	return cfg
}

// s3TableConfig is the S3 settings an engine reading the warehouse needs
// besides its keys: the endpoint, path-style addressing, the region.
func s3TableConfig(endpoint, region string, pathStyle bool) map[string]string {
	out := map[string]string{}
	if endpoint != "" {
		out["s3.endpoint"] = endpoint
	}
	if region != "" {
		out["client.region"] = region
	}
	if pathStyle {
		out["s3.path-style-access"] = strconv.FormatBool(pathStyle)
	}
	return out
}

// lateHandler serves a handler set once it exists (floe dev's REST
// catalog opens with its compactor, after the listener); before and
// after it, 503 with the REST spec's error body.
type lateHandler struct {
	h atomic.Pointer[http.Handler]
}

func (l *lateHandler) set(h http.Handler) {
	if h == nil {
		l.h.Store(nil)
		return
	}
	l.h.Store(&h)
}

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"error":{"message":"the Iceberg catalog is not open (starting, or -iceberg=false)","type":"ServiceUnavailableException","code":503}}` + "\n"))
}
