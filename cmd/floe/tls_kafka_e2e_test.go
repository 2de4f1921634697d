package main_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/tlsconf/tlstest"
)

// kafkaOpts are a franz-go client's options for addr, over TLS when tc is
// set (kgo.DialTLSConfig).
func kafkaOpts(addr string, tc *tls.Config) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(1), kgo.RetryTimeout(3 * time.Second),
		kgo.Dialer((&net.Dialer{Timeout: 3 * time.Second}).DialContext)}
	if tc != nil {
		opts[len(opts)-1] = kgo.DialTLSConfig(tc)
		opts = append(opts, kgo.DialTimeout(3*time.Second))
	}
	return opts
}

// kafkaPing asks addr for its metadata, bounded to a few seconds.
func kafkaPing(ctx context.Context, addr string, tc *tls.Config) error {
	cl, err := kgo.NewClient(kafkaOpts(addr, tc)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// kafkaTLSRoundTrip creates a topic over addr with tc, produces ten
// records and consumes them back.
func kafkaTLSRoundTrip(ctx context.Context, t *testing.T, addr string, tc *tls.Config) {
	t.Helper()
	opts := append(kafkaOpts(addr, tc), kgo.RequestRetries(10), kgo.RetryTimeout(30*time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ktls": {0: kgo.NewOffset().AtStart()}}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "ktls", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("create topic over TLS: %v", err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "ktls", Partition: 0, Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	var got []string
	for len(got) < len(recs) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume over TLS: %d records, then %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprintf("v%d", i) {
			t.Fatalf("consumed %v", got)
		}
	}
}

// kcatSSL: kcat (librdkafka) over SSL with a client certificate produces
// to and reads back the topic of kafkaTLSRoundTrip; without a certificate
// it gets nothing.
func kcatSSL(ctx context.Context, t *testing.T, addr string, pki *tlstest.Files) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kcat is not installed (.ci/run installs it): %v", err)
		}
		t.Log("kcat not installed: the SSL check of librdkafka is left out")
		return
	}
	ssl := []string{"-b", addr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + pki.CAFile}
	mtls := append(slices.Clone(ssl), "-X", "ssl.certificate.location="+pki.ClientCert, "-X", "ssl.key.location="+pki.ClientKey)
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	prod := exec.CommandContext(kctx, "kcat", append(mtls, "-P", "-t", "ktls", "-p", "0")...)
	prod.Stdin = strings.NewReader("from-kcat\n")
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat produce over SSL: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(kctx, "kcat", append(mtls, "-C", "-t", "ktls", "-o", "beginning", "-e", "-q")...).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat consume over SSL: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 11 || got[0] != "v0" || got[10] != "from-kcat" {
		t.Fatalf("kcat read %q", out)
	}
	bctx, bcancel := context.WithTimeout(ctx, 15*time.Second)
	defer bcancel()
	out, err = exec.CommandContext(bctx, "kcat", append(ssl, "-m", "5", "-L")...).CombinedOutput()
	if err == nil && strings.Contains(string(out), "ktls") {
		t.Fatalf("kcat without a client certificate listed the topics:\n%s", out)
	}
}
