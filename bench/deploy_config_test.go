package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDeployConfigStoreDir(t *testing.T) {
	c := DefaultDeployConfig()
	c.Executable = "floe"
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir string
		ok  bool
	}{{"", true}, {t.TempDir(), true}, {filepath.Join(t.TempDir(), "missing"), false}, {file, false}} {
		c.StoreDir = tc.dir
		err := c.validate()
		if tc.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), "StoreDir") {
			t.Errorf("StoreDir %q: %v", tc.dir, err)
		}
	}
}

// A cluster's agents send unsigned PUTs unless SignedPayload.
func TestDeployConfigSignedPayload(t *testing.T) {
	c := DefaultDeployConfig()
	for _, signed := range []bool{false, true} {
		c.SignedPayload = signed
		args := strings.Join(c.s3Args("http://127.0.0.1:1", "us-east-1", "a", "s"), " ")
		if strings.Contains(args, "-s3-unsigned-payload") == signed {
			t.Errorf("SignedPayload %v: agent flags %q", signed, args)
		}
	}
}
