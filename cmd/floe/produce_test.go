package main_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// devFloe starts `floe dev` and returns a function running the CLI against it.
func devFloe(t *testing.T) (*proc, func(stdin string, args ...string) (string, string, int)) {
	t.Helper()
	dev := startFloe(t, "dev", "-data", t.TempDir())
	return dev, func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return runFloe(t, stdin, append(args, "-addr", dev.addr)...)
	}
}

// Ten 900 KiB lines are one request each at most 1 MiB, not one 9 MB
// request, and all arrive.
func TestProduceBatchesByBytes(t *testing.T) {
	_, floe := devFloe(t)
	if _, errs, code := floe("", "topic", "create", "big"); code != 0 {
		t.Fatal(errs)
	}
	var in strings.Builder
	for i := 0; i < 10; i++ {
		in.WriteString(strings.Repeat(string(rune('a'+i)), 900<<10))
		in.WriteByte('\n')
	}
	_, errs, code := floe(in.String(), "produce", "big")
	if code != 0 {
		t.Fatalf("produce of ten 900 KiB lines: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "produced 10 records (8.8 MiB) to 1 partitions") {
		t.Fatalf("summary: %q", errs)
	}
	out, errs, code := floe("", "consume", "big")
	if code != 0 {
		t.Fatalf("consume: %s", errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("consumed %d lines", len(lines))
	}
	for i, l := range lines {
		if len(l) != 900<<10 || l[0] != byte('a'+i) {
			t.Fatalf("line %d: %d bytes starting %q", i, len(l), l[:1])
		}
	}
}

// A bad line stops produce with its line number, after the lines before it.
func TestProduceBadLines(t *testing.T) {
	_, floe := devFloe(t)
	if _, errs, code := floe("", "topic", "create", "bad"); code != 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		in   string
		args []string
		want string
	}{
		{"a:1\nb:2\nno separator\nc:3\n", []string{"-key-separator", ":"}, `line 3: no key separator ":"`},
		{"short\n" + strings.Repeat("x", 200) + "\nshort\n", []string{"-max-record-bytes", "100"}, "line 2: longer than the record limit of 100 bytes"},
		{"k:" + strings.Repeat("x", 98) + "\n", []string{"-max-record-bytes", "100", "-key-separator", ":", "-header", "h=v"}, "line 1: record of 101 bytes is over the limit of 100"},
	}
	for _, c := range cases {
		_, errs, code := floe(c.in, append([]string{"produce", "bad"}, c.args...)...)
		if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, c.want) {
			t.Fatalf("produce %q: exit %d, stderr %q, want one line with %q", c.in[:min(len(c.in), 20)], code, errs, c.want)
		}
	}
	out, _, _ := floe("", "consume", "bad", "-print-key", "-separator", "=")
	// Lines before the bad one were produced; none after.
	if want := "a=1\nb=2\n=short\n"; out != want {
		t.Fatalf("log holds %q, want %q", out, want)
	}
}

