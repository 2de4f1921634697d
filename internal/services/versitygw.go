package services

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Server is a versitygw S3 server (posix backend) on a temporary
// directory. One made from its exported fields names an existing S3
// server: Client and CreateBucket work, Stop does nothing and Pid is 0.
type S3Server struct {
	Endpoint, Region, AccessKey, SecretKey string
	dir                                    string
	proc                                   *Process // nil for an existing server
}

// StartVersitygw starts versitygw on a free loopback port, building it
// into ToolsDir on first use.
func StartVersitygw(ctx context.Context, log *slog.Logger) (*S3Server, error) {
	bin, err := Tool(ctx, "versitygw", VersitygwModule, log)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-versitygw-")
	if err != nil {
		return nil, fmt.Errorf("services: versitygw temp dir: %w", err)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("services: versitygw data dir: %w", err)
	}
	const access, secret = "floebenchaccess", "floebenchsecretkey"
	var lastErr error
	for range 3 { // a free port may be taken before versitygw binds it
		addr, err := FreeAddr()
		if err != nil {
			lastErr = err
			continue
		}
		proc, err := Start(ProcessSpec{Path: bin,
			Args:    []string{"--access", access, "--secret", secret, "--port", addr, "--quiet", "--keep-alive", "posix", data},
			LogPath: filepath.Join(dir, "versitygw.log")})
		if err != nil {
			lastErr = err
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err = WaitHTTP(wctx, "http://"+addr, proc)
		cancel()
		if err != nil {
			proc.Stop(syscall.SIGTERM, 5*time.Second)
			lastErr = err
			continue
		}
		return &S3Server{Endpoint: "http://" + addr, Region: "us-east-1", AccessKey: access, SecretKey: secret, dir: dir, proc: proc}, nil
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("services: versitygw: %w", lastErr)
}

// Client returns an S3 client of the server (path-style addressing).
func (s *S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		HTTPClient:   &http.Client{Timeout: 30 * time.Second},
	})
}

// CreateBucket creates a bucket.
func (s *S3Server) CreateBucket(ctx context.Context, name string) error {
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("services: create bucket %q: %w", name, err)
	}
	return nil
}

// Pid is the server's process id (0 for an existing server).
func (s *S3Server) Pid() int { return s.proc.Pid() }

// Stop ends the server and removes its data. It does nothing for an
// existing server.
func (s *S3Server) Stop() {
	s.proc.Stop(syscall.SIGTERM, 5*time.Second)
	_ = os.RemoveAll(s.dir) // "" for an existing server: nothing
}
