package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/rest"
)

// server is the REST catalog over a SQLite catalog holding the table of
// topic orders (two appends) and the empty table of topic empty.
func server(t *testing.T) (*httptest.Server, *iceberg.Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := iceberg.Open(ctx, iceberg.DefaultSQLiteConfig(t.TempDir()), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	now := time.Now().UTC()
	for i := range int64(2) {
		rows := []iceberg.Row{{Partition: 0, Offset: i, Timestamp: now, AppendTime: now, Value: []byte("v")}}
		if _, err := w.Append(ctx, "orders", rows, iceberg.Watermark{0: i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.EnsureTable(ctx, "empty"); err != nil {
		t.Fatal(err)
	}
	cfg := rest.DefaultConfig()
	cfg.TableConfig = map[string]string{"s3.path-style-access": "true"}
	cfg.MaxRequestBytes = 1024
	h, err := rest.New(w.Catalog(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/iceberg/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, w
}

// call sends one request and decodes a JSON answer into out (when not
// nil); it returns the status.
func call(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && method != http.MethodHead {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", method, url, ct)
		}
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.DisallowUnknownFields() // the spec's shapes, and nothing else
		if err := d.Decode(out); err != nil {
			t.Errorf("%s %s: %v in %s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

// The spec's IcebergErrorResponse.
type errorResponse struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func wantError(t *testing.T, what string, status int, e errorResponse, code int, typ string) {
	t.Helper()
	if status != code || e.Error.Code != code || e.Error.Type != typ || e.Error.Message == "" {
		t.Errorf("%s: status %d, error %+v; want %d %s with a message", what, status, e.Error, code, typ)
	}
}

func TestConfig(t *testing.T) {
	srv, _ := server(t)
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
		Endpoints []string          `json:"endpoints"`
	}
	if st := call(t, "GET", srv.URL+"/iceberg/v1/config?warehouse=floe", "", &cfg); st != 200 || cfg.Defaults == nil || cfg.Overrides == nil {
		t.Fatalf("config: %d %+v", st, cfg)
	}
	for _, e := range []string{"GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"} {
		found := false
		for _, got := range cfg.Endpoints {
			found = found || got == e
		}
		if !found {
			t.Errorf("config endpoints %v lack %q", cfg.Endpoints, e)
		}
	}
}

func TestNamespaces(t *testing.T) {
	srv, _ := server(t)
	base := srv.URL + "/iceberg/v1/namespaces"
	var list struct {
		Namespaces    [][]string `json:"namespaces"`
		NextPageToken *string    `json:"next-page-token"`
	}
	if st := call(t, "GET", base, "", &list); st != 200 || len(list.Namespaces) != 1 || list.Namespaces[0][0] != "floe" {
		t.Errorf("list namespaces: %d %v", st, list.Namespaces)
	}
	list.Namespaces = nil
	if st := call(t, "GET", base+"?parent=floe", "", &list); st != 200 || list.Namespaces == nil || len(list.Namespaces) != 0 {
		t.Errorf("list namespaces under floe: %d %v, want an empty list", st, list.Namespaces)
	}
	var ns struct {
		Namespace  []string          `json:"namespace"`
		Properties map[string]string `json:"properties"`
	}
	if st := call(t, "GET", base+"/floe", "", &ns); st != 200 || len(ns.Namespace) != 1 || ns.Namespace[0] != "floe" || ns.Properties == nil {
		t.Errorf("load namespace: %d %+v", st, ns)
	}
	if st := call(t, "HEAD", base+"/floe", "", nil); st != 204 {
		t.Errorf("HEAD namespace: %d, want 204", st)
	}
	if st := call(t, "HEAD", base+"/nope", "", nil); st != 404 {
		t.Errorf("HEAD unknown namespace: %d, want 404", st)
	}
	for _, u := range []string{base + "/nope", base + "/nope/tables", base + "?parent=nope", base + "/floe%1Fsub"} {
		var e errorResponse
		wantError(t, "GET "+u, call(t, "GET", u, "", &e), e, 404, "NoSuchNamespaceException")
	}
}

func TestTables(t *testing.T) {
	srv, _ := server(t)
	base := srv.URL + "/iceberg/v1/namespaces/floe/tables"
	var list struct {
		Identifiers []struct {
			Namespace []string `json:"namespace"`
			Name      string   `json:"name"`
		} `json:"identifiers"`
		NextPageToken *string `json:"next-page-token"`
	}
	if st := call(t, "GET", base, "", &list); st != 200 || len(list.Identifiers) != 2 {
		t.Fatalf("list tables: %d %+v", st, list)
	}
	names := map[string]bool{}
	for _, id := range list.Identifiers {
		if len(id.Namespace) != 1 || id.Namespace[0] != "floe" {
			t.Errorf("table %+v: namespace", id)
		}
		names[id.Name] = true
	}
	if !names["orders"] || !names["empty"] {
		t.Errorf("tables %v, want orders and empty", names)
	}
	var load struct {
		MetadataLocation string `json:"metadata-location"`
		Metadata         struct {
			FormatVersion     int               `json:"format-version"`
			TableUUID         string            `json:"table-uuid"`
			Location          string            `json:"location"`
			CurrentSnapshotID *int64            `json:"current-snapshot-id"`
			Snapshots         []json.RawMessage `json:"snapshots"`
			Properties        map[string]string `json:"properties"`
		} `json:"metadata"`
		Config map[string]string `json:"config"`
	}
	req, _ := http.NewRequest("GET", base+"/orders?snapshots=all", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(b, &load); err != nil || resp.StatusCode != 200 {
		t.Fatalf("load table: %d %v %s", resp.StatusCode, err, b)
	}
	md := load.Metadata
	if !strings.HasPrefix(load.MetadataLocation, "file:///") || !strings.HasSuffix(load.MetadataLocation, ".metadata.json") ||
		md.FormatVersion != 2 || md.TableUUID == "" || !strings.HasSuffix(md.Location, "/floe.db/orders") ||
		md.CurrentSnapshotID == nil || len(md.Snapshots) != 2 || md.Properties["floe.topic"] != "orders" ||
		load.Config["s3.path-style-access"] != "true" {
		t.Errorf("load table: %s", b)
	}
	if st := call(t, "HEAD", base+"/orders", "", nil); st != 204 {
		t.Errorf("HEAD table: %d, want 204", st)
	}
	if st := call(t, "HEAD", base+"/nope", "", nil); st != 404 {
		t.Errorf("HEAD unknown table: %d, want 404", st)
	}
	for _, u := range []string{base + "/nope", srv.URL + "/iceberg/v1/namespaces/nope/tables/orders"} {
		var e errorResponse
		wantError(t, "GET "+u, call(t, "GET", u, "", &e), e, 404, "NoSuchTableException")
	}
	var views struct {
		Identifiers []json.RawMessage `json:"identifiers"`
	}
	if st := call(t, "GET", srv.URL+"/iceberg/v1/namespaces/floe/views", "", &views); st != 200 || views.Identifiers == nil || len(views.Identifiers) != 0 {
		t.Errorf("list views: %d %+v, want an empty list", st, views)
	}
}

// Writes are 405 with the spec's error body, and the tables stay as they
// were.
func TestWritesRefused(t *testing.T) {
	srv, w := server(t)
	base := srv.URL + "/iceberg/v1/namespaces"
	for _, c := range []struct{ method, url, allow string }{
		{"POST", base, "GET"},
		{"DELETE", base + "/floe", "GET, HEAD"},
		{"POST", base + "/floe/tables", "GET"},
		{"POST", base + "/floe/tables/orders", "GET, HEAD"},
		{"DELETE", base + "/floe/tables/orders", "GET, HEAD"},
		{"PUT", base + "/floe/tables/orders", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(c.method, c.url, strings.NewReader(`{"name":"x"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e errorResponse
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		wantError(t, c.method+" "+c.url, resp.StatusCode, e, 405, "NotAuthorizedException")
		if got := resp.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.url, got, c.allow)
		}
	}
	st, err := w.Describe(context.Background(), "orders")
	if err != nil || !st.Exists || st.Rows != 2 {
		t.Errorf("orders after the refused writes: %+v %v", st, err)
	}
}

// Malformed paths are 400; bodies and paths are bounded.
func TestBadRequests(t *testing.T) {
	srv, _ := server(t)
	for _, u := range []string{
		"/iceberg/v2/config",
		"/iceberg/v1",
		"/iceberg/v1/",
		"/iceberg/v1/namespaces/floe/tables/orders/extra",
		"/iceberg/v1/namespaces/floe/things",
		"/iceberg/v1/namespaces/fl%00oe",
		"/iceberg/v1/namespaces/floe%1F",
		"/iceberg/v1/namespaces?parent=a%1F%1Fb",
		"/iceberg/v1/namespaces/floe/tables/" + strings.Repeat("x", 9000),
	} {
		var e errorResponse
		wantError(t, "GET "+u[:min(len(u), 80)], call(t, "GET", srv.URL+u, "", &e), e, 400, "BadRequestException")
	}
	// Paths a ServeMux would clean (and redirect) reach the handler
	// as they are when it is mounted without one.
	h, err := rest.New(nil, rest.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"/iceberg/v1/namespaces//tables", "/iceberg/v1/namespaces/floe/tables/", "/other/v1/config"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
		var e errorResponse
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		wantError(t, "GET "+u, rec.Code, e, 400, "BadRequestException")
	}
	var e errorResponse
	st := call(t, "GET", srv.URL+"/iceberg/v1/config", strings.Repeat("x", 2048), &e)
	wantError(t, "GET with a 2 KiB body", st, e, 413, "BadRequestException")
	if !strings.Contains(e.Error.Message, "MaxRequestBytes") {
		t.Errorf("413 message %q does not name the limit", e.Error.Message)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mod := range map[string]func(*rest.Config){
		"prefix without slash": func(c *rest.Config) { c.Prefix = "iceberg" },
		"prefix ending in /":   func(c *rest.Config) { c.Prefix = "/iceberg/" },
		"negative body bound":  func(c *rest.Config) { c.MaxRequestBytes = -1 },
		"tiny path bound":      func(c *rest.Config) { c.MaxPathBytes = 10 },
	} {
		cfg := rest.DefaultConfig()
		mod(&cfg)
		if _, err := rest.New(nil, cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
