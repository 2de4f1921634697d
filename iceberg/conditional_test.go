package iceberg_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
)

// rivalS3 is a proxy in front of the test S3 server that plays a second
// writer which took the key first: on each object PUT whose path holds
// its current pattern, it first stores its own object under the key (a
// plain put, straight to the server), then forwards the writer's request
// unchanged. Only a conditional write (If-None-Match: *) keeps the
// rival's object.
type rivalS3 struct {
	direct *s3.Client
	bucket string
	proxy  *httputil.ReverseProxy

	mu      sync.Mutex // protects pattern, keys, puts, uncond
	pattern string     // "": plant nothing
	keys    []string   // the keys planted
	puts    int        // object PUTs seen
	uncond  []string   // PUTs without If-None-Match: *
}

var rivalBytes = []byte("the rival writer's object")

func newRivalS3(t *testing.T, cfg iceberg.Config) *rivalS3 {
	t.Helper()
	target, err := url.Parse(cfg.S3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	bucket := strings.TrimPrefix(cfg.Warehouse, "s3://")
	bucket, _, _ = strings.Cut(bucket, "/")
	r := &rivalS3{bucket: bucket, proxy: httputil.NewSingleHostReverseProxy(target),
		direct: s3.New(s3.Options{Region: cfg.S3Region, BaseEndpoint: aws.String(cfg.S3Endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.S3AccessKey, cfg.S3SecretKey, "")})}
	return r
}

func (r *rivalS3) set(pattern string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pattern = pattern
}

func (r *rivalS3) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	if req.Method == http.MethodPut && !q.Has("uploadId") && req.Header.Get("X-Amz-Copy-Source") == "" {
		key := strings.TrimPrefix(req.URL.Path, "/"+r.bucket+"/")
		r.mu.Lock()
		r.puts++
		if req.Header.Get("If-None-Match") != "*" {
			r.uncond = append(r.uncond, key)
		}
		plant := r.pattern != "" && strings.Contains(key, r.pattern)
		r.mu.Unlock()
		if plant {
			ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
			_, err := r.direct.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key),
				Body: bytes.NewReader(rivalBytes)})
			cancel()
			if err != nil {
				http.Error(w, "rival: "+err.Error(), http.StatusInternalServerError)
				return
			}
			r.mu.Lock()
			r.keys = append(r.keys, key)
			r.mu.Unlock()
		}
	}
	r.proxy.ServeHTTP(w, req)
}

// planted returns the keys planted since the last call.
func (r *rivalS3) planted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys
	r.keys = nil
	return k
}

// TestIcebergWritesAreConditional: every object a Writer opened on an S3
// warehouse writes (data files, manifests, manifest lists, table
// metadata) carries If-None-Match: *, so that it can never overwrite
// another writer's object: with a rival's object already at the key of a
// data file, and then of a manifest or metadata file, the append fails,
// the rival's objects are as it wrote them and the table is unchanged;
// without the rival the next append succeeds on fresh keys.
func TestIcebergWritesAreConditional(t *testing.T) {
	cfg := icetest.PostgresConfig(t)
	rival := newRivalS3(t, cfg)
	srv := httptest.NewServer(rival)
	defer srv.Close()
	cfg.S3Endpoint = srv.URL
	cfg.Options = iceberg.Options{MaxAttempts: 2, RetryWait: 10 * time.Millisecond}
	ctx := testCtx(t)
	w, err := iceberg.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	rows, wm := genRows(1, 2, 20, iceberg.Watermark{})
	if _, err := w.Append(ctx, "t", rows, wm); err != nil {
		t.Fatalf("append without a rival: %v", err)
	}
	for _, pattern := range []string{"/data/", "/metadata/"} {
		rival.set(pattern)
		more, wm2 := genRows(2, 2, 10, wm)
		_, err := w.Append(ctx, "t", more, wm2)
		rival.set("")
		keys := rival.planted()
		if len(keys) == 0 {
			t.Fatalf("%s: the append wrote no object there", pattern)
		}
		if err == nil {
			t.Errorf("%s: the append over %d keys a rival holds succeeded", pattern, len(keys))
		}
		for _, k := range keys {
			out, gerr := rival.direct.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(rival.bucket), Key: aws.String(k)})
			if gerr != nil {
				t.Fatal(gerr)
			}
			got, rerr := io.ReadAll(out.Body)
			out.Body.Close()
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !bytes.Equal(got, rivalBytes) {
				t.Errorf("%s: the append overwrote the rival's object %s (%d bytes)", pattern, k, len(got))
			}
		}
		if have, err := w.Watermark(ctx, "t"); err != nil || !have.Equal(wm) {
			t.Fatalf("%s: watermark %v (%v) after the refused append, want %v", pattern, have, err, wm)
		}
	}
	checkTable(t, w, "t", rows)
	more, wm2 := genRows(3, 2, 10, wm)
	if _, err := w.Append(ctx, "t", more, wm2); err != nil {
		t.Fatalf("append after the rival left: %v", err)
	}
	checkTable(t, w, "t", append(rows, more...))
	rival.mu.Lock()
	defer rival.mu.Unlock()
	if rival.puts == 0 || len(rival.uncond) > 0 {
		t.Errorf("%d of %d object writes without If-None-Match: *: %v", len(rival.uncond), rival.puts, rival.uncond)
	}
}
