//go:build chaos

package chaos

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// dialHelperEnv makes the test binary a dialer (run inside a namespace).
const dialHelperEnv = "FLOE_CHAOS_DIAL"

func init() {
	if addr := os.Getenv(dialHelperEnv); addr != "" {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			os.Exit(3)
		}
		c.Close()
		os.Exit(0)
	}
}

// TestNetnsPartition: from inside an agent's namespace the proxies'
// addresses are reachable, a partition cuts exactly its address, healing
// restores it, and removing the namespace leaves nothing behind.
func TestNetnsPartition(t *testing.T) {
	n, err := newNetns(7)
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	defer func() {
		if !removed {
			n.remove()
		}
	}()
	listen := func(host string) string {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return ln.Addr().String()
	}
	pg, s3 := listen(n.pg), listen(n.s3)
	dial := func(addr string) bool {
		cmd := exec.Command("ip", "netns", "exec", n.name, os.Args[0])
		cmd.Env = append(os.Environ(), dialHelperEnv+"="+addr)
		return cmd.Run() == nil
	}
	if !dial(pg) || !dial(s3) {
		t.Fatal("the proxies' addresses are not reachable from the namespace")
	}
	if err := n.partition(NetAgentPG, true); err != nil {
		t.Fatal(err)
	}
	if dial(pg) {
		t.Fatal("the PostgreSQL address is reachable through the partition")
	}
	if !dial(s3) {
		t.Fatal("the partition from PostgreSQL cut S3 too")
	}
	n.heal()
	if !dial(pg) {
		t.Fatal("not reachable after the heal")
	}
	qdisc := func() string {
		out, err := exec.Command("ip", "netns", "exec", n.name, tcPath(), "qdisc", "show", "dev", n.nsIf).CombinedOutput()
		if err != nil {
			t.Fatalf("tc: %v: %s", err, out)
		}
		return string(out)
	}
	if err := n.throttle(true); err != nil {
		t.Fatal(err)
	}
	if q := qdisc(); !strings.Contains(q, "tbf") || !dial(pg) {
		t.Fatalf("throttled: qdisc %q (and the proxies must stay reachable)", q)
	}
	n.heal()
	if q := qdisc(); strings.Contains(q, "tbf") {
		t.Fatalf("the throttle outlived the heal: %q", q)
	}
	n.remove()
	removed = true
	out, _ := exec.Command("ip", "netns", "list").CombinedOutput()
	links, _ := exec.Command("ip", "link").CombinedOutput()
	if strings.Contains(string(out), n.name) || strings.Contains(string(links), n.hostIf+"@") || strings.Contains(string(links), n.hostIf+":") {
		t.Fatalf("left behind:\n%s\n%s", out, links)
	}
}
