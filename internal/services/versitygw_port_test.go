package services

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestVersitygwPortOfAnotherServer: a versitygw whose first port is held
// by another versitygw (another test process's, with the same keys) must
// not take that server for its own: it comes up on another port, and a
// bucket made through its endpoint is in its own data folder.
func TestVersitygwPortOfAnotherServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other, err := StartVersitygw(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	calls := 0
	s3FreeAddr = func() (string, error) {
		calls++
		if calls == 1 {
			return strings.TrimPrefix(other.Endpoint, "http://"), nil
		}
		return FreeAddr()
	}
	defer func() { s3FreeAddr = FreeAddr }()
	srv, err := StartVersitygw(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if srv.Endpoint == other.Endpoint {
		t.Fatalf("came up on the other server's endpoint %s", srv.Endpoint)
	}
	if _, err := srv.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("own")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(srv.dir, "data", "own")); err != nil {
		t.Fatalf("bucket made through %s is not in its data folder: %v", srv.Endpoint, err)
	}
}