// -whole sends a file (or stdin) as one record; -o json prints it with
// its key, headers and timestamp, base64 when it is not UTF-8.
func TestProduceWholeAndConsumeJSON(t *testing.T) {
	_, floe := devFloe(t)
	if _, errs, code := floe("", "topic", "create", "docs", "-partitions", "3"); code != 0 {
		t.Fatal(errs)
	}
	text := "line one\nline two\n"
	file := filepath.Join(t.TempDir(), "doc")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	if _, errs, code := floe("", "produce", "docs", "-whole", "-file", file, "-key", "doc1", "-header", "type=text", "-partition", "1"); code != 0 {
		t.Fatal(errs)
	}
	binary := "\xff\xfe\x00bin"
	if _, errs, code := floe(binary, "produce", "docs", "-whole", "-partition", "1"); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := floe("", "consume", "docs", "-o", "json")
	if code != 0 {
		t.Fatal(errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got %q", out)
	}
	type rec struct {
		Topic         string
		Partition     int32
		Offset        int64
		Timestamp     int64
		Key           *string
		KeyEncoding   string `json:"key_encoding"`
		Value         string
		ValueEncoding string `json:"value_encoding"`
		Headers       []struct{ Key, Value string }
	}
	var r1, r2 rec
	if err := json.Unmarshal([]byte(lines[0]), &r1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &r2); err != nil {
		t.Fatal(err)
	}
	if r1.Topic != "docs" || r1.Partition != 1 || r1.Offset != 0 || r1.Key == nil || *r1.Key != "doc1" || r1.Value != text ||
		r1.ValueEncoding != "" || len(r1.Headers) != 1 || r1.Headers[0].Key != "type" || r1.Headers[0].Value != "text" ||
		r1.Timestamp < before || r1.Timestamp > time.Now().UnixMilli() {
		t.Fatalf("first record %+v", r1)
	}
	raw, err := base64.StdEncoding.DecodeString(r2.Value)
	if r2.Offset != 1 || r2.Key != nil || r2.ValueEncoding != "base64" || err != nil || string(raw) != binary {
		t.Fatalf("second record %+v (decoded %q, %v)", r2, raw, err)
	}
	// -v: line, partition and offset of each record.
	if out, errs, code := floe("x\ny\n", "produce", "docs", "-v", "-partition", "2"); code != 0 || out != "1\t2\t0\n2\t2\t1\n" {
		t.Fatalf("produce -v: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// Text output with headers and timestamps.
	out, _, _ = floe("", "consume", "docs", "-partition", "1", "-max", "1", "-print-headers", "-print-timestamp", "-print-key", "-separator", "|")
	ts := time.UnixMilli(r1.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if want := ts + "|doc1|type=text|" + text + "\n"; out != want {
		t.Fatalf("text output %q, want %q", out, want)
	}
}

// An agent killed in the middle of a produce and started again: the
// producer retries, and each line is in the log exactly once.
func TestProduceRetriesWithoutDuplicates(t *testing.T) {
	data := t.TempDir()
	dev := startFloe(t, "dev", "-data", data)
	addr := dev.addr
	devArgs := []string{"dev", "-data", data, "-listen", addr, "-metrics-listen", dev.metrics} // the restart's: the same ports
	if _, errs, code := runFloe(t, "", "topic", "create", "once", "-partitions", "4", "-addr", addr); code != 0 {
		t.Fatal(errs)
	}
	const n = 200000
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i%97, i)
	}
	cmd := exec.Command(floeBin, "produce", "once", "-key-separator", ":", "-addr", addr, "-batch-bytes", "8192")
	cmd.Stdin = &in
	var errb strings.Builder
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once the producer is under way: its first file committed.
	deadline := time.Now().Add(time.Minute)
	for metricValue0(dev.metrics, "floe_batcher_flushes_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no file committed a minute into the produce: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	dev.kill()
	if strings.Contains(errb.String(), "produced") {
		t.Fatalf("produce ended before the kill (%s): give it more input", errb.String())
	}
	time.Sleep(300 * time.Millisecond) // the agent stays down a while: the producer retries
	startFloe(t, devArgs...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("produce across an agent restart: %v: %s", err, errb.String())
	}
	t.Logf("produce: %s", errb.String())
	out, errs, code := runFloe(t, "", "consume", "once", "-addr", addr)
	if code != 0 {
		t.Fatal(errs)
	}
	seen := make(map[string]bool, n)
	for _, v := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if seen[v] {
			t.Fatalf("value %q twice in the log", v)
		}
		seen[v] = true
	}
	if len(seen) != n {
		t.Fatalf("log holds %d distinct values, want %d", len(seen), n)
	}
}

// The agent's limits are flags.
func TestServerLimitFlags(t *testing.T) {
	dev := startFloe(t, "dev", "-data", t.TempDir(), "-max-record-bytes", "1000", "-max-request-bytes", "3000", "-commit-timeout", "5s", "-max-fetch-bytes", "65536")
	c := dialT(t, dev.addr)
	ctx := context.Background()
	if _, err := c.CreateTopic(ctx, "lim", 1, nil); err != nil {
		t.Fatal(err)
	}
	rec := func(n int) *floev1.Record { return &floev1.Record{Value: bytes.Repeat([]byte("x"), n)} }
	if _, err := c.Produce(ctx, "lim", 0, rec(900)); err != nil {
		t.Fatalf("900-byte record under a 1000-byte limit: %v", err)
	}
	if _, err := c.Produce(ctx, "lim", 0, rec(1001)); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("1001-byte record over -max-record-bytes 1000: %v", err)
	}
	if _, err := c.Produce(ctx, "lim", 0, rec(900), rec(900), rec(900), rec(900)); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("3600-byte request over -max-request-bytes 3000: %v", err)
	}
	// The agent's refusal names the input lines of the request.
	_, errs, code := runFloe(t, "ok\n"+strings.Repeat("x", 1500)+"\n", "produce", "lim", "-addr", dev.addr)
	if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "not produced: lines 1-2") || !strings.Contains(errs, "InvalidArgument") {
		t.Fatalf("produce over the agent's record limit: exit %d, stderr %q", code, errs)
	}
	_, errs, code = runFloe(t, strings.Repeat("x", 1500)+"\n", "produce", "lim", "-addr", dev.addr)
	if code != 1 || !strings.Contains(errs, "line 1: InvalidArgument") {
		t.Fatalf("produce over the agent's record limit: exit %d, stderr %q", code, errs)
	}
	for _, args := range [][]string{{"-max-request-bytes", "10", "-max-record-bytes", "100"}, {"-commit-timeout", "0s"}} {
		_, errs, code := runFloe(t, "", append([]string{"dev", "-data", t.TempDir(), "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0"}, args...)...)
		if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Fatalf("dev %v: exit %d, stderr %q: want one line and exit 1", args, code, errs)
		}
	}
}

