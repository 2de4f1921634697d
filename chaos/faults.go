package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"time"

	"github.com/floe-broker/floe/chaos/history"
)

// The kinds of fault (history Fault ops' Value).
const (
	AgentKill         = "agent-kill"
	AgentPause        = "agent-pause"
	AgentPauseSession = "agent-pause-past-session" // its members' sessions expire
	CompactorKill     = "compactor-kill"
	CompactorPause    = "compactor-pause-past-lease" // the other replica takes its leases
	PGRestart         = "pg-restart"
	PGCrash           = "pg-crash"
	PGPause           = "pg-pause"
	PGPartition       = "pg-partition"
	PGLoseCommit      = "pg-lost-commit-answer"
	S3Outage          = "s3-outage"
	S3SlowDown        = "s3-slowdown"
	S3Latency         = "s3-latency"
	S3ErrorAfterWrite = "s3-error-after-write"
	MemberCrash       = "member-crash"
	// PGSlowLink and S3SlowLink: the proxies' links to PostgreSQL (both,
	// with a standby) and S3 slow and lossy (slowLink).
	PGSlowLink = "pg-slow-link"
	S3SlowLink = "s3-slow-link"
	// PGFailover: the primary killed, the synchronous standby promoted
	// (once per run, with Config.Failover).
	PGFailover = "pg-failover"
)

// AllFaults is every fault kind, the default mix.
var AllFaults = []string{AgentKill, AgentPause, AgentPauseSession, CompactorKill, CompactorPause, PGRestart, PGCrash,
	PGPause, PGPartition, PGLoseCommit, PGSlowLink, S3Outage, S3SlowDown, S3Latency, S3ErrorAfterWrite, S3SlowLink, MemberCrash}

// ParseFaults checks a comma-separated list of fault kinds ("all": every
// one).
func ParseFaults(s string) ([]string, error) {
	if s == "all" || s == "" {
		return AllFaults, nil
	}
	var out []string
	for _, k := range strings.Split(s, ",") {
		found := false
		for _, f := range append(AllFaults, NetFaults...) {
			found = found || f == k
		}
		if !found {
			return nil, fmt.Errorf("chaos: unknown fault %q (known: %s)", k, strings.Join(AllFaults, ", "))
		}
		out = append(out, k)
	}
	return out, nil
}

// faulter injects one fault at a time, drawn from kinds with rng.
type faulter struct {
	d     *Deployment
	w     *workload
	rng   *rand.Rand
	kinds []string
	// failoverAt, when set, is when the failover happens.
	failoverAt time.Time
}

