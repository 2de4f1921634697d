package main_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
)

// TestAgentRefusesMissingBucket: a bucket that does not exist ends the
// start at once, even without -fail-fast, in one line that names it.
func TestAgentRefusesMissingBucket(t *testing.T) {
	dsn := testenv.Postgres(t)
	args := agentArgs(t, dsn)
	for i := range args {
		if args[i] == "-s3-bucket" {
			args[i+1] = "no-such-bucket-floe"
		}
	}
	cmd := exec.Command(floeBin, append(args, "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0")...)
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	if err == nil || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 ||
		!strings.Contains(errb.String(), "object store") || !strings.Contains(errb.String(), "no-such-bucket-floe") {
		t.Fatalf("agent with a missing bucket: err %v, stderr %q", err, errb.String())
	}
}

// TestAgentConfigFile: an agent runs from a config file alone (no flags
// for the stores), a bad setting in it stops the start naming it, and
// `floe config print` shows the file's values with secrets masked.
func TestAgentConfigFile(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	dir := t.TempDir()
	good := "postgres:\n  url: " + dsn + "\ns3:\n  bucket: " + s3.Bucket + "\n  endpoint: " + s3.Endpoint +
		"\n  region: " + s3.Region + "\n  access_key: " + s3.AccessKey + "\n  secret_key: " + s3.SecretKey +
		"\n  path_style: true\n  prefix: cfg\nlog:\n  format: json\n"
	path := filepath.Join(dir, "floe.yaml")
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startFloe(t, "agent", "-config", path)
	c := dialT(t, a.addr)
	if _, err := c.CreateTopic(t.Context(), "from-config", 1, nil); err != nil {
		t.Fatalf("create topic on an agent configured by file: %v", err)
	}
	if !strings.Contains(a.logText(), `"msg":"floe agent serving"`) {
		t.Fatalf("log.format json: logs are\n%s", a.logText())
	}

	out, err := exec.Command(floeBin, "config", "print", "-config", path).Output()
	if err != nil {
		t.Fatalf("config print: %v", err)
	}
	if strings.Contains(string(out), s3.SecretKey) || !strings.Contains(string(out), "bucket: "+s3.Bucket) {
		t.Fatalf("config print shows the secret or misses the bucket:\n%s", out)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(good+"batcher:\n  linger: 0s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(floeBin, "agent", "-config", bad, "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Run(); err == nil || !strings.Contains(errb.String(), "batcher.linger: 0s must be positive") {
		t.Fatalf("agent with linger 0: err %v, stderr %q", err, errb.String())
	}
}

// TestAgentRefusesBucketThatRefusesWrites: a bucket that exists but
// refuses writes (its directory on the S3 server made immutable) fails the
// start's write probe; with -fail-fast the agent exits in one line naming
// the probe.
func TestAgentRefusesBucketThatRefusesWrites(t *testing.T) {
	if os.Getenv(testenv.EnvS3Endpoint) != "" {
		t.Skip("an external S3 server: its buckets' directories are not here")
	}
	chattr, err := exec.LookPath("chattr") // e2fsprogs
	if err != nil {
		t.Fatal(err)
	}
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "floe-versitygw-*", "data", s3.Bucket))
	if len(dirs) != 1 {
		t.Fatalf("the bucket's directory on the S3 server: found %v", dirs)
	}
	if out, err := exec.Command(chattr, "+i", dirs[0]).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(chattr, "-i", dirs[0]).Run() })
	args := []string{"agent", "-fail-fast", "-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style",
		"-s3-prefix", "p", "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0"}
	// Without the probe the agent would serve: bound the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, floeBin, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	err = cmd.Run()
	if err == nil || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 || !strings.Contains(errb.String(), "write probe (put floe-start-probe/") || !strings.Contains(errb.String(), `"p/floe-start-probe/`) {
		t.Fatalf("agent with a bucket refusing writes: err %v, stderr %q", err, errb.String())
	}
}

// TestCompactorFromConfigFile: floe compactor reads the same file as the
// agents (its own section and theirs side by side), logs JSON as told,
// serves /metrics with its metrics, and stops on SIGTERM with exit 0.
func TestCompactorFromConfigFile(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	// The compactor binds its port and says which in its addr file.
	p := &proc{addrFile: filepath.Join(t.TempDir(), "addrs.json")}
	conf := "postgres:\n  url: " + dsn + "\ns3:\n  bucket: " + s3.Bucket + "\n  endpoint: " + s3.Endpoint +
		"\n  region: " + s3.Region + "\n  access_key: " + s3.AccessKey + "\n  secret_key: " + s3.SecretKey +
		"\n  path_style: true\nlog:\n  format: json\nbatcher:\n  linger: 10ms\ncompactor:\n  metrics_listen: 127.0.0.1:0\n  addr_file: " +
		p.addrFile + "\n  interval: 100ms\n  owner: c1\n"
	path := filepath.Join(t.TempDir(), "floe.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(floeBin, "compactor")
	cmd.Env = append(os.Environ(), "FLOE_CONFIG="+path)
	var mu sync.Mutex
	var logs strings.Builder
	cmd.Stderr = lockedWriter{&mu, &logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.mu, p.cmd, p.logs, p.done = &mu, cmd, &logs, done
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	metrics := p.waitAddrs(t, func(a boundAddrs) bool { return a.Metrics != "" }).Metrics
	deadline := time.Now().Add(20 * time.Second)
	for metricValue0(metrics, "floe_compactor_passes_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no compactor pass counted:\n%s", p.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := stopGracefully(t, p); code != 0 {
		t.Fatalf("compactor exit %d:\n%s", code, p.logText())
	}
	if !strings.Contains(p.logText(), `"msg":"floe compactor running"`) || !strings.Contains(p.logText(), `"owner":"c1"`) {
		t.Fatalf("logs are not JSON with the configured owner:\n%s", p.logText())
	}
}

// metricValue0 is metricValue that answers 0 while the server is not up.
func metricValue0(addr, name string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}