// On a terminal, a long produce shows a progress line (and clears it
// before the summary); elsewhere it does not.
func TestProduceProgressOnTerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no script(1) (util-linux) to give floe a terminal: %v", err)
		}
		t.Skip("no script(1) to give floe a terminal (fails under CI=true)")
	}
	dev := startFloe(t, "dev", "-data", t.TempDir())
	if _, errs, code := runFloe(t, "", "topic", "create", "slow", "-addr", dev.addr); code != 0 {
		t.Fatal(errs)
	}
	file := filepath.Join(t.TempDir(), "in")
	var in bytes.Buffer
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	if err := os.WriteFile(file, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// One record per request, one request in flight, each waiting out the
	// 20 ms linger: over a second.
	produce := fmt.Sprintf("%s produce slow -file %s -batch 1 -in-flight 1 -addr %s", floeBin, file, dev.addr)
	out, err := exec.Command("script", "-qec", produce, "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("produce on a terminal: %v: %q", err, out)
	}
	if !strings.Contains(string(out), "\r\x1b[Kproduced ") || !strings.Contains(string(out), "in flight") ||
		!strings.Contains(string(out), "produced 100 records") {
		t.Fatalf("no progress line on a terminal: %q", out)
	}
	_, errs, code := runFloe(t, "", "produce", "slow", "-file", file, "-in-flight", "4", "-addr", dev.addr)
	if code != 0 || strings.Contains(errs, "\r") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("not a terminal: exit %d, stderr %q: want the summary line only", code, errs)
	}
}

