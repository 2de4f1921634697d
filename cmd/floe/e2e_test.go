package main_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
)

var floeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "floe-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	floeBin = filepath.Join(dir, "floe")
	out, err := exec.Command("go", "build", "-o", floeBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build floe: %v\n%s", err, out)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	// Every server these tests start takes a free Kafka port, not 9092.
	os.Setenv("FLOE_KAFKA_LISTEN", "127.0.0.1:0")
	testenv.Main(m)
}

// proc is a running floe server process.
type proc struct {
	mu      *sync.Mutex // protects logs
	cmd     *exec.Cmd
	addr    string
	metrics string
	logs    *strings.Builder
	done    chan struct{}
	// addrFile, when set, is the -addr-file the process reports its bound
	// addresses in (addrfile_test.go); launch fills addr and metrics from it.
	addrFile string
}

// startFloe starts a floe server and waits until it is ready (/readyz).
func startFloe(t *testing.T, args ...string) *proc {
	t.Helper()
	return startFloeWait(t, "/readyz", args...)
}

// startFloeWait starts a floe server and waits until path answers 200.
func startFloeWait(t *testing.T, path string, args ...string) *proc {
	t.Helper()
	p := &proc{logs: &strings.Builder{}, done: make(chan struct{})}
	// Addresses given in args (to restart on them) are kept.
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-listen":
			p.addr = args[i+1]
		case "-metrics-listen":
			p.metrics = args[i+1]
		}
	}
	// The others are bound by the process on port 0 and read back.
	if p.addr == "" {
		args = append(args, "-listen", "127.0.0.1:0")
	}
	if p.metrics == "" {
		args = append(args, "-metrics-listen", "127.0.0.1:0")
	}
	args = p.withAddrFile(t, args)
	if !slices.Contains(args, "-linger") { // a linger given in args is kept
		args = append(args, "-linger", "20ms")
	}
	args = append(args, "-ready-interval", "200ms")
	launch(t, p, path, args)
	return p
}

