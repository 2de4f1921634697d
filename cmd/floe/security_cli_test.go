package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityCommands runs floe token, user and acl against floe dev:
// what each prints, and one-line refusals with exit 1.
func TestSecurityCommands(t *testing.T) {
	dev := startFloe(t, "dev", "-data", t.TempDir())
	ok := func(stdin string, args ...string) (string, string) {
		t.Helper()
		out, errs, code := runFloe(t, stdin, append(args, "-addr", dev.addr)...)
		if code != 0 {
			t.Fatalf("floe %v: exit %d, stderr %q", args, code, errs)
		}
		return out, errs
	}
	fails := func(want string, stdin string, args ...string) {
		t.Helper()
		out, errs, code := runFloe(t, stdin, append(args, "-addr", dev.addr)...)
		if code != 1 || out != "" || strings.Count(strings.TrimSuffix(errs, "\n"), "\n") != 0 || !strings.Contains(errs, want) {
			t.Errorf("floe %v: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", args, code, out, errs, want)
		}
	}

	// Tokens: the token alone on stdout, shown once; list without secrets.
	out, errs := ok("", "token", "create", "-principal", "User:alice", "-ttl", "720h")
	m := regexp.MustCompile(`^floe_([0-9a-f]{16})_([0-9a-f]{64})\n$`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(errs, "shown only this once") {
		t.Fatalf("token create: stdout %q, stderr %q", out, errs)
	}
	id, secret := m[1], m[2]
	out, _ = ok("", "token", "list")
	if !strings.Contains(out, id) || !strings.Contains(out, "User:alice") || !strings.Contains(out, "active") || strings.Contains(out, secret) {
		t.Fatalf("token list:\n%s", out)
	}
	if out, _ = ok("", "token", "revoke", id); out != "revoked token "+id+"\n" {
		t.Fatalf("token revoke: %q", out)
	}
	if out, _ = ok("", "token", "list", "-o", "json"); !strings.Contains(out, `"revoked":true`) {
		t.Fatalf("token list -o json after revoke: %s", out)
	}
	fails("InvalidArgument", "", "token", "create", "-principal", "alice")
	fails("flag -principal is required", "", "token", "create")
	fails("NotFound", "", "token", "revoke", "0123456789abcdef")
	fails("not a token id", "", "token", "revoke", "nope")

	// Users: password from stdin or a file, never echoed.
	if out, _ = ok("s3cret\n", "user", "create", "bob", "-mechanism", "SCRAM-SHA-512"); !strings.Contains(out, "SCRAM-SHA-512 credential of user bob") {
		t.Fatalf("user create: %q", out)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("other\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok("", "user", "create", "bob", "-password-file", pw, "-iterations", "4096")
	out, _ = ok("", "user", "list")
	if !regexp.MustCompile(`bob\s+SCRAM-SHA-256\s+4096`).MatchString(out) || !regexp.MustCompile(`bob\s+SCRAM-SHA-512\s+8192`).MatchString(out) ||
		strings.Contains(out, "s3cret") {
		t.Fatalf("user list:\n%s", out)
	}
	fails("the password is empty", "", "user", "create", "carol")
	fails("-mechanism", "x\n", "user", "create", "carol", "-mechanism", "MD5")
	fails("-iterations", "x\n", "user", "create", "carol", "-iterations", "10")
	fails("-password-file", "", "user", "create", "carol", "-password-file", filepath.Join(t.TempDir(), "missing"))
	if out, _ = ok("", "user", "delete", "bob"); out != "deleted 2 credential(s) of user bob\n" {
		t.Fatalf("user delete: %q", out)
	}
	fails("NotFound", "", "user", "delete", "bob")

	// ACLs.
	out, _ = ok("", "acl", "add", "-principal", "User:alice", "-topic", "orders.", "-prefixed", "-operation", "read,describe")
	if strings.Count(out, "User:alice") != 2 || !strings.Contains(out, "prefixed") {
		t.Fatalf("acl add:\n%s", out)
	}
	ok("", "acl", "add", "-principal", "User:*", "-cluster", "-operation", "alter", "-deny")
	ok("", "acl", "add", "-principal", "User:alice", "-group", "g", "-operation", "read")
	out, _ = ok("", "acl", "list")
	if lines := strings.Count(out, "\n"); lines != 5 || !strings.Contains(out, "kafka-cluster") || !strings.Contains(out, "deny") {
		t.Fatalf("acl list (want a header and 4 ACLs):\n%s", out)
	}
	if out, _ = ok("", "acl", "list", "-resource-type", "group"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "GROUP") {
		t.Fatalf("acl list -resource-type group:\n%s", out)
	}
	if out, _ = ok("", "acl", "list", "-principal", "User:alice", "-operation", "describe"); strings.Count(out, "\n") != 2 {
		t.Fatalf("acl list by principal and operation:\n%s", out)
	}
	fails("no filter given", "", "acl", "remove")
	fails("exclude each other", "", "acl", "add", "-principal", "User:a", "-topic", "t", "-group", "g", "-operation", "read")
	fails("a resource is required", "", "acl", "add", "-principal", "User:a", "-operation", "read")
	fails("flag -operation is required", "", "acl", "add", "-principal", "User:a", "-topic", "t")
	fails(`"reed" is not read`, "", "acl", "add", "-principal", "User:a", "-topic", "t", "-operation", "reed")
	fails("principal", "", "acl", "add", "-principal", "alice", "-topic", "t", "-operation", "read")
	if out, _ = ok("", "acl", "remove", "-topic", "orders.", "-prefixed"); strings.Count(out, "\n") != 3 {
		t.Fatalf("acl remove:\n%s", out)
	}
	if out, _ = ok("", "acl", "remove", "-all", "-o", "json"); strings.Count(out, `"principal"`) != 2 {
		t.Fatalf("acl remove -all: %s", out)
	}
	if out, _ = ok("", "acl", "list"); strings.Count(out, "\n") != 1 {
		t.Fatalf("acl list after removing all:\n%s", out)
	}
}
