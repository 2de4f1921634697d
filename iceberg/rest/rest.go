// Package rest serves floe's Iceberg tables through a read-only Iceberg
// REST catalog (the Apache Iceberg REST catalog OpenAPI specification):
// engines given the catalog URI http://HOST:PORT/iceberg list the
// namespaces and tables and load a table's metadata (its metadata
// location and metadata JSON), then read the files from the warehouse
// themselves. No PostgreSQL credentials leave floe.
//
// It answers GET /v1/config, the namespaces (list, load, exists), the
// tables (list, load, exists) and an empty list of views; every write
// (create, update, rename, drop, commit) is refused with 405 and the
// spec's error body. Unknown namespaces and tables are 404 with
// NoSuchNamespaceException / NoSuchTableException bodies; malformed paths
// are 400; request bodies and paths are bounded.
//
// One file per endpoint family: config.go, namespaces.go, tables.go;
// errors.go writes the spec's ErrorModel.
package rest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Catalog is what the handler reads: iceberg-go's catalog interface, of
// which floe's SQL catalog (iceberg.Writer.Catalog) is one.
type Catalog interface {
	ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error)
	CheckNamespaceExists(ctx context.Context, namespace table.Identifier) (bool, error)
	LoadNamespaceProperties(ctx context.Context, namespace table.Identifier) (icego.Properties, error)
	ListTables(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error]
	LoadTable(ctx context.Context, identifier table.Identifier) (*table.Table, error)
}

// Config configures the handler.
type Config struct {
	// Prefix is the path the catalog is mounted at: the catalog URI an
	// engine is given is http://HOST:PORT + Prefix.
	Prefix string
	// MaxRequestBytes bounds a request's body (none is read: every
	// endpoint is a GET or HEAD; a larger body is refused with 413).
	MaxRequestBytes int64
	// MaxPathBytes bounds the request path and query (400 above it).
	MaxPathBytes int
	// MaxRequestName and MaxPathName are what the 413 and 400 answers
	// call the two bounds (the settings that set them; empty: the
	// fields' names here).
	MaxRequestName, MaxPathName string
	// TableConfig is sent with every loaded table (the spec's
	// LoadTableResult.config): settings an engine's FileIO needs, such as
	// s3.endpoint and s3.path-style-access. Never secrets.
	TableConfig map[string]string
	// Logger receives failures of the catalog (500s).
	Logger *slog.Logger
}

// DefaultConfig mounts the catalog at /iceberg with 1 MiB bodies and
// 8 KiB paths.
func DefaultConfig() Config {
	return Config{Prefix: "/iceberg", MaxRequestBytes: 1 << 20, MaxPathBytes: 8 << 10}
}

// MinPathBytes is the least Config.MaxPathBytes: room for the longest
// fixed path (the prefix and /v1/namespaces/NS/tables/TABLE of short names).
const MinPathBytes = 64

// ErrInvalidConfig is returned by New for a bad Config.
var ErrInvalidConfig = errors.New("rest: invalid config")

func (c Config) validate() error {
	switch {
	case !strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/"):
		return fmt.Errorf("%w: Prefix %q must start with / and not end with one", ErrInvalidConfig, c.Prefix)
	case c.MaxRequestBytes < 0:
		return fmt.Errorf("%w: MaxRequestBytes %d must not be negative", ErrInvalidConfig, c.MaxRequestBytes)
	case c.MaxPathBytes < MinPathBytes:
		return fmt.Errorf("%w: MaxPathBytes %d must be at least %d", ErrInvalidConfig, c.MaxPathBytes, MinPathBytes)
	}
	return nil
}

// Handler is the REST catalog's http.Handler; mount it at Config.Prefix
// + "/".
type Handler struct {
	cat Catalog
	cfg Config
	log *slog.Logger
}

// New returns a handler over cat.
func New(cat Catalog, cfg Config) (*Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{cat: cat, cfg: cfg, log: log}, nil
}

// route is a parsed request path: /v1/config, /v1/namespaces[/NS[/tables[/TABLE]]]
// or /v1/namespaces/NS/views.
type route struct {
	kind      string   // "config", "namespaces", "namespace", "tables", "table", "views"
	namespace []string // levels, from the %1F-separated segment
	table     string
}

