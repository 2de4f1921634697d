package main_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
)

// follower is a running `floe consume -follow` printing
// "partition,offset,value" lines.
type follower struct {
	cmd    *exec.Cmd
	mu     sync.Mutex // protects lines and stderr
	lines  []string
	stderr strings.Builder
	done   chan struct{}
}

func startFollower(t *testing.T, args ...string) *follower {
	t.Helper()
	f := &follower{done: make(chan struct{})}
	f.cmd = exec.Command(floeBin, append([]string{"consume"}, args...)...)
	f.cmd.Stderr = lockedWriter{&f.mu, &f.stderr}
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(f.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.mu.Lock()
			f.lines = append(f.lines, sc.Text())
			f.mu.Unlock()
		}
		_ = f.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = f.cmd.Process.Kill()
		<-f.done
		if t.Failed() {
			t.Logf("consumer stderr:\n%s", f.errText())
		}
	})
	return f
}

func (f *follower) errText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stderr.String()
}

// waitLines waits until the follower printed n lines and returns them.
func (f *follower) waitLines(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		got := append([]string(nil), f.lines...)
		f.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-f.done:
			t.Fatalf("consumer exited after %d of %d lines: %s", len(got), n, f.errText())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer printed %d of %d lines", len(got), n)
		}
	}
}

// waitErr waits until the follower's stderr says what.
func (f *follower) waitErr(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(f.errText(), what) {
		select {
		case <-f.done:
			t.Fatalf("consumer exited before saying %q: %s", what, f.errText())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer did not say %q: %s", what, f.errText())
		}
	}
}

// produceIdem produces values prefix-0.. prefix-(n-1), alternating
// between partitions, with an idempotent producer (so the retries a
// restart causes duplicate nothing).
func produceIdem(t *testing.T, c *client.Client, topic string, parts int32, prefix string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := c.NewProducer(ctx, topic, client.ProducerOptions{Idempotent: true, MinBackoff: 50 * time.Millisecond, Retries: 30})
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		rec := &floev1.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		if err := p.Send(int32(i)%parts, []*floev1.Record{rec}, i); err != nil {
			t.Fatalf("produce %s-%d: %v", prefix, i, err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatalf("produce %s: %v", prefix, err)
	}
}

// checkFollowed checks lines "partition,offset,value": per partition dense
// offsets from 0, and each of want exactly once.
func checkFollowed(t *testing.T, lines []string, want []string) {
	t.Helper()
	next := map[int]int64{}
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.SplitN(l, ",", 3)
		if len(f) != 3 {
			t.Fatalf("line %q is not partition,offset,value", l)
		}
		p, _ := strconv.Atoi(f[0])
		off, _ := strconv.ParseInt(f[1], 10, 64)
		if off != next[p] {
			t.Fatalf("partition %d: offset %d after %d (gap or duplicate); lines %v", p, off, next[p]-1, lines)
		}
		next[p]++
		if seen[f[2]] {
			t.Fatalf("value %q printed twice", f[2])
		}
		seen[f[2]] = true
	}
	for _, w := range want {
		if !seen[w] {
			t.Fatalf("value %q not printed", w)
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
}

// TestConsumeFollowSurvivesAgentAndPostgresRestarts: a follower given two
// agents keeps printing, from the next offset, with no gap and no
// duplicate, when its agent is killed and when PostgreSQL restarts.
func TestConsumeFollowSurvivesAgentAndPostgresRestarts(t *testing.T) {
	dsn := testenv.Postgres(t)
	args := agentArgs(t, dsn)
	a1 := startFloe(t, args...)
	a2 := startFloe(t, args...)
	c2 := dialT(t, a2.addr)
	const parts = 2
	if _, err := c2.CreateTopic(context.Background(), "follow", parts, nil); err != nil {
		t.Fatal(err)
	}
	f := startFollower(t, "follow", "-follow", "-print-offset", "-separator", ",", "-addr", a1.addr+","+a2.addr)
	var want []string
	produce := func(prefix string, n int) {
		produceIdem(t, c2, "follow", parts, prefix, n)
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("%s-%d", prefix, i))
		}
		f.waitLines(t, len(want))
	}
	produce("before", 20)

	a1.kill() // the follower's agent
	produce("agent-killed", 20)

	restart := testenv.StopPostgres(t)
	waitReady(t, a2, 503, false) // the agent's polls of PostgreSQL fail
	restart()
	produce("pg-restarted", 20)

	// One last record per partition: a duplicate of an earlier one would
	// be printed before it (each partition in order).
	produce("end", parts)
	f.mu.Lock()
	lines := append([]string(nil), f.lines...)
	f.mu.Unlock()
	checkFollowed(t, lines, want)
	select {
	case <-f.done:
		t.Fatalf("consumer exited: %s", f.errText())
	default:
	}
	if !strings.Contains(f.errText(), "resuming") {
		t.Fatalf("consumer said nothing of its resumptions: %q", f.errText())
	}
}

// A non-retriable failure ends a follower with one line and exit 1.
func TestConsumeFollowNonRetriableExits(t *testing.T) {
	dev := startFloe(t, "dev", "-data", t.TempDir())
	out, errs, code := runFloe(t, "", "consume", "missing", "-follow", "-addr", dev.addr)
	if code != 1 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, `topic "missing" not found`) {
		t.Fatalf("follow of a missing topic: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// With one agent, a follower waits out the agent's restart and resumes
// where it stopped.
func TestConsumeFollowSurvivesRestartOfItsOnlyAgent(t *testing.T) {
	data := t.TempDir()
	dev := startFloe(t, "dev", "-data", data)
	devArgs := []string{"dev", "-data", data, "-listen", dev.addr, "-metrics-listen", dev.metrics} // the restart's: the same ports
	c := dialT(t, dev.addr)
	if _, err := c.CreateTopic(context.Background(), "one", 3, nil); err != nil {
		t.Fatal(err)
	}
	f := startFollower(t, "one", "-follow", "-print-offset", "-separator", ",", "-addr", dev.addr)
	produceIdem(t, c, "one", 3, "a", 15)
	f.waitLines(t, 15)
	dev.kill()
	f.waitErr(t, "lost the subscription at "+dev.addr) // the follower retries meanwhile
	dev2 := startFloe(t, devArgs...)
	produceIdem(t, dialT(t, dev2.addr), "one", 3, "b", 15)
	// One last record per partition: a duplicate of an earlier one would
	// be printed before it (each partition in order).
	produceIdem(t, dialT(t, dev2.addr), "one", 3, "end", 3)
	f.waitLines(t, 33)
	f.mu.Lock()
	lines := append([]string(nil), f.lines...)
	f.mu.Unlock()
	var want []string
	for _, p := range []struct {
		prefix string
		n      int
	}{{"a", 15}, {"b", 15}, {"end", 3}} {
		for i := 0; i < p.n; i++ {
			want = append(want, fmt.Sprintf("%s-%d", p.prefix, i))
		}
	}
	checkFollowed(t, lines, want)
	// It said that it lost the agent, and that it reconnected.
	if e := f.errText(); !strings.Contains(e, "lost the subscription at "+dev.addr) || !strings.Contains(e, "reconnected through "+dev.addr) {
		t.Errorf("the follower's stderr does not say it reconnected:\n%s", e)
	}
}
