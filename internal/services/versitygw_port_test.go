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
	testS3PortOfAnotherServer(t, func(ctx context.Context) (*S3Server, error) { return StartVersitygw(ctx, nil) })
}

// testS3PortOfAnotherServer starts an S3 server, then another whose first
// port is the first's, and checks that the second came up on its own
// port, serving its own data folder. It returns the second (stopped at
// the end of t).
func testS3PortOfAnotherServer(t *testing.T, start func(context.Context) (*S3Server, error)) *S3Server {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	other, err := start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Stop)
	calls := takenFirst(t, &s3FreeAddr, strings.TrimPrefix(other.Endpoint, "http://"), FreeAddr)
	srv, err := start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	if srv.Endpoint == other.Endpoint {
		t.Fatalf("came up on the other server's endpoint %s", srv.Endpoint)
	}
	if _, err := srv.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("own")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(srv.dir, "data", "own")); err != nil {
		t.Fatalf("bucket made through %s is not in its data folder: %v", srv.Endpoint, err)
	}
	t.Logf("came up on %s after %d ports tried", srv.Endpoint, *calls)
	return srv
}

// takenFirst makes *pick return taken on its first call and what free
// returns after, until the end of t; it returns the count of calls.
func takenFirst[T any](t *testing.T, pick *func() (T, error), taken T, free func() (T, error)) *int {
	calls := 0
	*pick = func() (T, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return free()
	}
	t.Cleanup(func() { *pick = free })
	return &calls
}
