package testenv

import (
	"net"
	"testing"
)

// FreeAddr is a loopback address with a port free a moment ago, for a
// server that must be given its address before it listens.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
