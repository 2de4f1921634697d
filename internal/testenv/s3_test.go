package testenv

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-broker/floe/internal/services"
)

func TestS3GivesFreshBuckets(t *testing.T) {
	a, b := S3(t), S3(t)
	if a.Bucket == b.Bucket {
		t.Fatalf("two calls returned the same bucket %q", a.Bucket)
	}
	if a.Endpoint != b.Endpoint {
		t.Errorf("two calls started two servers: %s and %s", a.Endpoint, b.Endpoint)
	}
	endpoint, access, secret := S3Endpoint(t)
	if endpoint != a.Endpoint || access != a.AccessKey || secret != a.SecretKey {
		t.Errorf("S3Endpoint = %s %s %s, want the server of S3", endpoint, access, secret)
	}
	if a.Region != "us-east-1" {
		t.Errorf("region %q, want us-east-1", a.Region)
	}
	client := (&services.S3Server{Endpoint: a.Endpoint, Region: a.Region, AccessKey: a.AccessKey, SecretKey: a.SecretKey}).Client()
	ctx := context.Background()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(a.Bucket), Key: aws.String("x/y"), Body: strings.NewReader("hello"),
	}); err != nil {
		t.Fatalf("put into the fresh bucket: %v", err)
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String("x/y")})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	body, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || string(body) != "hello" {
		t.Fatalf("get = %q, %v", body, err)
	}
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.Bucket)})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Contents) != 0 {
		t.Errorf("a fresh bucket holds %d objects", len(list.Contents))
	}
}
