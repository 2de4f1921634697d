//go:build engines

// The MinIO test runs with the engine suite (make test-engines), which
// builds MinIO into ~/.cache/floe/tools: make test does not build it.

package services

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestMinIOPortOfAnotherServer: the same for MinIO (which, unlike
// versitygw, keeps no bucket made beside its data: it proves itself with
// a bucket it makes and removes, which no other listing shows).
func TestMinIOPortOfAnotherServer(t *testing.T) {
	srv := testS3PortOfAnotherServer(t, func(ctx context.Context) (*S3Server, error) {
		return StartMinIO(ctx, "floetest", "floetestsecret", nil)
	})
	out, err := srv.Client().ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Buckets) != 1 {
		t.Fatalf("%d buckets, want only the test's (the readiness bucket is removed)", len(out.Buckets))
	}
}