// errBadPath is a path that names no endpoint.
var errBadPath = errors.New("no such endpoint")

// parseRoute splits the escaped path below the prefix into a route.
// Optional {prefix} segments of the spec are not used: the config names
// none.
func parseRoute(escaped string) (route, error) {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			return route{}, fmt.Errorf("path segment %q: %w", s, err)
		}
		if u == "" {
			return route{}, fmt.Errorf("%w: empty path segment", errBadPath)
		}
		segs[i] = u
	}
	if len(segs) < 2 || segs[0] != "v1" {
		return route{}, errBadPath
	}
	switch {
	case len(segs) == 2 && segs[1] == "config":
		return route{kind: "config"}, nil
	case segs[1] != "namespaces":
		return route{}, errBadPath
	case len(segs) == 2:
		return route{kind: "namespaces"}, nil
	}
	ns, err := parseNamespace(segs[2])
	if err != nil {
		return route{}, err
	}
	switch {
	case len(segs) == 3:
		return route{kind: "namespace", namespace: ns}, nil
	case len(segs) == 4 && segs[3] == "tables":
		return route{kind: "tables", namespace: ns}, nil
	case len(segs) == 4 && segs[3] == "views":
		return route{kind: "views", namespace: ns}, nil
	case len(segs) == 5 && segs[3] == "tables":
		if err := validName(segs[4]); err != nil {
			return route{}, fmt.Errorf("table name: %w", err)
		}
		return route{kind: "table", namespace: ns, table: segs[4]}, nil
	}
	return route{}, errBadPath
}

// parseNamespace splits a namespace segment on the unit separator (the
// spec's multi-level namespace encoding).
func parseNamespace(s string) ([]string, error) {
	levels := strings.Split(s, "\x1f")
	for _, l := range levels {
		if err := validName(l); err != nil {
			return nil, fmt.Errorf("namespace: %w", err)
		}
	}
	return levels, nil
}

func validName(s string) error {
	if s == "" {
		return errors.New("empty name")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("name %q has a control character", s)
		}
	}
	return nil
}

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawPath)+len(r.URL.Path)+len(r.URL.RawQuery) > 2*h.cfg.MaxPathBytes ||
		len(r.URL.EscapedPath())+len(r.URL.RawQuery) > h.cfg.MaxPathBytes {
		writeError(w, http.StatusBadRequest, "BadRequestException",
			fmt.Sprintf("request path over %d bytes (%s)", h.cfg.MaxPathBytes, cmp.Or(h.cfg.MaxPathName, "rest.Config.MaxPathBytes")))
		return
	}
	if r.ContentLength > h.cfg.MaxRequestBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "BadRequestException",
			fmt.Sprintf("request body of %d bytes over %d (%s)", r.ContentLength, h.cfg.MaxRequestBytes, cmp.Or(h.cfg.MaxRequestName, "rest.Config.MaxRequestBytes")))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxRequestBytes)
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), h.cfg.Prefix)
	if !ok || !strings.HasPrefix(rest, "/") {
		writeError(w, http.StatusBadRequest, "BadRequestException", "path outside the catalog "+h.cfg.Prefix)
		return
	}
	rt, err := parseRoute(rest)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", "malformed path: "+err.Error())
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", allowed(rt.kind))
		writeError(w, http.StatusMethodNotAllowed, "NotAuthorizedException",
			fmt.Sprintf("%s %s: floe's REST catalog is read-only (floe's compactor writes the tables)", r.Method, r.URL.Path))
		return
	}
	ctx := r.Context()
	switch rt.kind {
	case "config":
		h.config(w, r)
	case "namespaces":
		h.listNamespaces(ctx, w, r)
	case "namespace":
		h.namespace(ctx, w, r, rt.namespace)
	case "tables":
		h.listTables(ctx, w, rt.namespace)
	case "views":
		h.listViews(ctx, w, rt.namespace)
	case "table":
		h.table(ctx, w, r, rt.namespace, rt.table)
	}
}

// allowed is the Allow header of a 405: the read methods of the route.
func allowed(kind string) string {
	switch kind {
	case "namespace", "table":
		return "GET, HEAD"
	}
	return "GET"
}
