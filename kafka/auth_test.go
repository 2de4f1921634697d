package kafka_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/access/accesstest"
	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// authBroker is a broker with authentication and ACLs on: users root (a
// superuser), alice and bob, password "pw-NAME", SCRAM-SHA-256 and -512.
type authBroker struct {
	*broker
	st *accesstest.Store
}

func startAuthBroker(t *testing.T) *authBroker {
	t.Helper()
	return startAuthBrokerOn(t, nil)
}

// startAuthBrokerOn is startAuthBroker with a listener wrapper (TLS).
func startAuthBrokerOn(t *testing.T, wrap func(net.Listener) net.Listener) *authBroker {
	t.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	st := accesstest.NewStore()
	for _, u := range []string{"root", "alice", "bob"} {
		for _, m := range []auth.ScramMechanism{auth.ScramSHA256, auth.ScramSHA512} {
			if err := st.SetPassword(u, m, "pw-"+u); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := access.DefaultConfig()
	cfg.Enabled, cfg.Superusers = true, []string{"User:root"}
	g, err := access.NewGuard(cfg, st, access.GuardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := startBrokerWith(t, meta, objectstore.NewMemory(), nil, agent.Options{}, kafka.Options{Guard: g, Credentials: st, ACLs: st}, wrap)
	return &authBroker{broker: b, st: st}
}

// saslClient is a franz-go client logging in as user with mech (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512).
func saslClient(t *testing.T, addr, mech, user, password string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	var m kgo.Opt
	switch mech {
	case "PLAIN":
		m = kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism())
	case "SCRAM-SHA-256":
		m = kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())
	default:
		m = kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), m, kgo.RequestRetries(0), kgo.RetryTimeout(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestKafkaSASL: PLAIN and both SCRAMs log in with the right password and
// are refused, clearly, with a wrong one or an unknown user.
func TestKafkaSASL(t *testing.T) {
	b := startAuthBroker(t)
	ctx := context.Background()
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		for _, tc := range []struct {
			user, password string
			ok             bool
		}{{"alice", "pw-alice", true}, {"alice", "pw-bob", false}, {"mallory", "pw-alice", false}} {
			cl := saslClient(t, b.addr, mech, tc.user, tc.password)
			_, err := cl.Request(ctx, kmsg.NewPtrDescribeClusterRequest())
			if tc.ok != (err == nil) {
				t.Errorf("%s %s/%s: %v", mech, tc.user, tc.password, err)
			}
			if !tc.ok && !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Errorf("%s %s/%s: %v, want SASL_AUTHENTICATION_FAILED", mech, tc.user, tc.password, err)
			}
		}
	}
	// No SASL at all: a request past ApiVersions is refused and the
	// connection closed — after SASL_AUTHENTICATION_FAILED where the
	// answer has a top-level code, else without an answer (no empty
	// Metadata a client could take for "no topics").
	c := dialRaw(t, b.addr)
	dc := kmsg.NewPtrDescribeClusterRequest()
	resp, err := roundTrip(c, dc, 1)
	if err != nil || resp.(*kmsg.DescribeClusterResponse).ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("anonymous DescribeCluster: %+v, %v", resp, err)
	}
	if _, _, err := c.recv(); err == nil {
		t.Fatal("connection left open after an unauthenticated request")
	}
	c = dialRaw(t, b.addr)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	if resp, err := roundTrip(c, md, 1); err == nil {
		t.Fatalf("anonymous Metadata answered: %+v", resp)
	}
}

// roundTrip sends req on c and decodes its answer.
func roundTrip(c *rawConn, req kmsg.Request, correlation int32) (kmsg.Response, error) {
	c.send(req, correlation)
	got, body, err := c.recv()
	if err != nil {
		return nil, err
	}
	if got != correlation {
		return nil, fmt.Errorf("correlation %d, want %d", got, correlation)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:] // the header's empty tag buffer
	}
	return resp, resp.ReadFrom(body)
}