// launch starts floe with args as p's process, stopped at the test's end
// (SIGTERM, SIGKILL after 20 s) with its logs shown if the test failed,
// and waits until path on p's metrics address answers 200.
func launch(t *testing.T, p *proc, path string, args []string) {
	t.Helper()
	p.cmd = exec.Command(floeBin, args...)
	p.mu = &sync.Mutex{}
	p.cmd.Stdout = lockedWriter{p.mu, p.logs}
	p.cmd.Stderr = lockedWriter{p.mu, p.logs}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("logs of %v:\n%s", args, p.logText())
		}
	})
	if p.addrFile != "" {
		a := p.waitAddrs(t, func(a boundAddrs) bool { return a.Metrics != "" })
		p.addr = cmp.Or(p.addr, a.GRPC)
		p.metrics = cmp.Or(p.metrics, a.Metrics)
	}
	deadline := time.Now().Add(30 * time.Second)
	scheme, get := readyGetter(args) // tls_e2e_test.go
	for {
		if resp, err := get(scheme + p.metrics + path); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("floe %v exited before %s answered 200:\n%s", args, path, p.logText())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("floe %v: %s did not answer 200:\n%s", args, path, p.logText())
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// logText returns what the process wrote so far.
func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func dialT(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// acked is one acknowledged record.
type acked struct {
	producer, seq int
	partition     int32
	offset        int64
}

// produceLoad runs producers that send value "p<producer>-<seq>" records to
// partition seq%parts, alternating between clients, until stop closes or
// each has sent max records. It returns what was acknowledged.
func produceLoad(t *testing.T, clients []*client.Client, topic string, parts int32, firstProducer, producers, max int, stop <-chan struct{}) []acked {
	var (
		mu  sync.Mutex
		out []acked
		wg  sync.WaitGroup
	)
	for pr := firstProducer; pr < firstProducer+producers; pr++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; seq < max; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				part := int32(seq) % parts
				c := clients[(pr+seq)%len(clients)]
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := c.Produce(ctx, topic, part, client.Value(nil, []byte(fmt.Sprintf("p%d-%d", pr, seq))))
				cancel()
				if err != nil {
					continue // not acknowledged: may or may not be in the log
				}
				mu.Lock()
				out = append(out, acked{producer: pr, seq: seq, partition: part, offset: resp.GetOffsets()[0]})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

var valueRE = regexp.MustCompile(`^p(\d+)-(\d+)$`)

// verifyLog reads every partition through c and checks: offsets dense from
// 0, every acknowledged record at its offset with its value, no value twice,
// each producer's sequence increasing per partition.
func verifyLog(t *testing.T, c *client.Client, topic string, parts int32, acks []acked) {
	t.Helper()
	ctx := context.Background()
	byOffset := map[[2]int64]string{}
	for p := int32(0); p < parts; p++ {
		var next int64
		lastSeq := map[int]int{}
		seen := map[string]int64{}
		for {
			f, err := c.Fetch(ctx, topic, p, next, 1<<20, 0)
			if err != nil {
				t.Fatalf("fetch %d@%d: %v", p, next, err)
			}
			if len(f.GetRecords()) == 0 {
				if next != f.GetHighWatermark() {
					t.Fatalf("partition %d: read stopped at %d below high watermark %d", p, next, f.GetHighWatermark())
				}
				break
			}
			for _, r := range f.GetRecords() {
				if r.GetOffset() != next {
					t.Fatalf("partition %d: offset %d after %d: not dense", p, r.GetOffset(), next-1)
				}
				v := string(r.GetValue())
				if first, ok := seen[v]; ok {
					t.Fatalf("partition %d: value %q at offsets %d and %d", p, v, first, r.GetOffset())
				}
				seen[v] = r.GetOffset()
				m := valueRE.FindStringSubmatch(v)
				if m == nil {
					t.Fatalf("partition %d: unexpected value %q", p, v)
				}
				pr, _ := strconv.Atoi(m[1])
				seq, _ := strconv.Atoi(m[2])
				if last, ok := lastSeq[pr]; ok && seq <= last {
					t.Fatalf("partition %d: producer %d seq %d after %d: order broken", p, pr, seq, last)
				}
				lastSeq[pr] = seq
				byOffset[[2]int64{int64(p), r.GetOffset()}] = v
				next++
			}
		}
	}
	for _, a := range acks {
		want := fmt.Sprintf("p%d-%d", a.producer, a.seq)
		if got := byOffset[[2]int64{int64(a.partition), a.offset}]; got != want {
			t.Fatalf("acknowledged %q at %d/%d, log has %q", want, a.partition, a.offset, got)
		}
	}
}

func metricValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			fields := strings.Fields(line)
			v, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
			sum += v
		}
	}
	return sum
}

