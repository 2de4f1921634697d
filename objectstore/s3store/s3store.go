// Package s3store is the objectstore.Store on Amazon S3 and S3-compatible
// servers (MinIO, versitygw, Ceph RGW, R2, ...), built on aws-sdk-go-v2.
//
// Requests are retried with jittered exponential backoff, at most
// Config.MaxAttempts times (throttling such as 503 SlowDown, 5xx, timeouts,
// connection errors), each attempt bounded by Config.RequestTimeout, and
// never past the caller's context: its deadline bounds all attempts, so a
// caller with one deadline (the batcher's upload deadline) has no retry
// loop of its own to add. The SDK computes and validates checksums only
// where the API requires them, so that every S3-compatible server works;
// a PUT carries the CRC-32C of its body for the server to verify
// (Config.PutChecksum) unless told not to.
//
// Bad credentials and missing buckets come back as
// *objectstore.PermanentError; call CheckBucket at start to fail fast.
package s3store

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/floe-broker/floe/objectstore"
)

// Store is an objectstore.Store on one S3 bucket. It is safe for
// concurrent use.
type Store struct {
	cfg       Config
	client    *s3.Client
	transport *http.Transport
}

var _ objectstore.Store = (*Store)(nil)

// New returns a Store for cfg.Bucket. It does not contact the server; call
// CheckBucket for that.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// A BuildableClient, because LoadDefaultConfig may adjust its transport
	// (a CA bundle from AWS_CA_BUNDLE). The transport is then taken out of
	// it, so that Close can reach the connection pool.
	roots, err := loadCAFile(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	hc := awshttp.NewBuildableClient().
		WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = 256
			tr.MaxIdleConnsPerHost = 128
			if roots != nil {
				tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
			}
		})

	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		config.WithHTTPClient(hc),
		config.WithRetryer(func() aws.Retryer { return newRetryer(cfg) }),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3store: load AWS configuration: %w", err)
	}
	b, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		return nil, fmt.Errorf("s3store: unexpected HTTP client %T", awsCfg.HTTPClient)
	}
	tr := b.GetTransport()
	tr.DialContext = dialBodyConns(tr.DialContext)
	awsCfg.HTTPClient = bodyClient{&http.Client{
		Transport: tr,
		Timeout:   cfg.RequestTimeout, // per attempt, body included
		// Like the SDK's client: a 3xx is an answer, not a redirection.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return &Store{cfg: cfg, client: client, transport: tr}, nil
}

// newRetryer returns the standard retryer bounded by cfg, without the
// client-side retry quota (which would stop retrying during a long outage
// and turn a slow server into failed produces).
func newRetryer(cfg Config) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = cfg.MaxAttempts
		o.MaxBackoff = cfg.MaxBackoff
		o.Backoff = retry.NewExponentialJitterBackoff(cfg.MaxBackoff)
		o.RateLimiter = ratelimit.None
		o.Retryables = append(o.Retryables, retry.RetryableErrorCode{Codes: map[string]struct{}{
			"SlowDown":           {},
			"ServiceUnavailable": {},
			"InternalError":      {},
			"RequestTimeout":     {},
			// The body's checksum (Config.PutChecksum) did not match what
			// the server received: damaged on the way, worth another try.
			"BadDigest":                   {},
			"XAmzContentChecksumMismatch": {},
		}})
	})
}

// Close releases idle connections. The Store must not be used afterwards.
func (s *Store) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// CheckBucket checks that the bucket exists and the credentials may use
// it, failing with one clear line (an *objectstore.PermanentError for a
// missing bucket or refused credentials) if not.
func (s *Store) CheckBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.cfg.Bucket)})
	if err == nil {
		return nil
	}
	if isContextErr(ctx, err) {
		return fmt.Errorf("s3: check bucket %q: %w", s.cfg.Bucket, err)
	}
	code, status := errorCode(err)
	if status == 0 {
		return fmt.Errorf("s3: cannot reach bucket %q at %s: %w", s.cfg.Bucket, s.endpointName(), err)
	}
	// A HEAD answer has no body, hence no error code: some servers answer
	// 404 for an unknown access key. A one-key listing says which it is.
	_, lerr := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.Bucket), MaxKeys: aws.Int32(1)})
	if lerr == nil {
		return fmt.Errorf("s3: check bucket %q at %s: %w", s.cfg.Bucket, s.endpointName(), err)
	}
	if p := s.permanent(lerr); p != nil {
		return p
	}
	if status == http.StatusNotFound || code == "NotFound" {
		return &objectstore.PermanentError{Err: &sdkError{
			msg: fmt.Sprintf("s3: bucket %q does not exist at %s", s.cfg.Bucket, s.endpointName()),
			err: err,
		}}
	}
	if p := s.permanent(err); p != nil {
		return p
	}
	return fmt.Errorf("s3: check bucket %q at %s: %w", s.cfg.Bucket, s.endpointName(), lerr)
}

