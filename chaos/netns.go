package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// netns is one agent's network namespace: a veth pair whose host end
// holds three addresses of a private /29 — one the driver's clients come
// from, one the PostgreSQL proxy listens on, one the S3 proxy listens on
// — and whose namespace end holds the agent's address. A partition is a
// blackhole route in the namespace to one of the three: the agent's
// packets to it (and, for the clients' address, its answers) vanish, and
// open connections hang as they would behind a broken network.
type netns struct {
	name           string
	hostIf, nsIf   string
	agent          string // the agent's address in the namespace
	client, pg, s3 string // host-end addresses
	blackholed     map[string]bool
	throttled      bool
	created, veth  bool
}

// The partitions a namespace can make (netns.partition).
const (
	NetAgentPG     = "net-agent-pg"
	NetAgentS3     = "net-agent-s3"
	NetClientAgent = "net-client-agent"
	// NetAgentSlow throttles everything the agent sends (to PostgreSQL,
	// S3 and its clients) with the kernel's token bucket filter on the
	// namespace's end of the veth pair (throttle): its packets queue, and
	// past the queue's bound are dropped (TCP retransmits them).
	NetAgentSlow = "net-agent-slow"
)

// NetFaults are the network faults, injected with -netns.
var NetFaults = []string{NetAgentPG, NetAgentS3, NetClientAgent, NetAgentSlow}

// The throttle of NetAgentSlow: 2 Mbit/s, a 16 KiB burst, packets queued
// at most 300 ms (then dropped).
var throttleArgs = []string{"tbf", "rate", "2mbit", "burst", "16kb", "latency", "300ms"}

// tcPath is the tc command (in /usr/sbin, often not on a user's PATH).
func tcPath() string {
	if p, err := exec.LookPath("tc"); err == nil {
		return p
	}
	return "/usr/sbin/tc"
}

// throttle puts (or, with !on, takes off) NetAgentSlow's qdisc.
func (n *netns) throttle(on bool) error {
	if n.throttled == on {
		return nil
	}
	args := []string{"netns", "exec", n.name, tcPath(), "qdisc", "del", "dev", n.nsIf, "root"}
	if on {
		args = append([]string{"netns", "exec", n.name, tcPath(), "qdisc", "add", "dev", n.nsIf, "root"}, throttleArgs...)
	}
	if err := ipCmd(args...); err != nil {
		return err
	}
	n.throttled = on
	return nil
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newNetns makes namespace i of this driver process (names and addresses
// derived from its pid, so that two drivers do not collide).
func newNetns(i int) (*netns, error) {
	pid := os.Getpid()
	base := fmt.Sprintf("10.%d.%d", 64+pid%128, (pid/128%32)*8+i)
	n := &netns{name: fmt.Sprintf("floe-chaos-%d-%d", pid, i),
		hostIf: fmt.Sprintf("fc%dh%d", pid, i), nsIf: fmt.Sprintf("fc%dn%d", pid, i),
		client: base + ".1", agent: base + ".2", pg: base + ".3", s3: base + ".4", blackholed: map[string]bool{}}
	if len(n.hostIf) > 15 {
		n.hostIf, n.nsIf = fmt.Sprintf("fc%dh%d", pid%1000000, i), fmt.Sprintf("fc%dn%d", pid%1000000, i)
	}
	fail := func(err error) (*netns, error) {
		n.remove()
		return nil, err
	}
	if err := ipCmd("netns", "add", n.name); err != nil {
		return nil, err
	}
	n.created = true
	if err := ipCmd("link", "add", n.hostIf, "type", "veth", "peer", "name", n.nsIf); err != nil {
		return fail(err)
	}
	n.veth = true
	steps := [][]string{
		{"link", "set", n.nsIf, "netns", n.name},
		{"addr", "add", n.client + "/29", "dev", n.hostIf},
		{"addr", "add", n.pg + "/32", "dev", n.hostIf},
		{"addr", "add", n.s3 + "/32", "dev", n.hostIf},
		{"link", "set", n.hostIf, "up"},
		{"netns", "exec", n.name, "ip", "addr", "add", n.agent + "/29", "dev", n.nsIf},
		{"netns", "exec", n.name, "ip", "link", "set", n.nsIf, "up"},
		{"netns", "exec", n.name, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return fail(err)
		}
	}
	return n, nil
}

// target is the host-end address a partition kind cuts.
func (n *netns) target(kind string) string {
	switch kind {
	case NetAgentPG:
		return n.pg
	case NetAgentS3:
		return n.s3
	}
	return n.client
}

// partition cuts (or, with !on, heals) the namespace from kind's address.
func (n *netns) partition(kind string, on bool) error {
	addr := n.target(kind)
	if n.blackholed[addr] == on {
		return nil
	}
	verb := "add"
	if !on {
		verb = "del"
	}
	if err := ipCmd("netns", "exec", n.name, "ip", "route", verb, "blackhole", addr+"/32"); err != nil {
		return err
	}
	n.blackholed[addr] = on
	return nil
}

// heal removes every partition and the throttle.
func (n *netns) heal() {
	for _, k := range []string{NetAgentPG, NetAgentS3, NetClientAgent} {
		_ = n.partition(k, false)
	}
	_ = n.throttle(false)
}

// remove deletes the namespace and the veth pair (deleting either end
// deletes both).
func (n *netns) remove() {
	if n.veth {
		_ = ipCmd("link", "del", n.hostIf)
	}
	if n.created {
		_ = ipCmd("netns", "del", n.name)
	}
}
