package main_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
)

// Three `floe consume -group` processes in one group over the real binary,
// PostgreSQL and the S3 server: every record is printed, none by two
// members (nor twice), and once they stop the group's positions are at
// the high watermarks.
func TestGroupThreeConsumersPostgresS3(t *testing.T) {
	dsn := testenv.Postgres(t)
	agent := startFloe(t, agentArgs(t, dsn)...)
	c := dialT(t, agent.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const parts = 6
	if _, err := c.CreateTopic(ctx, "orders", parts, nil); err != nil {
		t.Fatal(err)
	}
	produceIdem(t, c, "orders", parts, "a", 300)
	var cons []*follower
	for range 3 {
		cons = append(cons, startFollower(t, "orders", "-group", "billing", "-follow", "-print-offset", "-separator", ",",
			"-commit-interval", "200ms", "-session-timeout", "3s", "-addr", agent.addr))
	}
	// Once the three share the partitions, more records arrive.
	groupState(ctx, t, c, "billing", "stable", 3)
	produceIdem(t, c, "orders", parts, "b", 300)
	want := 600
	deadline := time.Now().Add(40 * time.Second)
	for {
		owners, total := map[string]int{}, 0
		for i, f := range cons {
			f.mu.Lock()
			for _, l := range f.lines {
				parts := strings.SplitN(l, ",", 3)
				if len(parts) != 3 {
					t.Fatalf("line %q is not partition,offset,value", l)
				}
				k := parts[0] + "/" + parts[1]
				if prev, ok := owners[k]; ok {
					f.mu.Unlock()
					t.Fatalf("record %s printed by consumers %d and %d", k, prev, i)
				}
				owners[k] = i
				total++
			}
			f.mu.Unlock()
		}
		if total == want {
			per := make([]int, len(cons))
			for _, i := range owners {
				per[i]++
			}
			t.Logf("records per consumer: %v", per)
			break
		}
		if total > want || time.Now().After(deadline) {
			t.Fatalf("%d records printed, want %d", total, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Stop them (SIGTERM commits what was printed and leaves).
	for _, f := range cons {
		_ = f.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.done:
		case <-time.After(15 * time.Second):
			t.Fatalf("consumer did not stop on SIGTERM: %s", f.errText())
		}
	}
	d := groupState(ctx, t, c, "billing", "empty", 0)
	if len(d.GetPartitions()) != parts {
		t.Fatalf("group after the consumers stopped: %v", d)
	}
	for _, p := range d.GetPartitions() {
		if p.GetCommitted() != p.GetHighWatermark() || p.GetHighWatermark() != 100 {
			t.Errorf("partition %d: committed %d, high watermark %d", p.GetPartition(), p.GetCommitted(), p.GetHighWatermark())
		}
	}
}

// `floe consume -group` without -follow prints from the group's committed
// position to the end, commits and exits: run twice, the second run prints
// only what was produced in between. The group commands show and move it.
func TestConsumeGroupTwice(t *testing.T) {
	_, floe := devFloe(t)
	if _, errs, code := floe("", "topic", "create", "t", "-partitions", "2"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("one\ntwo\nthree\n", "produce", "t"); code != 0 {
		t.Fatal(errs)
	}
	consume := func() []string {
		t.Helper()
		out, errs, code := floe("", "consume", "t", "-group", "g")
		if code != 0 {
			t.Fatalf("consume -group: exit %d: %s", code, errs)
		}
		if out == "" {
			return nil
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	if got := consume(); len(got) != 3 {
		t.Fatalf("first run printed %q, want the three records", got)
	}
	if _, errs, code := floe("four\nfive\n", "produce", "t"); code != 0 {
		t.Fatal(errs)
	}
	got := consume()
	if strings.Join(sorted(got), ",") != "five,four" {
		t.Fatalf("second run printed %q, want four and five", got)
	}
	if got := consume(); len(got) != 0 {
		t.Fatalf("third run printed %q, want nothing", got)
	}
	out, errs, code := floe("", "group", "list")
	if code != 0 || !strings.Contains(out, "g ") || !strings.Contains(out, "empty") {
		t.Fatalf("group list: %d %q %s", code, out, errs)
	}
	out, errs, code = floe("", "lag", "g")
	if code != 0 || !strings.Contains(out, "RATE/S") {
		t.Fatalf("lag: %d %q %s", code, out, errs)
	}
	// A preview plans and changes nothing; the reset then replays it all.
	out, errs, code = floe("", "group", "reset", "g", "-to", "earliest", "-topic", "t")
	if code != 0 || !strings.Contains(out, "preview: 2 of 2 positions would move") {
		t.Fatalf("reset dry run: %d %q %s", code, out, errs)
	}
	if got := consume(); len(got) != 0 {
		t.Fatalf("after a dry run printed %q, want nothing", got)
	}
	if _, errs, code := floe("", "group", "copy", "g", "g2"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("", "group", "reset", "g", "-to", "earliest", "-topic", "t", "-execute"); code != 0 {
		t.Fatal(errs)
	}
	if got := consume(); len(got) != 5 {
		t.Fatalf("after a reset to earliest printed %q, want all five", got)
	}
	// The copy kept the position g had: at the end.
	out, errs, code = floe("", "consume", "t", "-group", "g2")
	if code != 0 || out != "" {
		t.Fatalf("consume with the copy: %d %q %s", code, out, errs)
	}
	if _, errs, code := floe("", "group", "delete", "g2"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("", "group", "describe", "g2"); code != 1 || !strings.Contains(errs, `group "g2" not found`) {
		t.Fatalf("describe a deleted group: %d %s", code, errs)
	}
}

// groupState waits for the group to reach state with n members.
func groupState(ctx context.Context, t *testing.T, c *client.Client, group, state string, n int) *floev1.DescribeGroupResponse {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: group})
		if err == nil && d.GetState() == state && len(d.GetMembers()) == n {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s not %s with %d members: %v %v", group, state, n, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// The group commands print their usage on -h and refuse bad arguments in
// one line.
func TestGroupCommandsHelpAndErrors(t *testing.T) {
	for _, args := range [][]string{{"group"}, {"group", "list"}, {"group", "describe"}, {"group", "reset"},
		{"group", "copy"}, {"group", "delete"}, {"lag"}} {
		out, errs, code := runFloe(t, "", append(args, "-h")...)
		if code != 0 || !strings.HasPrefix(out, "usage: floe "+strings.Join(args, " ")) || errs != "" {
			t.Errorf("floe %v -h: exit %d, %.60q %q", args, code, out, errs)
		}
	}
	for _, args := range [][]string{{"group"}, {"group", "nope"}, {"group", "describe"}, {"group", "copy", "a"},
		{"group", "list", "extra"}, {"group", "reset", "g"}, {"group", "reset", "g", "-to", "x"},
		{"group", "reset", "g", "-to", "earliest", "-shift", "1"}, {"lag", "a", "b"},
		{"consume", "t", "-group", "g", "-from", "@1"}, {"consume", "t", "-group", "g", "-partition", "1"}} {
		_, errs, code := runFloe(t, "", append(args, "-addr", "127.0.0.1:1")...)
		if code != 1 || strings.Count(errs, "\n") != 1 {
			t.Errorf("floe %v: exit %d, stderr %q; want one line and exit 1", args, code, errs)
		}
	}
	_ = fmt.Sprint
}

// Two agents on PostgreSQL and S3; a `floe consume -group -follow` given
// both addresses keeps its member id and partitions when its agent is
// SIGKILLed: it reconnects to the other, and no record is printed twice
// or missed, by it or by the other member.
func TestGroupConsumerSurvivesAgentKill(t *testing.T) {
	dsn := testenv.Postgres(t)
	s3 := testenv.S3(t)
	args := []string{"agent", "-postgres-url", dsn, "-s3-bucket", s3.Bucket, "-s3-endpoint", s3.Endpoint,
		"-s3-region", s3.Region, "-s3-access-key", s3.AccessKey, "-s3-secret-key", s3.SecretKey, "-s3-path-style", "-s3-prefix", "grp"}
	a1, a2 := startFloe(t, args...), startFloe(t, args...)
	c := dialT(t, a2.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const parts = 4
	if _, err := c.CreateTopic(ctx, "ev", parts, nil); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-group", "g", "-follow", "-print-offset", "-separator", ",", "-commit-interval", "200ms", "-session-timeout", "5s"}
	x := startFollower(t, append([]string{"ev", "-addr", a1.addr + "," + a2.addr}, flags...)...)
	y := startFollower(t, append([]string{"ev", "-addr", a2.addr}, flags...)...)
	before := groupState(ctx, t, c, "g", "stable", 2)
	produceIdem(t, c, "ev", parts, "a", 200)
	waitPrinted(t, []*follower{x, y}, 200)
	a1.kill()
	produceIdem(t, c, "ev", parts, "b", 200)
	waitPrinted(t, []*follower{x, y}, 400)
	after := groupState(ctx, t, c, "g", "stable", 2)
	for i, m := range after.GetMembers() {
		if m.GetMemberId() != before.GetMembers()[i].GetMemberId() {
			t.Fatalf("members %v after the kill, want %v", after.GetMembers(), before.GetMembers())
		}
	}
}

// waitPrinted waits until the followers printed n distinct records in all,
// failing if one is printed twice.
func waitPrinted(t *testing.T, fs []*follower, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen, total := map[string]bool{}, 0
		for _, f := range fs {
			f.mu.Lock()
			for _, l := range f.lines {
				k := l[:strings.LastIndexByte(l, ',')]
				if seen[k] {
					f.mu.Unlock()
					t.Fatalf("record %s printed twice", k)
				}
				seen[k] = true
				total++
			}
			f.mu.Unlock()
		}
		if total == n {
			return
		}
		if total > n || time.Now().After(deadline) {
			t.Fatalf("%d records printed, want %d", total, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
