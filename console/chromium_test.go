package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/services"
)

// chromium finds Debian's chromium: under CI=true its absence fails the
// test, elsewhere it skips it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (apt-get install -y chromium)")
	}
	t.Skip("chromium not found (apt-get install -y chromium); CI installs it")
	return ""
}

// browse runs headless Chromium on url with the extra flags and returns
// its standard output.
func browse(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=4000"}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
	}
	return out.Bytes()
}

// boundAddrs waits until the floe server writing the -addr-file at path
// (started just before, the file fresh) has written the addresses it
// bound, and returns its gRPC and HTTP ones.
func boundAddrs(t *testing.T, path string, deadline time.Time) (grpcAddr, httpAddr string) {
	t.Helper()
	for {
		a, err := services.ReadAddrFile(path)
		if err == nil {
			return a.GRPC, a.Metrics
		}
		if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("floe dev's addresses: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// floeProc starts floe with args, stopped with SIGTERM at the end of the
// test (its output logged if the test failed).
func floeProc(t *testing.T, bin string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("output of floe %v:\n%s", args, out.String())
		}
	})
	return cmd, out
}

func floeRun(t *testing.T, bin, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("floe %v: %v\n%s", args, err, out)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// checked finds the figures the page marks with data-check="kind", by
// their other data- attributes (in document order), as "attr=value ..."
// keys, from a DOM dump.
func checked(dom, kind string) map[string]string {
	re := regexp.MustCompile(`<(?:td|span|b)((?:\s+[a-z-]+="[^"]*")*)\s*>([^<]*)`)
	attr := regexp.MustCompile(`\s+([a-z-]+)="([^"]*)"`)
	out := make(map[string]string)
	for _, m := range re.FindAllStringSubmatch(dom, -1) {
		var key []string
		isKind := false
		for _, a := range attr.FindAllStringSubmatch(m[1], -1) {
			switch {
			case a[1] == "data-check":
				isKind = a[2] == kind
			case strings.HasPrefix(a[1], "data-"):
				key = append(key, a[1][5:]+"="+html.UnescapeString(a[2]))
			}
		}
		if isKind {
			out[strings.Join(key, " ")] = html.UnescapeString(m[2])
		}
	}
	return out
}

// firstNumber reads "1,234 records behind" as 1234.
func firstNumber(t *testing.T, s string) int64 {
	t.Helper()
	f := strings.Fields(strings.ReplaceAll(s, ",", ""))
	if len(f) == 0 {
		t.Fatalf("no number in %q", s)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatalf("no number in %q", s)
	}
	return n
}

// shoot saves a screenshot of url as name in the test's folder, and a copy
// under FLOE_CONSOLE_SCREENSHOT (a folder) to look at after the test.
func shoot(t *testing.T, browser, dir, url, name string, height int) {
	t.Helper()
	shot := filepath.Join(dir, name)
	browse(t, browser, url, "--screenshot="+shot, fmt.Sprintf("--window-size=1400,%d", height), "--hide-scrollbars")
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
	if keep := os.Getenv("FLOE_CONSOLE_SCREENSHOT"); keep != "" {
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(keep, name), png, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// dump loads url in Chromium and returns the DOM once the page has
// rendered without errors.
func dump(t *testing.T, browser, url string) string {
	t.Helper()
	dom := string(browse(t, browser, url, "--dump-dom"))
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("%s never rendered without errors:\n%s", url, dom)
	}
	return dom
}

type summaryJSON struct {
	Topics        int   `json:"topics"`
	Partitions    int64 `json:"partitions"`
	Records       int64 `json:"records"`
	Bytes         int64 `json:"bytes"`
	TopicsCounted int   `json:"topicsCounted"`
	Groups        int   `json:"groups"`
	GroupsCounted int   `json:"groupsCounted"`
	WorstLag      struct {
		Group   string `json:"group"`
		Records int64  `json:"records"`
	} `json:"worstLag"`
	Tables         int `json:"tables"`
	TablesTrailing int `json:"tablesTrailing"`
}

var isoTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)

// The console in headless Chromium against a real `floe dev` holding 1,000
// topics and 100 groups: floe dev prints the console's URL and / leads
// there; the summary line shows the API's figures; the topics and groups
// lists are paged and searchable; a topic's page (reached by its link)
// shows its settings and every partition's high watermark and log start,
// a group's page its members and lag; the lag chart draws each group
// distinctly even where lines coincide; times are ISO 8601; a group named
// with markup shows as text. Screenshots are saved in the test's folder.
func TestConsoleInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "floe")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/floe-broker/floe/cmd/floe").CombinedOutput(); err != nil {
		t.Fatalf("build floe: %v\n%s", err, out)
	}
	addrFile := filepath.Join(dir, "addrs.json")
	_, devOut := floeProc(t, bin, "dev", "-data", filepath.Join(dir, "data"), "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0",
		"-kafka-listen", "127.0.0.1:0", "-addr-file", addrFile, "-linger", "20ms", "-ready-interval", "200ms")
	deadline := time.Now().Add(30 * time.Second)
	grpcAddr, httpAddr := boundAddrs(t, addrFile, deadline)
	base := "http://" + httpAddr
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("floe dev not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for !strings.Contains(devOut.String(), "console: "+base+"/console/\n") {
		if time.Now().After(deadline) {
			t.Fatalf("floe dev did not print the console's URL %s/console/:\n%s", base, devOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noFollow.Get(base + "/"); err != nil || resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("GET /: %v %v, want a redirect to /console/", resp, err)
	} else {
		resp.Body.Close()
	}

	floeRun(t, bin, "", "topic", "create", "orders", "-partitions", "3", "-config", "retention.ms=3600000", "-addr", grpcAddr)
	floeRun(t, bin, "", "topic", "create", "audit.log", "-partitions", "1", "-addr", grpcAddr)
	var lines strings.Builder
	for i := range 30 {
		fmt.Fprintf(&lines, "order %d\n", i)
	}
	floeRun(t, bin, lines.String(), "produce", "orders", "-addr", grpcAddr)
	floeRun(t, bin, "a\nb\nc\nd\ne\n", "produce", "audit.log", "-addr", grpcAddr)
	// A group that read 12 of the 30 orders and left, and a live member
	// following audit.log; the first's name is markup, to be shown as text.
	const marked = `g<b>"x"</b>`
	floeRun(t, bin, "", "consume", "orders", "-group", marked, "-max", "12", "-commit-interval", "100ms", "-addr", grpcAddr)
	floeProc(t, bin, "consume", "audit.log", "-group", "live", "-follow", "-commit-interval", "100ms", "-addr", grpcAddr)

	// 998 more topics and 98 more groups, all at the same position (the
	// same lag: their chart lines coincide).
	cl, err := client.Dial(grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for i := range 998 {
		if _, err := cl.CreateTopic(ctx, fmt.Sprintf("bulk.%04d", i), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	// At the end of orders/1 whichever partition the orders went to: lag
	// 0, below the marked group's 18, so the chart's top ten is certain.
	var ordersPage topicJSON
	getJSON(t, base+"/console/api/topic?name=orders", &ordersPage)
	end := ordersPage.Partitions[1].HighWatermark
	for i := range 98 {
		if _, err := cl.Groups().CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: fmt.Sprintf("same-%02d", i),
			Offsets: []*floev1.OffsetCommit{{Topic: "orders", Partition: 1, Offset: end}}}); err != nil {
			t.Fatal(err)
		}
	}

	// Wait until the API shows both first groups with positions, the
	// summary has counted everything, and the chart has samples. The
	// live member commits what it read on its next poll after the commit
	// interval, so audit.log gets a record now and then until it has a
	// position.
	audit := int64(5)
	var mg, lg groupJSON
	var lag lagJSON
	var sum summaryJSON
	deadline = time.Now().Add(60 * time.Second)
	for {
		getJSON(t, base+"/console/api/group?name="+url.QueryEscape(marked), &mg)
		getJSON(t, base+"/console/api/group?name=live", &lg)
		getJSON(t, base+"/console/api/lag", &lag)
		getJSON(t, base+"/console/api/summary", &sum)
		if mg.LagRecords == 18 && len(lg.Members) == 1 && len(lg.Partitions) == 1 &&
			sum.TopicsCounted == 1000 && sum.GroupsCounted == 100 && len(lag.Groups) == 100 && sum.Records == 30+audit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never settled: %+v / %+v, summary %+v, %d lag series", mg, lg, sum, len(lag.Groups))
		}
		if len(lg.Partitions) == 0 {
			floeRun(t, bin, "more\n", "produce", "audit.log", "-addr", grpcAddr)
			audit++
		}
		time.Sleep(300 * time.Millisecond)
	}
	getJSON(t, base+"/console/api/summary", &sum)
	if sum.Topics != 1000 || sum.Partitions != 3+1+998 || sum.Groups != 100 || sum.Records != 30+audit {
		t.Errorf("summary %+v, want 1,000 topics, 1,002 partitions, 100 groups, %d records", sum, 30+audit)
	}

	// The overview: the summary line, the first page of topics and groups.
	dom := dump(t, browser, base+"/console/#groups-section")
	line := checked(dom, "summary-topics")[""] + "|" + checked(dom, "summary-partitions")[""] + "|" + checked(dom, "summary-groups")[""]
	if line != "1,000|1,002|100" {
		t.Errorf("summary line shows topics|partitions|groups %q, want 1,000|1,002|100", line)
	}
	if got := checked(dom, "summary-records")[""]; firstNumber(t, got) != sum.Records {
		t.Errorf("summary line shows %q records, API %d", got, sum.Records)
	}
	if got := checked(dom, "summary-worst-lag")[""]; firstNumber(t, got) != sum.WorstLag.Records {
		t.Errorf("summary line shows worst lag %q, API %+v", got, sum.WorstLag)
	}
	if !strings.Contains(dom, `data-scrolled="groups-section"`) {
		t.Errorf("the #groups-section anchor was not followed once the content loaded")
	}
	if got := checked(dom, "topics-shown")[""]; got != "1–25 of 1,000" {
		t.Errorf("topics pager shows %q", got)
	}
	if got := checked(dom, "groups-shown")[""]; got != "1–25 of 100" {
		t.Errorf("groups pager shows %q", got)
	}
	if n := len(checked(dom, "topic-records")); n != 25 {
		t.Errorf("overview lists %d topics, want a page of 25", n)
	}
	// The second page, as its link opens it.
	dom2 := dump(t, browser, base+"/console/?topics-offset=25")
	if got := checked(dom2, "topics-shown")[""]; got != "26–50 of 1,000" || !strings.Contains(dom2, `data-topic="bulk.0024"`) || strings.Contains(dom2, `data-topic="bulk.0023"`) {
		t.Errorf("second topics page shows %q", got)
	}
	// The chart: the 10 groups furthest behind, each line its own style
	// (eight of them coincide at lag 10).
	styles := regexp.MustCompile(`<polyline [^>]*stroke-width="([^"]+)" stroke-dasharray="([^"]*)"`).FindAllStringSubmatch(dom, -1)
	seen := map[string]bool{}
	for _, m := range styles {
		seen[m[1]+"/"+m[2]] = true
	}
	if len(styles) != 10 || len(seen) != 10 {
		t.Errorf("chart draws %d lines in %d styles, want 10 distinct: %v", len(styles), len(seen), styles)
	}
	markers := map[string]string{}
	for _, m := range regexp.MustCompile(`<circle [^>]*data-group="([^"]*)" data-lag="(\d+)"`).FindAllStringSubmatch(dom, -1) {
		markers[html.UnescapeString(m[1])] = m[2]
	}
	if len(markers) != 10 || markers[marked] != "18" {
		t.Errorf("chart marks %v, want 10 groups with %q at 18", markers, marked)
	}

	// Search: the orders topic with its records, bytes and settings, the
	// live group with its member.
	var topics topicsJSON
	getJSON(t, base+"/console/api/topics?q=orders", &topics)
	dom = dump(t, browser, base+"/console/?topics=orders&groups=live")
	if got := checked(dom, "topics-shown")[""]; got != "1–1 of 1 matching" {
		t.Errorf("topics pager after a search shows %q", got)
	}
	if got := checked(dom, "topic-records")["topic=orders"]; len(topics.Topics) != 1 || firstNumber(t, got) != topics.Topics[0].Records {
		t.Errorf("orders: page shows %q records, API %+v", got, topics.Topics)
	}
	if got := checked(dom, "topic-bytes")["topic=orders"]; got == "" || got == "n/a" {
		t.Errorf("orders: bytes %q", got)
	}
	if got := checked(dom, "topic-settings")["topic=orders"]; !strings.Contains(got, "retention.ms=3600000") {
		t.Errorf("orders: settings %q", got)
	}
	if got := checked(dom, "group-members")["group=live"]; got != "1" {
		t.Errorf("live: %q members", got)
	}
	if !strings.Contains(dom, `href="#topic/orders"`) || !strings.Contains(dom, `href="#group/live"`) {
		t.Errorf("no links to the topic's and the group's pages")
	}
	shoot(t, browser, dir, base+"/console/", "console.png", 2600)

	// Topic pages, by their links: settings, every partition.
	for _, name := range []string{"orders", "audit.log"} {
		var tp topicJSON
		getJSON(t, base+"/console/api/topic?name="+url.QueryEscape(name), &tp)
		dom := dump(t, browser, base+"/console/#topic/"+url.PathEscape(name))
		if got := checked(dom, "page-topic")[""]; got != name {
			t.Errorf("topic page of %s shows %q", name, got)
		}
		hw, starts := checked(dom, "hw"), checked(dom, "log-start")
		if len(hw) != len(tp.Partitions) || len(tp.Partitions) != tp.PartitionCount {
			t.Errorf("%s: page shows %d partitions, API %d of %d", name, len(hw), len(tp.Partitions), tp.PartitionCount)
		}
		for _, p := range tp.Partitions {
			key := fmt.Sprintf("topic=%s partition=%d", name, p.Partition)
			if got, ok := hw[key]; !ok || firstNumber(t, got) != p.HighWatermark {
				t.Errorf("%s: page shows high watermark %q, API %d", key, got, p.HighWatermark)
			}
			if got, ok := starts[key]; !ok || firstNumber(t, got) != p.LogStartOffset {
				t.Errorf("%s: page shows log start %q, API %d", key, got, p.LogStartOffset)
			}
		}
		for k, v := range tp.Config {
			if got := checked(dom, "setting")["key="+k]; got != v {
				t.Errorf("%s: setting %s shows %q, API %q", name, k, got, v)
			}
		}
		if name == "orders" {
			if tp.Config["retention.ms"] != "3600000" {
				t.Errorf("orders config %v", tp.Config)
			}
			shoot(t, browser, dir, base+"/console/#topic/orders", "topic.png", 700)
		}
	}

	// Group pages: members, per-partition lag, ISO 8601 heartbeats.
	for _, g := range []groupJSON{mg, lg} {
		dom := dump(t, browser, base+"/console/#group/"+url.PathEscape(g.Name))
		if got := checked(dom, "page-group")[""]; got != g.Name {
			t.Errorf("group page of %q shows %q", g.Name, got)
		}
		if got := checked(dom, "page-group-members")[""]; firstNumber(t, got) != int64(len(g.Members)) {
			t.Errorf("group %q: page shows %q members, API %d", g.Name, got, len(g.Members))
		}
		if got := checked(dom, "page-group-lag")[""]; firstNumber(t, got) != g.LagRecords {
			t.Errorf("group %q: page shows lag %q, API %d", g.Name, got, g.LagRecords)
		}
		partLag := checked(dom, "lag")
		if len(partLag) != len(g.Partitions) {
			t.Errorf("group %q: page shows lag of %d partitions, API %d", g.Name, len(partLag), len(g.Partitions))
		}
		for _, p := range g.Partitions {
			key := fmt.Sprintf("group=%s topic=%s partition=%d", g.Name, p.Topic, p.Partition)
			if got := partLag[key]; got == "" || firstNumber(t, got) != p.LagRecords {
				t.Errorf("%s: page shows lag %q, API %d", key, got, p.LagRecords)
			}
		}
		for _, hb := range regexp.MustCompile(`data-check="heartbeat">([^<]*)<`).FindAllStringSubmatch(dom, -1) {
			if !isoTime.MatchString(hb[1]) {
				t.Errorf("heartbeat shown as %q, want ISO 8601", hb[1])
			}
		}
		if g.Name == marked {
			// The marked-up name is text: escaped, no <b> element.
			if !strings.Contains(dom, `g&lt;b&gt;"x"&lt;/b&gt;`) {
				t.Errorf("group name not shown as text")
			}
			noAttrs := regexp.MustCompile(`="[^"]*"`).ReplaceAllString(dom, `=""`)
			if strings.Contains(noAttrs, "<b>") {
				t.Errorf("group name rendered as markup")
			}
		} else {
			if len(regexp.MustCompile(`data-check="heartbeat">`).FindAllString(dom, -1)) != 1 {
				t.Errorf("live group page shows no heartbeat")
			}
			shoot(t, browser, dir, base+"/console/#group/live", "group.png", 700)
		}
	}

	// The Iceberg section lists the tables of the topics shown (floe dev
	// writes every topic's table).
	var ice struct {
		Available bool `json:"available"`
		Total     int  `json:"total"`
		Tables    []struct {
			Namespace string `json:"namespace"`
			Table     string `json:"table"`
		} `json:"tables"`
	}
	getJSON(t, base+"/console/api/iceberg?q=orders", &ice)
	if !ice.Available || ice.Total != 1 || len(ice.Tables) != 1 {
		t.Errorf("iceberg API: %+v, want the table of orders", ice)
	}
	dom = dump(t, browser, base+"/console/?topics=orders")
	for _, tb := range ice.Tables {
		if !strings.Contains(dom, tb.Namespace+"."+tb.Table) {
			t.Errorf("page does not show Iceberg table %s.%s", tb.Namespace, tb.Table)
		}
	}
}
