package services

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// MinIOModule is the MinIO server the engine suite runs as its S3 store
// (the store floe's deployment names). MinIO is AGPL: it is built with
// `go install` into the tools directory and run as a separate test
// server, never imported into floe's module. Its releases carry no semver
// tags, so the pin is the pseudo-version of a commit.
const MinIOModule = "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

// StartMinIO starts a MinIO server on a free loopback port with the given
// root user and password (at least 3 and 8 characters), building it into
// ToolsDir on first use (minutes). It is ready once live and proven to be
// this server, not another MinIO holding the port with the same keys: a
// bucket made through the port is a folder of this server's data.
func StartMinIO(ctx context.Context, access, secret string, log *slog.Logger) (*S3Server, error) {
	var data string
	return startS3(ctx, s3Spec{name: "minio", module: MinIOModule, access: access, secret: secret, timeout: 30 * time.Second,
		env: append(os.Environ(), "MINIO_ROOT_USER="+access, "MINIO_ROOT_PASSWORD="+secret,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1"),
		args: func(addr, dataDir string) ([]string, error) {
			data = dataDir
			// The console (off: MINIO_BROWSER) on a port of the kernel's.
			return []string{"server", "--quiet", "--address", addr, "--console-address", "127.0.0.1:0", data}, nil
		},
		ready: func(ctx context.Context, addr string, p *Process) error {
			if err := WaitHTTPOK(ctx, "http://"+addr+"/minio/health/live", p); err != nil {
				return err
			}
			s := &S3Server{Endpoint: "http://" + addr, Region: "us-east-1", AccessKey: access, SecretKey: secret}
			own := fmt.Sprintf("floe-own-%d-%d", os.Getpid(), time.Now().UnixNano())
			// Live may come before the S3 API serves (503 while MinIO
			// initialises): make the bucket until it is made.
			for {
				err := s.CreateBucket(ctx, own)
				if err == nil {
					break
				}
				select {
				case <-p.Exited():
					return fmt.Errorf("services: minio exited at start: %v\n%s", p.Err(), p.LogTail())
				case <-ctx.Done():
					return fmt.Errorf("services: minio on %s: %w (last error: %v)", addr, ctx.Err(), err)
				case <-time.After(100 * time.Millisecond):
				}
			}
			_, statErr := os.Stat(filepath.Join(data, own))
			if _, err := s.Client().DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(own)}); err != nil {
				return fmt.Errorf("services: minio: delete bucket %s: %w", own, err)
			}
			if statErr != nil {
				return fmt.Errorf("services: the server on %s is not this MinIO (another holds the port): %w", addr, statErr)
			}
			return nil
		},
	}, log)
}
