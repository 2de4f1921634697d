package kafka

// initial_delay.go: the one rule for the first join of an empty classic
// group (group.initial.rebalance.delay.ms), as Apache Kafka's coordinator
// applies it (InitialDelayedJoin): the join does not complete before the
// delay has passed, even when every member present has joined, so that
// consumers started together form one generation instead of one per
// arrival; while new members keep arriving the delay starts again, until
// the longest rebalance timeout since the group began to form.

import "time"

// initialDelay is an empty group's first join waiting out the delay.
type initialDelay struct {
	on     bool      // the join is in its initial delay
	first  bool      // the rebalance is an empty group's first join (delay or none)
	joined bool      // a new member joined during the current delay
	end    time.Time // no delay runs past it (the start + longest rebalance timeout)
}

// delayedJoinEnd decides, at the end of one delay (now), whether the join
// completes or waits for another delay, and until when.
func delayedJoinEnd(d initialDelay, now time.Time, delay time.Duration) (next time.Time, complete bool) {
	if !d.joined || !now.Before(d.end) {
		return time.Time{}, true
	}
	next = now.Add(delay)
	if next.After(d.end) {
		next = d.end
	}
	return next, false
}
