//go:build kafkajava

package kafka_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/internal/tlsconf/tlstest"
)

// TestJavaClient runs Apache Kafka's Java client (testdata/java, with the
// classpath make test-kafka resolves into FLOE_KAFKA_JAVA_CP) against an
// agent: admin, idempotent producers with every codec, a group of two
// then three (classic, and KIP-848's group.protocol=consumer), commits, an
// offset reset, and every record read back exactly, its fetches through
// fetch sessions. Built only with -tags kafkajava (make test-kafka).
func TestJavaClient(t *testing.T) {
	java, cp := javaClient(t)
	for _, protocol := range []string{"classic", "consumer"} {
		t.Run(protocol, func(t *testing.T) {
			b := startBroker(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, java, "-cp", cp, "testdata/java/FloeKafkaCheck.java", b.addr, protocol)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "OK 420") {
				t.Fatalf("java client, group.protocol=%s: %v\n%s", protocol, err, out)
			}
			// The admin client polls describeConsumerGroups every 50 ms
			// while it waits for a stable group and for an empty one: a
			// few dozen times. Leaves refused (the Java consumer's leave
			// names no topic) left the members in until their sessions
			// expired, 45 s of polling: ~800 of each.
			for _, k := range []kmsg.Key{kmsg.FindCoordinator, kmsg.ConsumerGroupDescribe} {
				if n := b.srv.Requests(k); n > 300 {
					t.Errorf("java client, group.protocol=%s: %d %s requests, want at most 300", protocol, n, kmsg.NameForKey(k.Int16()))
				}
			}
			// The Java consumer asks for fetch sessions (KIP-227): its
			// fetches after the first are incremental.
			if st := b.srv.FetchSessions(); st.Created == 0 || st.Incremental == 0 {
				t.Fatalf("java client, group.protocol=%s: no incremental fetches: %+v", protocol, st)
			}
		})
	}
}

// javaClient is the java command and the kafka-clients classpath.
func javaClient(t *testing.T) (java, cp string) {
	t.Helper()
	cp = os.Getenv("FLOE_KAFKA_JAVA_CP")
	if cp == "" {
		t.Fatal("FLOE_KAFKA_JAVA_CP is not set: run make test-kafka")
	}
	java = os.Getenv("FLOE_JAVA")
	if java == "" {
		java = "java"
	}
	return java, cp
}

// TestJavaClientSASLSSL runs FloeKafkaCheck over SASL_SSL: a TLS listener
// (a certificate for 127.0.0.1, the CA given to Java as a PEM truststore)
// with SCRAM-SHA-512 and ACLs on, as alice with rights on the check's
// topic and group only. Every record comes back exactly as sent; with a
// wrong password the Java client fails with an authentication error.
func TestJavaClientSASLSSL(t *testing.T) {
	java, cp := javaClient(t)
	dir := t.TempDir()
	ca, err := tlstest.NewCA("floe-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := ca.WriteCert(caFile); err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(tlstest.Options{CommonName: "floe-agent", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	server, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	b := startAuthBrokerOn(t, func(l net.Listener) net.Listener {
		return tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{server}, MinVersion: tls.VersionTLS12})
	})
	b.st.Allow("User:alice", auth.OpAll, auth.Topic("java-check-classic"))
	b.st.Allow("User:alice", auth.OpAll, auth.Group("java-group-classic"))

	run := func(password string, timeout time.Duration) (string, error) {
		props := filepath.Join(dir, "client-"+password+".properties")
		// Properties files take backslash escapes: the paths have none.
		text := fmt.Sprintf("security.protocol=SASL_SSL\n"+
			"sasl.mechanism=SCRAM-SHA-512\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"%s\";\n"+
			"ssl.truststore.type=PEM\n"+
			"ssl.truststore.location=%s\n", password, caFile)
		if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, java, "-cp", cp, "testdata/java/FloeKafkaCheck.java", b.addr, "classic", props).CombinedOutput()
		return string(out), err
	}
	if out, err := run("pw-alice", 4*time.Minute); err != nil || !strings.Contains(out, "OK 420") {
		t.Fatalf("java client over SASL_SSL: %v\n%s", err, out)
	}
	out, err := run("pw-bob", time.Minute)
	if err == nil || !strings.Contains(out, "SaslAuthenticationException") {
		t.Fatalf("java client with a wrong password: %v, want a SaslAuthenticationException\n%s", err, out)
	}
}