func TestTwoAgentsPostgresS3(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	agentArgs := []string{"agent", "-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-prefix", "e2e"}
	// A missing bucket is refused at start, in one line.
	// (On free ports: a floe dev on the defaults must not fail it.)
	bad := append([]string{}, agentArgs...)
	bad[4] = "no-such-bucket"
	bad = append(bad, "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0")
	cmd := exec.Command(floeBin, bad...)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Run(); err == nil || !strings.Contains(errb.String(), "no-such-bucket") ||
		strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
		t.Fatalf("agent with a missing bucket: err %v, stderr %q", err, errb.String())
	}

	a1 := startFloe(t, agentArgs...)
	a2 := startFloe(t, agentArgs...)
	c1, c2 := dialT(t, a1.addr), dialT(t, a2.addr)
	const parts = 6
	if _, err := c1.CreateTopic(context.Background(), "events", parts, nil); err != nil {
		t.Fatal(err)
	}

	acks := produceLoad(t, []*client.Client{c1, c2}, "events", parts, 0, 6, 40, nil)
	if len(acks) != 6*40 {
		t.Fatalf("%d of %d produces acknowledged with both agents up", len(acks), 6*40)
	}
	verifyLog(t, c1, "events", parts, acks)
	verifyLog(t, c2, "events", parts, acks)

	// One PUT per flush, and each file in one commit (a commit may hold
	// several files).
	for _, a := range []*proc{a1, a2} {
		puts := metricValue(t, a.metrics, `floe_objectstore_requests_total{operation="put",result="ok"}`)
		commits := metricValue(t, a.metrics, "floe_metadata_commits_total")
		files := metricValue(t, a.metrics, "floe_batcher_commit_files_sum")
		if puts == 0 || puts != files || commits > files {
			t.Fatalf("agent %s: %v puts, %v files committed in %v commits", a.addr, puts, files, commits)
		}
	}

	// Kill agent 1 with SIGKILL in the middle of producing.
	stop := make(chan struct{})
	var more []acked
	done := make(chan struct{})
	go func() {
		more = produceLoad(t, []*client.Client{c1, c2}, "events", parts, 10, 6, 1000, stop)
		close(done)
	}()
	time.Sleep(700 * time.Millisecond)
	a1.kill()
	time.Sleep(700 * time.Millisecond)
	close(stop)
	<-done
	if len(more) == 0 {
		t.Fatal("nothing acknowledged around the kill")
	}
	// Agent 2 still serves, and has everything acknowledged by either.
	all := append(acks, more...)
	if _, err := c2.Produce(context.Background(), "events", 0, client.Value(nil, []byte("p99-0"))); err != nil {
		t.Fatalf("surviving agent refuses produce: %v", err)
	}
	verifyLog(t, c2, "events", parts, all)
	t.Logf("acknowledged %d records before and %d around the kill", len(acks), len(more))
}

