package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-broker/floe/internal/services"
)

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
	*services.S3Server
	external bool
	client   *s3.Client
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
	return srv.Endpoint, srv.AccessKey, srv.SecretKey
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
		t.Fatalf("testenv: create bucket %q at %s: %v", bucket, srv.Endpoint, err)
	}
	if srv.external {
		t.Cleanup(func() { removeBucket(t, srv.client, bucket) })
	}
	return S3Config{
		Endpoint:  srv.Endpoint,
		Region:    srv.Region,
		AccessKey: srv.AccessKey,
		SecretKey: srv.SecretKey,
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

// startS3 names the server of FLOE_TEST_S3_ENDPOINT, or starts versitygw
// and registers its shutdown with Main.
func startS3() (*s3Server, error) {
	if endpoint := os.Getenv(EnvS3Endpoint); endpoint != "" {
		access, secret := os.Getenv(EnvS3AccessKey), os.Getenv(EnvS3SecretKey)
		if access == "" || secret == "" {
			return nil, fmt.Errorf("%s is set but %s or %s is empty", EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey)
		}
		srv := &services.S3Server{Endpoint: endpoint, Region: "us-east-1", AccessKey: access, SecretKey: secret}
		return &s3Server{S3Server: srv, external: true, client: srv.Client()}, nil
	}
	srv, err := services.StartVersitygw(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	registerCleanup(srv.Stop)
	return &s3Server{S3Server: srv, client: srv.Client()}, nil
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
