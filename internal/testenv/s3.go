package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// versitygwModule is the S3 server the tests run against, built into
// <repo>/.tools when missing.
const versitygwModule = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// Environment variables naming an existing S3 server to use instead of
// starting versitygw.
const (
	EnvS3Endpoint  = "FLOE_TEST_S3_ENDPOINT"
	EnvS3AccessKey = "FLOE_TEST_S3_ACCESS_KEY"
	EnvS3SecretKey = "FLOE_TEST_S3_SECRET_KEY"
)

// S3Config locates a fresh, empty bucket. Use path-style addressing.
type S3Config struct {
	Endpoint, Region, AccessKey, SecretKey, Bucket string
}

// s3Server is the server shared by a test process.
type s3Server struct {
	endpoint, access, secret string
	external                 bool
	client                   *s3.Client
}

var (
	s3Once    sync.Once
	s3Shared  *s3Server
	s3Err     error
	bucketSeq atomic.Int64
)

// S3Endpoint returns the endpoint and root credentials of the test process's
// S3 server, starting versitygw on first use (or using the server named by
// FLOE_TEST_S3_ENDPOINT, FLOE_TEST_S3_ACCESS_KEY, FLOE_TEST_S3_SECRET_KEY).
// The server is stopped by Main. It fails t if no server can be had.
func S3Endpoint(t testing.TB) (endpoint, access, secret string) {
	t.Helper()
	srv := sharedS3(t)
	return srv.endpoint, srv.access, srv.secret
}

// S3 returns a fresh, empty bucket on the test process's S3 server. Buckets
// on an external server are emptied and removed when t ends.
func S3(t testing.TB) S3Config {
	t.Helper()
	srv := sharedS3(t)
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatalf("testenv: random bucket name: %v", err)
	}
	bucket := fmt.Sprintf("floe-test-%s-%d", hex.EncodeToString(rnd[:]), bucketSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("testenv: create bucket %q at %s: %v", bucket, srv.endpoint, err)
	}
	if srv.external {
		t.Cleanup(func() { removeBucket(t, srv.client, bucket) })
	}
	return S3Config{
		Endpoint:  srv.endpoint,
		Region:    "us-east-1",
		AccessKey: srv.access,
		SecretKey: srv.secret,
		Bucket:    bucket,
	}
}

func sharedS3(t testing.TB) *s3Server {
	t.Helper()
	s3Once.Do(func() { s3Shared, s3Err = startS3() })
	if s3Err != nil {
		t.Fatalf("testenv: no S3 server: %v", s3Err)
	}
	return s3Shared
}

func newS3Client(endpoint, access, secret string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
		HTTPClient:   &http.Client{Timeout: 30 * time.Second},
	})
}

// removeBucket empties and deletes bucket, logging failures.
func removeBucket(t testing.TB, client *s3.Client, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Logf("testenv: list bucket %q for removal: %v", bucket, err)
			return
		}
		for _, obj := range page.Contents {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: obj.Key}); err != nil {
				t.Logf("testenv: delete %q from bucket %q: %v", aws.ToString(obj.Key), bucket, err)
			}
		}
	}
	if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Logf("testenv: delete bucket %q: %v", bucket, err)
	}
}

func startS3() (*s3Server, error) {
	if endpoint := os.Getenv(EnvS3Endpoint); endpoint != "" {
		access, secret := os.Getenv(EnvS3AccessKey), os.Getenv(EnvS3SecretKey)
		if access == "" || secret == "" {
			return nil, fmt.Errorf("%s is set but %s or %s is empty", EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey)
		}
		return &s3Server{endpoint: endpoint, access: access, secret: secret, external: true,
			client: newS3Client(endpoint, access, secret)}, nil
	}
	bin, err := versitygwBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-versitygw-")
	if err != nil {
		return nil, fmt.Errorf("versitygw data directory: %w", err)
	}
	const access, secret = "floetestaccess", "floetestsecretkey"
	var lastErr error
	for range 3 { // a free port may be taken before versitygw binds it
		endpoint, stop, err := runVersitygw(bin, dir, access, secret)
		if err == nil {
			registerCleanup(func() {
				stop()
				_ = os.RemoveAll(dir)
			})
			return &s3Server{endpoint: endpoint, access: access, secret: secret,
				client: newS3Client(endpoint, access, secret)}, nil
		}
		lastErr = err
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
}

// runVersitygw starts versitygw on a free loopback port, serving dir/data,
// and waits until it answers HTTP. stop ends it and waits for it.
func runVersitygw(bin, dir, access, secret string) (endpoint string, stop func(), err error) {
	port, err := s3FreePort()
	if err != nil {
		return "", nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", nil, fmt.Errorf("versitygw data directory: %w", err)
	}
	logPath := filepath.Join(dir, fmt.Sprintf("versitygw-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, fmt.Errorf("versitygw log file: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--access", access, "--secret", secret, "--port", addr, "--quiet", "--keep-alive", "posix", data)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The child dies with the thread that started it; that thread is
	// locked to the goroutine below for the child's whole life.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}

	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
	}()
	if err := <-started; err != nil {
		<-exited
		return "", nil, fmt.Errorf("start %s: %w", bin, err)
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	endpoint = "http://" + addr
	if err := waitHTTP(endpoint, exited, 20*time.Second); err != nil {
		stop()
		return "", nil, fmt.Errorf("versitygw on %s: %w; log %s:\n%s", addr, err, logPath, logTail(logPath))
	}
	return endpoint, stop, nil
}

// waitHTTP polls url until it answers (any status) or the process exits.
func waitHTTP(url string, exited <-chan struct{}, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited before answering")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func s3FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return strings.TrimSpace(string(b))
}

// versitygwBinary returns <repo>/.tools/versitygw, building it first if it
// is missing. Concurrent test processes serialise on a file lock.
func versitygwBinary() (string, error) {
	tools := filepath.Join(RepoRoot(), ".tools")
	bin := filepath.Join(tools, "versitygw")
	if toolExecutable(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", tools, err)
	}
	lock, err := os.OpenFile(filepath.Join(tools, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("open build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("take build lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if toolExecutable(bin) { // built by another process while we waited
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "install", versitygwModule)
	cmd.Dir = tools
	cmd.Env = append(os.Environ(), "GOBIN="+tools)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build versitygw (go install %s): %w\n%s", versitygwModule, err, out)
	}
	if !toolExecutable(bin) {
		return "", fmt.Errorf("go install %s did not produce %s", versitygwModule, bin)
	}
	return bin, nil
}

func toolExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
