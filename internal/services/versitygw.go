package services

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	// RootCAs, optional, are the CAs Client trusts (a server with TLS).
	RootCAs *x509.CertPool
	dir     string
	proc    *Process // nil for an existing server
}

// StartVersitygw starts versitygw on a free loopback port, building it
// into ToolsDir on first use.
func StartVersitygw(ctx context.Context, log *slog.Logger) (*S3Server, error) {
	return StartVersitygwIn(ctx, "", log)
}

// StartVersitygwIn is StartVersitygw keeping its objects in a temporary
// folder under parent ("": the system's temporary folder), e.g. a tmpfs.
func StartVersitygwIn(ctx context.Context, parent string, log *slog.Logger) (*S3Server, error) {
	const access, secret = "floebenchaccess", "floebenchsecretkey"
	// A bucket only this server has (a folder of its posix data), so that
	// another versitygw that holds the port (another test process's, with
	// the same keys) is not taken for it.
	var own, ownDir string
	return startS3(ctx, s3Spec{name: "versitygw", module: VersitygwModule, access: access, secret: secret, timeout: 20 * time.Second, parent: parent,
		args: func(addr, data string) ([]string, error) {
			own = fmt.Sprintf("floe-own-%d-%d", os.Getpid(), time.Now().UnixNano())
			ownDir = filepath.Join(data, own)
			if err := os.Mkdir(ownDir, 0o755); err != nil {
				return nil, fmt.Errorf("services: versitygw: %w", err)
			}
			return []string{"--access", access, "--secret", secret, "--port", addr, "--quiet", "--keep-alive", "posix", data}, nil
		},
		ready: func(ctx context.Context, addr string, p *Process) error {
			defer os.RemoveAll(ownDir)
			if err := WaitHTTP(ctx, "http://"+addr, p); err != nil {
				return err
			}
			s := &S3Server{Endpoint: "http://" + addr, Region: "us-east-1", AccessKey: access, SecretKey: secret}
			if _, err := s.Client().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(own)}); err != nil {
				return fmt.Errorf("services: the server on %s is not this versitygw (another holds the port): %w", addr, err)
			}
			return nil
		},
	}, log)
}

// s3FreeAddr picks the S3 servers' ports; tests replace it.
var s3FreeAddr = FreeAddr

// s3Spec is how startS3 runs one S3 server binary.
type s3Spec struct {
	name, module   string // the tool's name in ToolsDir and its module@version
	access, secret string
	env            []string // the process's environment (nil: this one's)
	parent         string   // the data's temporary folder goes under it ("": the system's)
	timeout        time.Duration
	// args is the command line serving on addr with its data under data
	// (it may take more free addresses).
	args func(addr, data string) ([]string, error)
	// ready waits until the server on addr answers.
	ready func(ctx context.Context, addr string, p *Process) error
}

// startS3 builds the server into ToolsDir on first use and starts it on a
// free loopback port, trying three ports (one may be taken before the
// server binds it).
func startS3(ctx context.Context, sp s3Spec, log *slog.Logger) (*S3Server, error) {
	bin, err := Tool(ctx, sp.name, sp.module, log)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(sp.parent, "floe-"+sp.name+"-")
	if err != nil {
		return nil, fmt.Errorf("services: %s temp dir: %w", sp.name, err)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("services: %s data dir: %w", sp.name, err)
	}
	var lastErr error
	for range 3 {
		addr, err := s3FreeAddr()
		if err != nil {
			lastErr = err
			continue
		}
		args, err := sp.args(addr, data)
		if err != nil {
			lastErr = err
			continue
		}
		proc, err := Start(ProcessSpec{Path: bin, Env: sp.env, Args: args, LogPath: filepath.Join(dir, sp.name+".log")})
		if err != nil {
			lastErr = err
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, sp.timeout)
		err = sp.ready(wctx, addr, proc)
		cancel()
		if err != nil {
			proc.Stop(syscall.SIGTERM, 5*time.Second)
			lastErr = err
			continue
		}
		return &S3Server{Endpoint: "http://" + addr, Region: "us-east-1", AccessKey: sp.access, SecretKey: sp.secret, dir: dir, proc: proc}, nil
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("services: %s: %w", sp.name, lastErr)
}

// Client returns an S3 client of the server (path-style addressing).
func (s *S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		HTTPClient:   &http.Client{Timeout: 30 * time.Second, Transport: s.transport()},
	})
}

// transport trusts RootCAs when set.
func (s *S3Server) transport() http.RoundTripper {
	if s.RootCAs == nil {
		return http.DefaultTransport
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: s.RootCAs}
	return tr
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
