package services

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// MinIOModule is the MinIO server the engine suite runs as its S3 store
// (the store floe's deployment names). MinIO is AGPL: it is built with
// `go install` into the tools directory and run as a separate test
// server, never imported into floe's module. Its releases carry no semver
// tags, so the pin is the pseudo-version of a commit.
const MinIOModule = "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

// StartMinIO starts a MinIO server on a free loopback port with the given
// root user and password (at least 3 and 8 characters), building it into
// ToolsDir on first use (minutes).
func StartMinIO(ctx context.Context, access, secret string, log *slog.Logger) (*S3Server, error) {
	bin, err := Tool(ctx, "minio", MinIOModule, log)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-minio-")
	if err != nil {
		return nil, fmt.Errorf("services: minio temp dir: %w", err)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("services: minio data dir: %w", err)
	}
	env := append(os.Environ(), "MINIO_ROOT_USER="+access, "MINIO_ROOT_PASSWORD="+secret,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1")
	var lastErr error
	for range 3 { // a free port may be taken before minio binds it
		addr, err := FreeAddr()
		if err != nil {
			lastErr = err
			continue
		}
		console, err := FreeAddr()
		if err != nil {
			lastErr = err
			continue
		}
		proc, err := Start(ProcessSpec{Path: bin, Env: env,
			Args:    []string{"server", "--quiet", "--address", addr, "--console-address", console, data},
			LogPath: filepath.Join(dir, "minio.log")})
		if err != nil {
			lastErr = err
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = WaitHTTPOK(wctx, "http://"+addr+"/minio/health/live", proc)
		cancel()
		if err != nil {
			proc.Stop(syscall.SIGTERM, 5*time.Second)
			lastErr = err
			continue
		}
		return &S3Server{Endpoint: "http://" + addr, Region: "us-east-1", AccessKey: access, SecretKey: secret, dir: dir, proc: proc}, nil
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("services: minio: %w", lastErr)
}