func (s *Store) endpointName() string {
	if s.cfg.Endpoint != "" {
		return s.cfg.Endpoint
	}
	return "AWS region " + s.cfg.Region
}

// Put implements objectstore.Store.
//
// With IfAbsent it sends If-None-Match: *. A "precondition failed" answer
// to a retried attempt is ambiguous (an earlier attempt may have written the
// object before its response was lost), so Put then reads the object back:
// if it holds exactly data, the put succeeded.
func (s *Store) Put(ctx context.Context, key string, data []byte, opts objectstore.PutOptions) error {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.cfg.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if s.cfg.PutChecksum == PutChecksumCRC32C {
		crc := opts.CRC32C
		if !opts.KnownCRC32C {
			crc = crc32.Checksum(data, castagnoli)
		}
		in.ChecksumCRC32C = aws.String(crc32cBase64(crc))
	}
	var attempts atomic.Int32
	var optFns []func(*s3.Options)
	if s.cfg.UnsignedPayload {
		optFns = append(optFns, unsignedPayload)
	}
	if opts.IfAbsent {
		in.IfNoneMatch = aws.String("*")
		optFns = append(optFns, countAttempts(&attempts))
	}
	_, err := s.client.PutObject(withPutBody(ctx, data), in, optFns...)
	if err == nil {
		return nil
	}
	if p := s.permanent(err); p != nil {
		return p
	}
	code, status := errorCode(err)
	if opts.IfAbsent && (status == http.StatusPreconditionFailed || code == "PreconditionFailed" ||
		status == http.StatusConflict || code == "ConditionalRequestConflict") {
		if attempts.Load() > 1 {
			got, gerr := s.Get(ctx, key, 0, -1)
			if gerr != nil {
				return fmt.Errorf("s3: put %q: precondition failed on a retry and the object could not be read back: %w", key, gerr)
			}
			if bytes.Equal(got, data) {
				return nil // an earlier attempt of this call wrote it
			}
		}
		return fmt.Errorf("s3: put %q: %w", key, objectstore.ErrExists)
	}
	return s.wrap("put", key, err)
}

// crc32cBase64 is a CRC-32C as x-amz-checksum-crc32c carries it: the
// big-endian value in base64.
func crc32cBase64(crc uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc)
	return base64.StdEncoding.EncodeToString(b[:])
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// unsignedPayload sends a PUT's body as UNSIGNED-PAYLOAD whatever the
// scheme (Config.UnsignedPayload): the SDK signs its SHA-256 over plain
// HTTP otherwise.
func unsignedPayload(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

// countAttempts counts the HTTP attempts of one operation into n.
func countAttempts(n *atomic.Int32) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("floeCountAttempts",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					n.Add(1)
					return next.HandleFinalize(ctx, in)
				}), "Retry", middleware.After)
		})
	}
}