// plainLogin authenticates c as user with SASL PLAIN.
func plainLogin(t *testing.T, c *rawConn, user string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	r, err := roundTrip(c, hs, 100)
	if err != nil || r.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("handshake: %+v, %v", r, err)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(2)
	au.SASLAuthBytes = []byte("\x00" + user + "\x00pw-" + user)
	r, err = roundTrip(c, au, 101)
	if err != nil || r.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
		t.Fatalf("authenticate %s: %+v, %v", user, r, err)
	}
}

// errorCodes collects every ErrorCode field in v.
func errorCodes(v reflect.Value, out *[]int16) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			errorCodes(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).Name == "ErrorCode" && v.Field(i).Kind() == reflect.Int16 {
				*out = append(*out, int16(v.Field(i).Int()))
			} else {
				errorCodes(v.Field(i), out)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			errorCodes(v.Index(i), out)
		}
	}
}

func isAuthCode(c int16) bool {
	return c == kerr.TopicAuthorizationFailed.Code || c == kerr.GroupAuthorizationFailed.Code || c == kerr.ClusterAuthorizationFailed.Code
}

// snapshot is the broker's state: topics, partitions, groups, offsets,
// ACLs and credentials.
func (b *authBroker) snapshot(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	topics, err := b.meta.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics {
		ps, err := b.meta.PartitionStates(ctx, tp.ID)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "topic %s %d %v %+v\n", tp.Name, tp.Partitions, tp.Config, ps)
	}
	gs, err := b.meta.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Group < gs[j].Group })
	for _, g := range gs {
		offs, _ := b.meta.FetchOffsets(ctx, g.Group, nil)
		fmt.Fprintf(&sb, "group %s %s %d %+v\n", g.Group, g.State, g.Members, offs)
	}
	fmt.Fprintf(&sb, "acls %v\n", b.st.ACLs())
	creds, _ := b.st.ListScramCredentials(ctx)
	for _, c := range creds {
		fmt.Fprintf(&sb, "cred %s %v %x\n", c.User, c.Mechanism, c.StoredKey)
	}
	return sb.String()
}

// TestKafkaAdminACLsAndUsers: kafka-acls-style admin through franz-go's
// kadm as the superuser — create, describe, delete ACLs; set a user's
// SCRAM password, describe it, log in with it — and the ACL takes effect.
func TestKafkaAdminACLsAndUsers(t *testing.T) {
	b := startAuthBroker(t)
	ctx := context.Background()
	adm := kadm.NewClient(saslClient(t, b.addr, "SCRAM-SHA-256", "root", "pw-root"))
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	// A user made through AlterUserScramCredentials logs in with SCRAM.
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw-carol"}}); err != nil {
		t.Fatal(err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx, "carol")
	if err != nil || len(desc["carol"].CredInfos) != 1 || desc["carol"].CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe carol: %+v, %v", desc, err)
	}
	carol := kadm.NewClient(saslClient(t, b.addr, "SCRAM-SHA-512", "carol", "pw-carol"))
	if td, err := carol.ListTopics(ctx); err != nil || len(td.Names()) != 0 {
		t.Fatalf("carol without an ACL: %v, %v; want logged in, seeing nothing", td.Names(), err)
	}
	if _, err := carol.ListTopics(ctx, "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("carol naming orders without an ACL: %v", err)
	}
	bad := kadm.NewClient(saslClient(t, b.addr, "SCRAM-SHA-512", "carol", "wrong"))
	if _, err := bad.ListTopics(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("carol with a wrong password: %v", err)
	}

	acl := kadm.NewACLs().Allow("User:carol").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := adm.CreateACLs(ctx, acl)
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create acls: %+v, %v", res, err)
	}
	if td, _ := carol.ListTopics(ctx); len(td.Names()) != 1 {
		t.Fatalf("carol with READ on orders sees %v", td.Names())
	}
	filter := kadm.NewACLs().Allow("User:carol").AllowHosts().Topics("orders").Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	described, err := adm.DescribeACLs(ctx, filter)
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 1 {
		t.Fatalf("describe acls: %+v, %v", described, err)
	}
	if d := described[0].Described[0]; d.Principal != "User:carol" || d.Name != "orders" || d.Operation != kadm.OpRead {
		t.Fatalf("described %+v", d)
	}
	// carol may not administer ACLs.
	if r, err := carol.DescribeACLs(ctx, filter); !errors.Is(err, kerr.ClusterAuthorizationFailed) && (len(r) == 0 || !errors.Is(r[0].Err, kerr.ClusterAuthorizationFailed)) {
		t.Fatalf("carol describes ACLs: %+v, %v", r, err)
	}
	deleted, err := adm.DeleteACLs(ctx, filter)
	if err != nil || len(deleted) != 1 || len(deleted[0].Deleted) != 1 {
		t.Fatalf("delete acls: %+v, %v", deleted, err)
	}
	if len(b.st.ACLs()) != 0 {
		t.Fatalf("ACLs left: %v", b.st.ACLs())
	}
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.ScramCredential(ctx, "carol", auth.ScramSHA512); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("carol's credential after deletion: %v", err)
	}
}