func TestDevEndToEnd(t *testing.T) {
	data := t.TempDir()
	dev := startFloe(t, "dev", "-data", data)
	run := func(stdin string, args ...string) (string, string, error) {
		cmd := exec.Command(floeBin, append(args, "-addr", dev.addr)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	if out, errs, err := run("", "topic", "create", "logs", "-partitions", "3"); err != nil {
		t.Fatalf("topic create: %v %s %s", err, out, errs)
	}
	var lines []string
	for i := 0; i < 300; i++ {
		lines = append(lines, fmt.Sprintf("key%d:value%d", i%17, i))
	}
	if _, errs, err := run(strings.Join(lines, "\n")+"\n", "produce", "logs", "-key-separator", ":"); err != nil {
		t.Fatalf("produce: %v %s", err, errs)
	}
	out, errs, err := run("", "consume", "logs", "-print-key", "-separator", ":")
	if err != nil {
		t.Fatalf("consume: %v %s", err, errs)
	}
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != len(lines) {
		t.Fatalf("consumed %d lines, produced %d", len(got), len(lines))
	}
	seen := map[string]bool{}
	for _, l := range got {
		seen[l] = true
	}
	for _, l := range lines {
		if !seen[l] {
			t.Fatalf("line %q not consumed", l)
		}
	}
	// Follow mode pushes records produced after it started.
	follow := exec.Command(floeBin, "consume", "logs", "-from", "latest", "-follow", "-addr", dev.addr)
	fout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()
	lineCh := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(fout)
		for sc.Scan() {
			lineCh <- sc.Text()
		}
	}()
	// Records are produced one by one until the follower has printed two:
	// however long the subscription takes to resolve "latest" (no sleep
	// to guess it), what it prints are records produced after it
	// started, consecutive, in order.
	stopLive := make(chan struct{})
	produced := make(chan error, 1)
	go func() {
		for i := 1; ; i++ {
			select {
			case <-stopLive:
				produced <- nil
				return
			default:
			}
			if _, errs, err := run(fmt.Sprintf("live-%d\n", i), "produce", "logs", "-partition", "2"); err != nil {
				produced <- fmt.Errorf("produce: %v %s", err, errs)
				return
			}
		}
	}()
	var followed []string
	for len(followed) < 2 {
		select {
		case l := <-lineCh:
			followed = append(followed, l)
		case err := <-produced:
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatalf("follow printed %q of the records produced after it started", followed)
		}
	}
	close(stopLive)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	var first, second int
	if _, err := fmt.Sscanf(followed[0], "live-%d", &first); err != nil {
		t.Fatalf("follow printed %q, not a record produced after it started", followed[0])
	}
	if _, err := fmt.Sscanf(followed[1], "live-%d", &second); err != nil || second != first+1 {
		t.Fatalf("follow printed %q after %q, want live-%d", followed[1], followed[0], first+1)
	}

	// Health service and reflection are on.
	conn, err := grpc.NewClient(dev.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hr, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check: %v %v", hr, err)
	}
	rs, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	rr, err := rs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for _, sv := range rr.GetListServicesResponse().GetService() {
		services = append(services, sv.GetName())
	}
	if !strings.Contains(strings.Join(services, ","), "floe.v1.LogService") {
		t.Fatalf("reflection lists %v", services)
	}
	_ = rs.CloseSend()

	// Same key, same partition, order kept: check through the API.
	c := dialT(t, dev.addr)
	acks := produceLoad(t, []*client.Client{c}, "logs2", 1, 0, 1, 1, nil)
	if len(acks) != 0 {
		t.Fatal("produce to a missing topic was acknowledged")
	}
	if _, err := c.CreateTopic(context.Background(), "seq", 4, nil); err != nil {
		t.Fatal(err)
	}
	acks = produceLoad(t, []*client.Client{c}, "seq", 4, 0, 4, 50, nil)
	verifyLog(t, c, "seq", 4, acks)

	// Errors: one line, non-zero exit.
	_, errs, err = run("", "consume", "nope")
	if err == nil || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, `topic "nope" not found`) {
		t.Fatalf("consume of an unknown topic: err %v, stderr %q", err, errs)
	}
	_, errs, err = run("", "topic", "create", "bad name")
	if err == nil || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, `topic name "bad name" has the character ' '`) {
		t.Fatalf("bad topic name: err %v, stderr %q", err, errs)
	}

	// SIGKILL in the middle of producing: a restarted dev server has every
	// acknowledged record, dense offsets, and keeps serving.
	stop := make(chan struct{})
	var more []acked
	done := make(chan struct{})
	go func() {
		more = produceLoad(t, []*client.Client{c}, "seq", 4, 10, 4, 100000, stop)
		close(done)
	}()
	time.Sleep(800 * time.Millisecond)
	dev.kill()
	close(stop)
	<-done
	if len(more) == 0 {
		t.Fatal("nothing acknowledged before the kill")
	}
	dev2 := startFloe(t, "dev", "-data", data)
	c2 := dialT(t, dev2.addr)
	all := append(acks, more...)
	if _, err := c2.Produce(context.Background(), "seq", 1, client.Value(nil, []byte("p50-0"))); err != nil {
		t.Fatalf("restarted dev server refuses produce: %v", err)
	}
	verifyLog(t, c2, "seq", 4, all)
}

func TestAgentStartErrorsAreOneLine(t *testing.T) {
	cases := [][]string{
		{"agent", "-fail-fast", "-postgres-url", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2", "-s3-bucket", "b", "-s3-endpoint", "http://127.0.0.1:1", "-s3-path-style"},
		{"agent", "-s3-bucket", "b"},
		{"nonsense"},
	}
	for _, args := range cases {
		cmd := exec.Command(floeBin, args...)
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		if err == nil {
			t.Fatalf("%v: exit 0", args)
		}
		if args[0] != "nonsense" && strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Fatalf("%v: stderr is not one line: %q", args, errb.String())
		}
	}
}
