package services

import (
	"context"
	"log/slog"
	"os"
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
	return startS3(ctx, s3Spec{name: "minio", module: MinIOModule, access: access, secret: secret, timeout: 30 * time.Second,
		env: append(os.Environ(), "MINIO_ROOT_USER="+access, "MINIO_ROOT_PASSWORD="+secret,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1"),
		args: func(addr, data string) ([]string, error) {
			console, err := FreeAddr()
			if err != nil {
				return nil, err
			}
			return []string{"server", "--quiet", "--address", addr, "--console-address", console, data}, nil
		},
		ready: func(ctx context.Context, addr string, p *Process) error {
			return WaitHTTPOK(ctx, "http://"+addr+"/minio/health/live", p)
		},
	}, log)
}
