package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const sampleMetrics = `# HELP floe_objectstore_requests_total Object store requests by operation and result.
# TYPE floe_objectstore_requests_total counter
floe_objectstore_requests_total{operation="put",result="ok"} 12
floe_objectstore_requests_total{operation="put",result="error"} 1
floe_objectstore_requests_total{operation="get",result="ok"} 7
floe_objectstore_requests_total_extra 99
floe_metadata_commits_total{result="ok"} 12
# TYPE floe_batcher_flush_bytes histogram
floe_batcher_flush_bytes_bucket{le="1024"} 0
floe_batcher_flush_bytes_bucket{le="+Inf"} 12
floe_batcher_flush_bytes_sum 1.2e+06
floe_batcher_flush_bytes_count 12
process_cpu_seconds_total 3.25
process_resident_memory_bytes 5.1e+07 1700000000000
weird{msg="a \"quoted\" \\ value, with } and ,",x="1"} NaN
`

func TestParseMetrics(t *testing.T) {
	samples, err := ParseMetrics(strings.NewReader(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 12 {
		t.Fatalf("%d samples, want 12", len(samples))
	}
	w := samples[len(samples)-1]
	if w.Name != "weird" || w.Labels["msg"] != `a "quoted" \ value, with } and ,` || w.Labels["x"] != "1" || !math.IsNaN(w.Value) {
		t.Fatalf("escaped labels: %+v", w)
	}
	m := NewMetrics(samples)
	for _, c := range []struct {
		got, want float64
		what      string
	}{
		{m.Sum("floe_objectstore_requests_total", "operation", "put"), 13, "puts"},
		{m.Sum("floe_objectstore_requests_total", "operation", "put", "result", "ok"), 12, "ok puts"},
		{m.Sum("floe_objectstore_requests_total"), 20, "requests (not the _extra series)"},
		{m.Sum("floe_metadata_commits_total"), 12, "commits"},
		{m.Sum("floe_batcher_flush_bytes_sum"), 1.2e6, "flush bytes"},
		{m.Sum("floe_batcher_flush_bytes_bucket", "le", "+Inf"), 12, "+Inf bucket"},
		{m.Sum("process_resident_memory_bytes"), 5.1e7, "rss with a timestamp"},
		{m.Sum("missing"), 0, "missing"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	before := Metrics{`floe_metadata_commits_total{result="ok"}`: 2}
	if d := m.Sub(before).Sum("floe_metadata_commits_total"); d != 10 {
		t.Fatalf("delta %v, want 10", d)
	}
}

func TestParseMetricsErrors(t *testing.T) {
	for _, bad := range []string{
		"novalue\n", `x{a="1" 3` + "\n", `x{a=1} 3` + "\n", "x 1 2 3\n", "x abc\n", `x{a="1} 2` + "\n",
	} {
		if _, err := ParseMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

func TestScraper(t *testing.T) {
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		n++
		fmt.Fprintf(w, "process_cpu_seconds_total %d\nprocess_resident_memory_bytes 100\n", n)
	}))
	defer srv.Close()
	ep := strings.TrimPrefix(srv.URL, "http://")
	sys, err := NewFloeSystem(FloeConfig{Addrs: []string{"127.0.0.1:1"}, MetricsAddrs: []string{ep, ep}, RecordSize: 16, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	st, err := sys.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUSeconds != 3 || len(st.RSSBytes) != 2 || st.RSSBytes[0] != 100 {
		t.Fatalf("stats %+v, want CPU 1+2 and two RSS samples", st)
	}
	bad := NewScraper([]string{ep + "/nothing"})
	bad.Endpoints[0] = srv.URL + "/nothing"
	if _, err := bad.Scrape(context.Background()); err == nil {
		t.Fatal("a 404 endpoint scraped without error")
	}
	srv.Client().CloseIdleConnections()
}
