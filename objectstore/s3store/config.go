package s3store

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// The values of Config.PutChecksum.
const (
	PutChecksumCRC32C = "crc32c"
	PutChecksumNone   = "none"
)

// Config configures a Store.
type Config struct {
	// Bucket is the bucket holding floe's objects. Required.
	Bucket string
	// Endpoint overrides the S3 endpoint URL ("http://127.0.0.1:7070"),
	// for S3-compatible servers. Empty means AWS.
	Endpoint string
	// Region is the signing region.
	Region string
	// AccessKey, SecretKey and SessionToken are static credentials. When
	// AccessKey is empty, the SDK's default chain is used (the
	// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY environment variables,
	// shared config files, instance roles, ...).
	AccessKey, SecretKey, SessionToken string
	// PathStyle addresses buckets as endpoint/bucket/key instead of
	// bucket.endpoint/key; most S3-compatible servers need it.
	PathStyle bool
	// MaxAttempts bounds the attempts of one request, retries included.
	// The caller's context bounds them too: no attempt starts, and no
	// backoff continues, once it is done.
	MaxAttempts int
	// MaxBackoff caps the jittered exponential backoff between attempts.
	MaxBackoff time.Duration
	// RequestTimeout bounds one attempt, reading the response included. It
	// should be well under the caller's deadline for the whole request (the
	// batcher's upload deadline, 10 s by default), so that a stalled
	// connection is given up and retried on a fresh one within it.
	RequestTimeout time.Duration
	// UnsignedPayload sends PUT bodies as UNSIGNED-PAYLOAD over plain HTTP
	// too, instead of signing their SHA-256 (SigV4): a hash pass over every
	// uploaded byte, a third of the write path's CPU in BenchmarkFlushCPU
	// (batcher). Over HTTPS the body is always sent unsigned
	// (the SDK's default for PutObject: TLS protects it). Set it where the
	// network path to a plain-HTTP endpoint is trusted (loopback, a
	// private link). Either way floe's files carry CRC-32C checksums that
	// every read verifies.
	UnsignedPayload bool
	// PutChecksum is the checksum each PUT carries for the server to
	// verify before it stores the object: "crc32c" (DefaultConfig) sends
	// the body's CRC-32C as x-amz-checksum-crc32c (signed, like every
	// x-amz- header), so that a body damaged on its way is refused
	// (BadDigest, retried) instead of stored; "none" or "" sends none, for
	// a server that refuses the header. It costs one CRC-32C pass over the
	// body (~20 GB/s), not the SHA-256 of payload signing.
	PutChecksum string
	// CAFile, optional, is a PEM bundle of the CAs that sign an https://
	// endpoint's certificate, trusted instead of the system's roots (an
	// S3-compatible server with its own CA).
	CAFile string
}

// DefaultConfig returns the defaults: region us-east-1, 5 attempts, at most
// 1 s between attempts, 4 s per attempt (an 8 MiB file needs 2 MB/s).
// Bucket is left empty.
func DefaultConfig() Config {
	return Config{
		Region:         "us-east-1",
		MaxAttempts:    5,
		MaxBackoff:     time.Second,
		RequestTimeout: 4 * time.Second,
		PutChecksum:    PutChecksumCRC32C,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Bucket == "":
		return errors.New("s3store: Bucket is required")
	case c.Region == "":
		return errors.New("s3store: Region is required")
	case c.AccessKey == "" && (c.SecretKey != "" || c.SessionToken != ""):
		return errors.New("s3store: AccessKey is required when SecretKey or SessionToken is set")
	case c.AccessKey != "" && c.SecretKey == "":
		return errors.New("s3store: SecretKey is required when AccessKey is set")
	case c.MaxAttempts < 1:
		return fmt.Errorf("s3store: MaxAttempts must be at least 1, got %d", c.MaxAttempts)
	case c.MaxBackoff <= 0:
		return fmt.Errorf("s3store: MaxBackoff must be positive, got %v", c.MaxBackoff)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("s3store: RequestTimeout must be positive, got %v", c.RequestTimeout)
	case c.PutChecksum != "" && c.PutChecksum != PutChecksumNone && c.PutChecksum != PutChecksumCRC32C:
		return fmt.Errorf("s3store: PutChecksum %q must be %q or %q", c.PutChecksum, PutChecksumCRC32C, PutChecksumNone)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil {
			return fmt.Errorf("s3store: Endpoint %q: %w", c.Endpoint, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("s3store: Endpoint %q must be an http:// or https:// URL with a host", c.Endpoint)
		}
	}
	return nil
}