// run injects faults until ctx ends, each followed by its repair: a fault
// every 1-3 s, holding for up to a few seconds.
func (f *faulter) run(ctx context.Context) {
	for ctx.Err() == nil {
		if !sleep(ctx, time.Duration(1000+f.rng.IntN(2000))*time.Millisecond) {
			return
		}
		if !f.failoverAt.IsZero() && !f.d.failedOver && time.Now().After(f.failoverAt) {
			if err := f.d.failover(ctx, func() { f.w.add(history.Op{Type: history.Fault, Value: PGFailover}) }); err != nil {
				f.w.log.Warn("chaos: failover", "err", err)
			}
			continue
		}
		if len(f.kinds) == 0 {
			continue
		}
		kind := f.kinds[f.rng.IntN(len(f.kinds))]
		if f.d.failedOver && (kind == PGRestart || kind == PGCrash || kind == PGPause) {
			continue // the old primary is gone; the new one is not a services.Postgres
		}
		if (kind == CompactorKill || kind == CompactorPause) && len(f.d.Compactors) == 0 {
			continue
		}
		if strings.HasPrefix(kind, "net-") && len(f.d.namespaces) == 0 {
			continue
		}
		f.inject(ctx, kind)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// inject applies one fault and repairs it (the repairs run even when ctx
// ends meanwhile).
func (f *faulter) inject(ctx context.Context, kind string) {
	hold := time.Duration(500+f.rng.IntN(3500)) * time.Millisecond
	agent := f.d.Agents[f.rng.IntN(len(f.d.Agents))]
	var compactor *proc
	if len(f.d.Compactors) > 0 {
		compactor = f.d.Compactors[f.rng.IntN(len(f.d.Compactors))]
	}
	detail := ""
	record := func() {
		f.w.add(history.Op{Type: history.Fault, Value: kind, Detail: detail})
	}
	switch kind {
	case AgentKill:
		detail = agent.name
		record()
		if err := f.d.Kill(agent); err != nil {
			f.w.log.Warn("chaos: restart agent", "err", err)
		}
	case AgentPause, AgentPauseSession:
		if kind == AgentPauseSession {
			hold = SessionTimeout + time.Duration(1000+f.rng.IntN(3000))*time.Millisecond
		}
		detail = fmt.Sprintf("%s for %v", agent.name, hold)
		record()
		f.d.Pause(agent, true)
		sleep(ctx, hold)
		f.d.Pause(agent, false)
	case CompactorKill:
		detail = compactor.name
		record()
		if err := f.d.Kill(compactor); err != nil {
			f.w.log.Warn("chaos: restart compactor", "err", err)
		}
	case CompactorPause:
		hold = compactorLease + time.Duration(f.rng.IntN(3000))*time.Millisecond
		detail = fmt.Sprintf("%s for %v", compactor.name, hold)
		record()
		f.d.Pause(compactor, true)
		sleep(ctx, hold)
		f.d.Pause(compactor, false)
	case PGRestart:
		record()
		if err := f.d.PG.Halt(); err == nil {
			sleep(ctx, hold)
			f.resumePG()
		}
	case PGCrash:
		record()
		_ = syscall.Kill(-f.d.PG.Pid(), syscall.SIGKILL)
		sleep(ctx, hold)
		f.resumePG()
	case PGPause:
		detail = fmt.Sprintf("for %v", hold)
		record()
		_ = syscall.Kill(-f.d.PG.Pid(), syscall.SIGSTOP)
		sleep(ctx, hold)
		_ = syscall.Kill(-f.d.PG.Pid(), syscall.SIGCONT)
	case PGPartition, PGLoseCommit:
		detail = fmt.Sprintf("for %v", hold)
		record()
		f.d.setPG(PGMode{Refuse: kind == PGPartition, LoseCommitAnswers: kind == PGLoseCommit})
		sleep(ctx, hold)
		f.d.setPG(PGMode{})
	case PGSlowLink:
		l := slowLink(f.rng)
		detail = fmt.Sprintf("%+v for %v", l, hold)
		record()
		f.d.setPG(PGMode{Link: l})
		sleep(ctx, hold)
		f.d.setPG(PGMode{})
	case S3SlowLink:
		l := slowLink(f.rng)
		detail = fmt.Sprintf("%+v for %v", l, hold)
		record()
		f.d.S3Proxy.Set(S3Mode{Link: l})
		sleep(ctx, hold)
		f.d.S3Proxy.Set(S3Mode{})
	case S3Outage, S3SlowDown, S3Latency, S3ErrorAfterWrite:
		m := S3Mode{Outage: kind == S3Outage, SlowDown: kind == S3SlowDown, ErrorAfterWrite: kind == S3ErrorAfterWrite}
		if kind == S3Latency {
			m.Latency = time.Duration(1000+f.rng.IntN(3000)) * time.Millisecond
			detail = "latency " + m.Latency.String()
		}
		detail += fmt.Sprintf(" for %v", hold)
		record()
		f.d.S3Proxy.Set(m)
		sleep(ctx, hold)
		f.d.S3Proxy.Set(S3Mode{})
	case NetAgentSlow:
		ns := f.d.namespaces[f.rng.IntN(len(f.d.namespaces))]
		detail = fmt.Sprintf("%s for %v", ns.name, hold)
		record()
		if err := ns.throttle(true); err != nil {
			f.w.log.Warn("chaos: throttle", "err", err)
			return
		}
		sleep(ctx, hold)
		if err := ns.throttle(false); err != nil {
			f.w.log.Warn("chaos: heal throttle", "err", err)
		}
	case NetAgentPG, NetAgentS3, NetClientAgent:
		ns := f.d.namespaces[f.rng.IntN(len(f.d.namespaces))]
		detail = fmt.Sprintf("%s for %v", ns.name, hold)
		record()
		if err := ns.partition(kind, true); err != nil {
			f.w.log.Warn("chaos: partition", "err", err)
			return
		}
		sleep(ctx, hold)
		if err := ns.partition(kind, false); err != nil {
			f.w.log.Warn("chaos: heal partition", "err", err)
		}
	case MemberCrash:
		record()
		select {
		case f.w.crash <- struct{}{}:
		case <-time.After(2 * time.Second):
		}
	}
}

// resumePG starts a halted or crashed PostgreSQL again on its port: the
// crashed one once its processes are gone.
func (f *faulter) resumePG() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := f.d.PG.Resume(ctx)
		if err == nil || !strings.Contains(err.Error(), "is running") {
			if err != nil {
				f.w.log.Warn("chaos: resume postgres", "err", err)
			}
			return
		}
		if !sleep(ctx, 50*time.Millisecond) {
			return
		}
	}
}