// Get implements objectstore.Store with one ranged GET.
func (s *Store) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	if off < 0 {
		return nil, fmt.Errorf("s3: get %q: %w: negative offset %d", key, objectstore.ErrInvalidRange, off)
	}
	if length == 0 {
		info, err := s.Head(ctx, key)
		if err != nil {
			return nil, err
		}
		if off > info.Size {
			return nil, fmt.Errorf("s3: get %q: %w: offset %d, object size %d", key, objectstore.ErrInvalidRange, off, info.Size)
		}
		return []byte{}, nil
	}
	in := &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)}
	switch {
	case length < 0 || length > math.MaxInt64-off:
		if off > 0 {
			in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
		}
	default:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+length-1))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if p := s.permanent(err); p != nil {
			return nil, p
		}
		code, status := errorCode(err)
		switch {
		case code == "NoSuchKey" || status == http.StatusNotFound:
			return nil, fmt.Errorf("s3: get %q: %w", key, objectstore.ErrNotFound)
		case code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable:
			return s.pastEnd(ctx, key, off)
		}
		return nil, s.wrap("get", key, err)
	}
	defer out.Body.Close()
	data, err := readBody(ctx, out.Body, out.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("s3: get %q: read body: %w", key, err)
	}
	if in.Range != nil && out.ContentRange == nil {
		// The server ignored the Range header and sent the whole object.
		if off > int64(len(data)) {
			return nil, fmt.Errorf("s3: get %q: %w: offset %d, object size %d", key, objectstore.ErrInvalidRange, off, len(data))
		}
		data = data[off:]
		if length >= 0 && length < int64(len(data)) {
			data = data[:length]
		}
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// maxBody bounds the body of one GET (floe's files are a few MiB).
const maxBody = 1 << 30

// readBody reads a response body of the announced length into one buffer
// of exactly that size (bytes.Buffer's ReadFrom would double it at EOF;
// from ctx's objectstore.Buffers when it has them),
// checking the length; without a length it reads to EOF.
func readBody(ctx context.Context, body io.Reader, contentLength *int64) ([]byte, error) {
	if contentLength == nil || *contentLength < 0 {
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(io.LimitReader(body, maxBody+1)); err != nil {
			return nil, err
		}
		if buf.Len() > maxBody {
			return nil, fmt.Errorf("body larger than %d bytes", maxBody)
		}
		return buf.Bytes(), nil
	}
	n := *contentLength
	if n > maxBody {
		return nil, fmt.Errorf("announced body of %d bytes, limit %d", n, maxBody)
	}
	data := objectstore.Buffer(ctx, int(n))
	if got, err := readFull(body, data, objectstore.Observer(ctx)); err != nil {
		return nil, fmt.Errorf("short body: %d of %d bytes: %w", got, n, err)
	}
	var extra [1]byte
	if m, _ := body.Read(extra[:]); m > 0 {
		return nil, fmt.Errorf("body longer than its announced %d bytes", n)
	}
	return data, nil
}

// readFull is io.ReadFull that shows each chunk read to obs (when not
// nil) as it arrives (objectstore.ReadObserver).
func readFull(r io.Reader, buf []byte, obs objectstore.ReadObserver) (int, error) {
	got := 0
	for got < len(buf) {
		m, err := r.Read(buf[got:])
		if m > 0 {
			if obs != nil {
				obs(got, buf[got:got+m])
			}
			got += m
		}
		if err != nil {
			if got == len(buf) {
				break
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return got, err
		}
	}
	return got, nil
}

// pastEnd resolves a 416 answer: reading at exactly the end of an object
// (an empty one included) returns no bytes; past it is ErrInvalidRange.
func (s *Store) pastEnd(ctx context.Context, key string, off int64) ([]byte, error) {
	info, err := s.Head(ctx, key)
	if err != nil {
		return nil, err
	}
	if off == info.Size {
		return []byte{}, nil
	}
	return nil, fmt.Errorf("s3: get %q: %w: offset %d, object size %d", key, objectstore.ErrInvalidRange, off, info.Size)
}

// Head implements objectstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		if p := s.permanent(err); p != nil {
			return objectstore.ObjectInfo{}, p
		}
		// HEAD answers carry no error code, so a missing bucket (or, on
		// some servers, an unknown access key) looks like a missing key.
		if _, status := errorCode(err); status == http.StatusNotFound {
			return objectstore.ObjectInfo{}, fmt.Errorf("s3: head %q: %w", key, objectstore.ErrNotFound)
		}
		return objectstore.ObjectInfo{}, s.wrap("head", key, err)
	}
	return objectstore.ObjectInfo{
		Key:          key,
		Size:         aws.ToInt64(out.ContentLength),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// Delete implements objectstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		if code, _ := errorCode(err); code == "NoSuchKey" {
			return nil
		}
		return s.wrap("delete", key, err)
	}
	return nil
}

// List implements objectstore.Store with ListObjectsV2, page by page.
func (s *Store) List(ctx context.Context, prefix string, fn func(objectstore.ObjectInfo) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.cfg.Bucket),
		Prefix: aws.String(prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.wrap("list", prefix, err)
		}
		for _, obj := range page.Contents {
			if err := fn(objectstore.ObjectInfo{
				Key:          aws.ToString(obj.Key),
				Size:         aws.ToInt64(obj.Size),
				LastModified: aws.ToTime(obj.LastModified),
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// wrap names the failed operation, marking errors that retrying will not
// fix as permanent.
func (s *Store) wrap(op, key string, err error) error {
	if p := s.permanent(err); p != nil {
		return p
	}
	return fmt.Errorf("s3: %s %q: %w", op, key, err)
}

// isContextErr reports whether err comes from ctx being done.
func isContextErr(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// loadCAFile reads Config.CAFile (nil for none).
func loadCAFile(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("s3store: CAFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("s3store: CAFile %s: no PEM certificate in it", path)
	}
	return pool, nil
}