// TestKafkaDeleteTopicByID: DeleteTopics v6 naming a topic by id only is
// checked as the topic it names.
func TestKafkaDeleteTopicByID(t *testing.T) {
	b := startAuthBroker(t)
	ctx := context.Background()
	adm := kadm.NewClient(saslClient(t, b.addr, "SCRAM-SHA-256", "root", "pw-root"))
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "victim"); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "victim")
	if err != nil {
		t.Fatal(err)
	}
	id := td["victim"].ID
	del := func(user string) int16 {
		c := dialRaw(t, b.addr)
		plainLogin(t, c, user)
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(6)
		req.TimeoutMillis = 5000
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: id}}
		resp, err := roundTrip(c, req, 3)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.DeleteTopicsResponse)
		if len(r.Topics) != 1 {
			t.Fatalf("%s: %+v", user, r)
		}
		return r.Topics[0].ErrorCode
	}
	if code := del("bob"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob deleting by id: code %d", code)
	}
	if _, err := b.meta.DescribeTopic(ctx, "victim"); err != nil {
		t.Fatalf("victim after bob: %v", err)
	}
	b.st.Allow("User:alice", auth.OpDelete, auth.Topic("victim"))
	if code := del("alice"); code != 0 {
		t.Fatalf("alice deleting by id: code %d", code)
	}
}

// TestKafkaClientCertificate: on a TLS listener that verifies client
// certificates, a verified certificate names the principal (Kafka's SSL
// principal) without SASL; without one the connection is refused as
// unauthenticated.
func TestKafkaClientCertificate(t *testing.T) {
	ca := accesstest.Cert(t, "floe-ca", nil)
	server := accesstest.Cert(t, "bufnet", &ca)
	b := startAuthBrokerOn(t, func(l net.Listener) net.Listener {
		return tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: accesstest.Pool(ca),
			ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12})
	})
	dial := func(cert *tls.Certificate) *kadm.Client {
		cfg := &tls.Config{RootCAs: accesstest.Pool(ca), ServerName: "bufnet", MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DialTLSConfig(cfg), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	ctx := context.Background()
	root := accesstest.Cert(t, "root", &ca)
	if _, err := dial(&root).CreateTopic(ctx, 1, -1, nil, "orders"); err != nil {
		t.Fatalf("root by certificate: %v", err)
	}
	alice := accesstest.Cert(t, "alice", &ca)
	b.st.Allow("User:alice", auth.OpDescribe, auth.Topic("orders"))
	td, err := dial(&alice).ListTopics(ctx)
	if err != nil || !td.Has("orders") {
		t.Fatalf("alice by certificate: %v, %v", td.Names(), err)
	}
	if _, err := dial(nil).ListTopics(ctx); err == nil {
		t.Fatal("TLS without a client certificate or SASL listed topics")
	}
}
