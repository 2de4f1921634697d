package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
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

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
func floeProc(t *testing.T, bin string, args ...string) *exec.Cmd {
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
	return cmd
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
	re := regexp.MustCompile(`<(?:td|span)((?:\s+[a-z-]+="[^"]*")*)\s*>([^<]*)<`)
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

// The console in headless Chromium against a real `floe dev`: the page
// shows the high watermarks, log starts, group members and lag that the
// API reports, draws a lag line per group, and shows a group name full of
// markup as text. It saves a screenshot in the test's temp dir.
func TestConsoleInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "floe")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/floe-broker/floe/cmd/floe").CombinedOutput(); err != nil {
		t.Fatalf("build floe: %v\n%s", err, out)
	}
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	floeProc(t, bin, "dev", "-data", filepath.Join(dir, "data"), "-listen", grpcAddr, "-metrics-listen", httpAddr,
		"-linger", "20ms", "-ready-interval", "200ms")
	base := "http://" + httpAddr
	deadline := time.Now().Add(30 * time.Second)
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

	floeRun(t, bin, "", "topic", "create", "orders", "-partitions", "3", "-addr", grpcAddr)
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

	// Wait until the API shows both groups with positions and sampled
	// once. The live member commits what it read on its next poll after
	// the commit interval, so audit.log gets a record now and then until
	// it has a position.
	audit := int64(5)
	var groups groupsJSON
	var lag lagJSON
	deadline = time.Now().Add(20 * time.Second)
	for {
		getJSON(t, base+"/console/api/groups", &groups)
		getJSON(t, base+"/console/api/lag", &lag)
		if len(groups.Groups) == 2 && groups.Groups[0].Name == marked && groups.Groups[0].LagRecords == 18 &&
			groups.Groups[1].Name == "live" && len(groups.Groups[1].Members) == 1 && len(groups.Groups[1].Partitions) == 1 &&
			len(lag.Groups) == 2 && len(lag.Groups[0].Points) > 0 && len(lag.Groups[1].Points) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("groups never settled: %+v, lag %+v", groups, lag)
		}
		if len(groups.Groups) == 2 && len(groups.Groups[1].Partitions) == 0 {
			floeRun(t, bin, "more\n", "produce", "audit.log", "-addr", grpcAddr)
			audit++
		}
		time.Sleep(300 * time.Millisecond)
	}
	getJSON(t, base+"/console/api/groups", &groups)
	var topics topicsJSON
	getJSON(t, base+"/console/api/topics", &topics)

	dom := string(browse(t, browser, base+"/console/", "--dump-dom"))
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page never rendered without errors:\n%s", dom)
	}

	// Partitions: every high watermark and log start the API reports.
	hw, starts := checked(dom, "hw"), checked(dom, "log-start")
	var total int64
	for _, tp := range topics.Topics {
		for _, p := range tp.Partitions {
			key := fmt.Sprintf("topic=%s partition=%d", tp.Name, p.Partition)
			if got, ok := hw[key]; !ok || firstNumber(t, got) != p.HighWatermark {
				t.Errorf("%s: page shows high watermark %q, API %d", key, got, p.HighWatermark)
			}
			if got, ok := starts[key]; !ok || firstNumber(t, got) != p.LogStartOffset {
				t.Errorf("%s: page shows log start %q, API %d", key, got, p.LogStartOffset)
			}
			total += p.HighWatermark
		}
		if b := checked(dom, "topic-bytes")["topic="+tp.Name]; tp.Storage == nil || b == "" || b == "n/a" {
			t.Errorf("topic %s: bytes %q, storage %+v", tp.Name, b, tp.Storage)
		}
	}
	if len(hw) != 4 || total != 30+audit {
		t.Errorf("page shows %d partitions, API %d records: %v", len(hw), total, hw)
	}

	// Groups: members and lag, per group and per partition.
	members, groupLag, partLag := checked(dom, "group-members"), checked(dom, "group-lag"), checked(dom, "lag")
	for _, g := range groups.Groups {
		if got := members["group="+g.Name]; got == "" || firstNumber(t, got) != int64(len(g.Members)) {
			t.Errorf("group %q: page shows %q members, API %d", g.Name, got, len(g.Members))
		}
		if got := groupLag["group="+g.Name]; got == "" || firstNumber(t, got) != g.LagRecords {
			t.Errorf("group %q: page shows lag %q, API %d", g.Name, got, g.LagRecords)
		}
		for _, p := range g.Partitions {
			key := fmt.Sprintf("group=%s topic=%s partition=%d", g.Name, p.Topic, p.Partition)
			if got := partLag[key]; got == "" || firstNumber(t, got) != p.LagRecords {
				t.Errorf("%s: page shows lag %q, API %d", key, got, p.LagRecords)
			}
		}
	}
	if want := len(groups.Groups[0].Partitions) + 1; len(partLag) != want {
		t.Errorf("page shows lag of %d partitions, API %d: %v", len(partLag), want, partLag)
	}

	// The chart: one line per sampled group.
	if !strings.Contains(dom, `data-check="lag-chart"`) {
		t.Error("no lag chart")
	}
	if n := strings.Count(dom, "<polyline"); n != len(lag.Groups) {
		t.Errorf("chart draws %d lines, API has %d groups", n, len(lag.Groups))
	}
	dots := regexp.MustCompile(`<circle [^>]*data-lag="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(dots) != len(lag.Groups) {
		t.Errorf("chart marks %d last samples, API has %d groups", len(dots), len(lag.Groups))
	}
	// The Iceberg section lists the tables the API lists (floe dev writes
	// every topic's table), under their names.
	var ice struct {
		Available bool `json:"available"`
		Tables    []struct {
			Namespace string `json:"namespace"`
			Table     string `json:"table"`
		} `json:"tables"`
	}
	getJSON(t, base+"/console/api/iceberg", &ice)
	if !ice.Available || len(ice.Tables) != len(topics.Topics) {
		t.Errorf("iceberg API: %+v, want one table per topic (%d)", ice, len(topics.Topics))
	}
	for _, tb := range ice.Tables {
		if !strings.Contains(dom, tb.Namespace+"."+tb.Table) {
			t.Errorf("page does not show Iceberg table %s.%s", tb.Namespace, tb.Table)
		}
	}

	// The marked-up name is text: escaped in the text, no <b> element.
	if !strings.Contains(dom, `g&lt;b&gt;"x"&lt;/b&gt;`) {
		t.Errorf("group name not shown as text")
	}
	noAttrs := regexp.MustCompile(`="[^"]*"`).ReplaceAllString(dom, `=""`)
	if strings.Contains(noAttrs, "<b>") {
		t.Errorf("group name rendered as markup")
	}

	shot := filepath.Join(dir, "console.png")
	browse(t, browser, base+"/console/", "--screenshot="+shot, "--window-size=1280,1800", "--hide-scrollbars")
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
	if keep := os.Getenv("FLOE_CONSOLE_SCREENSHOT"); keep != "" { // to look at it after the test
		if err := os.WriteFile(keep, png, 0o644); err != nil {
			t.Error(err)
		}
	}
}
