package main_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
)

// deadAddr is an address nothing answers at: a privileged port on the
// loopback, which no test process can take (unlike a port free a moment
// ago).
const deadAddr = testenv.DeadAddr

// boundAddrs is what a floe server writes to its -addr-file.
type boundAddrs struct {
	GRPC    string `json:"grpc"`
	Metrics string `json:"metrics"`
	Kafka   string `json:"kafka"`
}

// withAddrFile returns args with -addr-file of a fresh file, which p then
// reads its bound addresses from (waitAddrs).
func (p *proc) withAddrFile(t *testing.T, args []string) []string {
	t.Helper()
	p.addrFile = filepath.Join(t.TempDir(), "addrs.json")
	return append(args, "-addr-file", p.addrFile)
}

// readAddrs reads an -addr-file ("not yet" as os.ErrNotExist).
func readAddrs(path string) (boundAddrs, error) {
	var a boundAddrs
	data, err := os.ReadFile(path)
	if err != nil {
		return a, err
	}
	return a, json.Unmarshal(data, &a)
}

// waitAddrs waits until p's -addr-file holds what ok asks for (the file
// is replaced atomically: it is absent, or whole), and returns it. The
// process exiting first, or a minute without it, fails the test.
func (p *proc) waitAddrs(t *testing.T, ok func(boundAddrs) bool) boundAddrs {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		a, err := readAddrs(p.addrFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("addr file %s: %v", p.addrFile, err)
		}
		if err == nil && ok(a) {
			return a
		}
		select {
		case <-p.done:
			t.Fatalf("floe exited before writing its addresses (%+v):\n%s", a, p.logText())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("addr file %s: %+v after a minute:\n%s", p.addrFile, a, p.logText())
		}
	}
}

// kafkaAddr waits for p's Kafka listener (bound once its stores
// answered) and returns its address.
func (p *proc) kafkaAddr(t *testing.T) string {
	t.Helper()
	return p.waitAddrs(t, func(a boundAddrs) bool { return a.Kafka != "" }).Kafka
}
