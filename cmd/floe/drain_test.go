package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
)

// stopGracefully sends SIGTERM to p and returns its exit code.
func stopGracefully(t *testing.T, p *proc) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("agent %s did not exit within 30 s of SIGTERM:\n%s", p.addr, p.logText())
	}
	return p.cmd.ProcessState.ExitCode()
}

// TestRollingRestartUnderLoad: an idempotent producer that knows both
// agents produces continuously while agent 1 is stopped with SIGTERM and
// restarted, then agent 2. Each drains (exit 0), and at the end every
// acknowledged record is in the log exactly once at its offset, offsets
// dense, each partition in send order; nothing the producer sent failed.
func TestRollingRestartUnderLoad(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	args := []string{"agent", "-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-prefix", "roll"}
	// Each agent binds its ports first, then restarts on them (its
	// clients know its address).
	var addrs [2][2]string
	start := func(i int) *proc {
		a := append([]string{}, args...)
		if addrs[i][0] != "" {
			a = append(a, "-listen", addrs[i][0], "-metrics-listen", addrs[i][1])
		}
		p := startFloe(t, a...)
		addrs[i] = [2]string{p.addr, p.metrics}
		return p
	}
	agents := []*proc{start(0), start(1)}

	const parts = 4
	admin := dialT(t, addrs[1][0])
	if _, err := admin.CreateTopic(context.Background(), "roll", parts, nil); err != nil {
		t.Fatal(err)
	}

	r := manual.NewBuilderWithScheme("floe-roll")
	r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: addrs[0][0]}, {Addr: addrs[1][0]}}})
	c, err := client.Dial(r.Scheme()+":///agents", grpc.WithResolvers(r), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var (
		mu   sync.Mutex // protects acks and dups
		acks []acked
		dups int
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := c.NewProducer(ctx, "roll", client.ProducerOptions{
		Idempotent: true, MaxInFlight: 16, Retries: 30, MaxBackoff: time.Second, RequestTimeout: 20 * time.Second,
		OnResult: func(tag any, resp *floev1.ProduceResponse) {
			mu.Lock()
			defer mu.Unlock()
			seq := tag.(int)
			acks = append(acks, acked{producer: 0, seq: seq, partition: int32(seq % parts), offset: resp.GetOffsets()[0]})
			if resp.GetDuplicate() {
				dups++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	prodDone := make(chan error, 1)
	sent := 0
	go func() {
		defer close(prodDone)
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				prodDone <- p.Flush()
				return
			default:
			}
			rec := client.Value(nil, []byte(fmt.Sprintf("p0-%d", seq)))
			if err := p.Send(int32(seq%parts), []*floev1.Record{rec}, seq); err != nil {
				prodDone <- err
				return
			}
			sent = seq + 1
		}
	}()
	ackCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acks)
	}
	// waitMore waits until n more records are acknowledged.
	waitMore := func(n int, what string) {
		t.Helper()
		want := ackCount() + n
		deadline := time.Now().Add(30 * time.Second)
		for ackCount() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d acknowledged, want %d", what, ackCount(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	waitMore(200, "before the restarts")
	for i := range agents {
		before := ackCount()
		// The producer is on this agent when it stops (pick-first: agent
		// 1 first, agent 2 once agent 1 went away).
		if n := metricValue(t, agents[i].metrics, "floe_produced_records_total"); n == 0 {
			t.Fatalf("agent %d took no produce before its SIGTERM", i+1)
		}
		if code := stopGracefully(t, agents[i]); code != 0 {
			t.Fatalf("agent %d exited %d after SIGTERM:\n%s", i+1, code, agents[i].logText())
		}
		waitMore(100, fmt.Sprintf("while agent %d is down", i+1))
		agents[i] = start(i)
		waitMore(100, fmt.Sprintf("after agent %d is back", i+1))
		t.Logf("agent %d restarted: %d records acknowledged meanwhile", i+1, ackCount()-before)
	}
	close(stop)
	if err := <-prodDone; err != nil {
		t.Fatalf("the producer failed: %v", err)
	}
	p.Close()

	mu.Lock()
	defer mu.Unlock()
	if len(acks) != sent {
		t.Fatalf("%d records sent, %d acknowledged", sent, len(acks))
	}
	verifyLog(t, dialT(t, addrs[0][0]), "roll", parts, acks)
	t.Logf("rolling restart: %d records sent and acknowledged, %d acknowledged as idempotent duplicates of a retry, all read back once", sent, dups)
}

// TestSIGTERMAnswersWaitingProducersAndEndsSubscriptions: with a linger of
// a minute, a produce call waits in the agent's buffer; SIGTERM flushes it
// and answers it (not Unavailable after the fact), ends an open
// subscription with Unavailable "shutting down" so that its client goes
// elsewhere, and exits 0 well before the linger.
func TestSIGTERMAnswersWaitingProducersAndEndsSubscriptions(t *testing.T) {
	p := &proc{}
	cmd := exec.Command(floeBin, p.withAddrFile(t, []string{"dev", "-data", t.TempDir(), "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0", "-linger", "1m"})...)
	var logs strings.Builder
	var mu sync.Mutex
	cmd.Stderr = lockedWriter{&mu, &logs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.mu, p.cmd, p.logs, p.done = &mu, cmd, &logs, done
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("logs:\n%s", p.logText())
		}
	})
	bound := p.waitAddrs(t, func(a boundAddrs) bool { return a.Metrics != "" })
	addr, metrics := bound.GRPC, bound.Metrics
	p.addr, p.metrics = addr, metrics
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, err := httpStatus(t, p, "/readyz"); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("floe dev not ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := dialT(t, addr)
	if _, err := c.CreateTopic(context.Background(), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	subErr := make(chan error, 1)
	go func() {
		subErr <- c.Subscribe(context.Background(), &floev1.SubscribeRequest{Topic: "t", Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
			func(*floev1.SubscribeResponse) error { return nil })
	}()
	type answer struct {
		resp *floev1.ProduceResponse
		err  error
	}
	prod := make(chan answer, 1)
	go func() {
		resp, err := c.Produce(context.Background(), "t", 0, client.Value(nil, []byte("waiting")))
		prod <- answer{resp, err}
	}()
	// The produce call waits in the buffer (linger 1m).
	for metricValue(t, metrics, "floe_batcher_buffered_bytes") == 0 {
		select {
		case a := <-prod:
			t.Fatalf("produce answered before SIGTERM with a 1m linger: %v %v", a.resp, a.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	began := time.Now()
	if code := stopGracefully(t, p); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("drain took %v", took)
	}
	select {
	case a := <-prod:
		if a.err != nil || len(a.resp.GetOffsets()) != 1 || a.resp.GetOffsets()[0] != 0 {
			t.Fatalf("waiting produce: %v, %v; want offset 0 acknowledged by the drain", a.resp, a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting produce not answered")
	}
	select {
	case err := <-subErr:
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "shutting down") {
			t.Fatalf("subscription ended with %v, want Unavailable (shutting down)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not ended")
	}
}