// A request the agent refuses (a value against the topic's schema) with
// others in flight: the CLI waits for them, then says which lines were
// produced and where it stopped; every good line before it is stored.
func TestProduceRefusedSaysWhatWasProduced(t *testing.T) {
	_, floe := devFloe(t)
	schemaFile := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(schemaFile, []byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := floe("", "topic", "create", "sch", "-partitions", "3", "-schema", schemaFile); code != 0 {
		t.Fatal(errs)
	}
	var in strings.Builder
	for i := 1; i <= 600; i++ {
		fmt.Fprintf(&in, "{\"n\":%d}\n", i)
	}
	in.WriteString("{\"n\":\"not a number\"}\n")
	for i := 602; i <= 650; i++ {
		fmt.Fprintf(&in, "{\"n\":%d}\n", i)
	}
	_, errs, code := floe(in.String(), "produce", "sch", "-batch", "100")
	if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q; want one line and exit 1", code, errs)
	}
	for _, want := range []string{"stopped at line 601", "produced 600 records: lines 1-600;", "not produced: lines 601-650"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q lacks %q", errs, want)
		}
	}
	out, errs, code := floe("", "consume", "sch")
	if code != 0 {
		t.Fatal(errs)
	}
	if n := strings.Count(out, "\n"); n != 600 {
		t.Fatalf("%d records stored, want the 600 lines before the refused one", n)
	}
}

// produce -f reads a key, headers, a partition and the value per line;
// produce -json reads what consume -o json prints, so a topic copies
// through the two.
func TestProducePerLineFormatAndJSON(t *testing.T) {
	_, floe := devFloe(t)
	for _, topic := range []string{"src", "dst"} {
		if _, errs, code := floe("", "topic", "create", topic, "-partitions", "3"); code != 0 {
			t.Fatal(errs)
		}
	}
	in := "k1 a=1,b=x\\,y 2 hello\nk2  0 world\n"
	if _, errs, code := floe(in, "produce", "src", "-f", `%k %h %p %v\n`); code != 0 {
		t.Fatalf("produce -f: %s", errs)
	}
	want := "0 0 k2 [] world\n2 0 k1 [a=1,b=x\\,y] hello\n"
	if out, errs, _ := floe("", "consume", "src", "-f", `%p %o %k [%h] %s\n`); sortLines(out) != want {
		t.Fatalf("consumed %q (%s), want %q", out, errs, want)
	}
	js, errs, code := floe("", "consume", "src", "-o", "json")
	if code != 0 {
		t.Fatal(errs)
	}
	js += `{"key":"k3","value":"AAE=","value_encoding":"base64","headers":{"h":"v"},"partition":1}` + "\n"
	if _, errs, code := floe(js, "produce", "dst", "-json"); code != 0 {
		t.Fatalf("produce -json: %s", errs)
	}
	want = "0 k2 [] world\n1 k3 [h=v] \\x00\\x01\n2 k1 [a=1,b=x\\,y] hello\n"
	out, errs, _ := floe("", "consume", "dst", "-f", `%p %k [%h] %s\n`)
	out = strings.Replace(out, "\x00\x01", `\x00\x01`, 1)
	if sortLines(out) != want {
		t.Fatalf("copied %q (%s), want %q", out, errs, want)
	}
	for _, tc := range []struct{ in, want string }{
		{"nope\n", "stopped at line 1: not a JSON object"},
		{`{"value":"x","partition":7}` + "\n", "stopped at line 1: topic has no partition 7 (it has 3)"},
	} {
		if _, errs, code := floe(tc.in, "produce", "dst", "-json"); code != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("produce -json %q: exit %d, %q, want %q", tc.in, code, errs, tc.want)
		}
	}
	if _, errs, code := floe("k v\n", "produce", "dst", "-f", "%k%v"); code != 1 || !strings.Contains(errs, "need text between them") {
		t.Errorf("-f %%k%%v: exit %d, %q", code, errs)
	}
}

// sortLines sorts the lines of out (partitions come in any order).
func sortLines(out string) string {
	if out == "" {
		return ""
	}
	return strings.Join(sorted(strings.Split(strings.TrimSuffix(out, "\n"), "\n")), "\n") + "\n"
}
