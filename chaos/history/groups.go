package history

import "fmt"

// ownership is one stretch of a member owning a partition, in history
// order: from the Assign that gave it to the Assign that took it away or
// the member's end.
type ownership struct {
	start, end int    // op indexes; end is len(ops) while open
	endedBy    string // "revoked", a MemberEnd's Detail, or "" (open)
}

// stale reports whether the stretch ended with the member losing the
// partition (revoked, or the member crashed or failed): a member that
// believed it owned the partition while the group had moved on, whose
// deliveries at least once allows.
func (o *ownership) stale() bool { return o.endedBy != "" && o.endedBy != "closed" }

type groupMember struct{ group, member string }

type groupPartition struct {
	group string
	k     tp
}

// ownerships returns every member's stretches of ownership per partition
// of its topic.
func ownerships(ops []Op) map[groupMember]map[tp][]*ownership {
	out := map[groupMember]map[tp][]*ownership{}
	open := func(m groupMember) map[tp][]*ownership {
		if out[m] == nil {
			out[m] = map[tp][]*ownership{}
		}
		return out[m]
	}
	closeAll := func(m groupMember, i int, by string, keep map[int32]bool) {
		for k, list := range open(m) {
			if last := list[len(list)-1]; last.endedBy == "" && last.end == -1 && !keep[k.p] {
				last.end, last.endedBy = i, by
			}
		}
	}
	for i := range ops {
		op := &ops[i]
		m := groupMember{op.Group, op.Member}
		switch op.Type {
		case Assign:
			keep := map[int32]bool{}
			for _, p := range op.Partitions {
				keep[p] = true
			}
			closeAll(m, i, "revoked", keep)
			owned := open(m)
			for _, p := range op.Partitions {
				k := tp{op.Topic, p}
				list := owned[k]
				if len(list) == 0 || list[len(list)-1].end != -1 {
					owned[k] = append(list, &ownership{start: i, end: -1})
				}
			}
		case MemberEnd:
			closeAll(m, i, op.Detail, nil)
		}
	}
	for _, parts := range out {
		for _, list := range parts {
			if last := list[len(list)-1]; last.end == -1 {
				last.end = len(ops)
			}
		}
	}
	return out
}

// ownedAt is the stretch of m owning k that holds op index i, or nil.
func ownedAt(own map[groupMember]map[tp][]*ownership, m groupMember, k tp, i int) *ownership {
	for _, o := range own[m][k] {
		if o.start <= i && i < o.end {
			return o
		}
	}
	return nil
}

// checkGroups flags what the groups' histories show: records no member
// consumed, records delivered to two members that both owned the
// partition at both deliveries (neither of them a stale owner), and
// records delivered again to a member that owned the partition (not a
// stale owner) after their first reader committed past them. Other second
// deliveries are counted (Redelivered, StaleDeliveries): at least once.
func checkGroups(r *Report, ops []Op, parts map[tp]*partitionState, ex *excuses) {
	own := ownerships(ops)
	committed := map[groupMember]map[tp]int64{}
	// committedAfterKill, with an async loss: the positions committed
	// after the primary's kill (see excuses.lostCommit).
	committedAfterKill := map[groupMember]map[tp]int64{}
	type delivery struct {
		member string
		index  int
	}
	readers := map[groupPartition]map[int64][]delivery{}
	for i := range ops {
		op := &ops[i]
		k := tp{op.Topic, op.Partition}
		m := groupMember{op.Group, op.Member}
		switch op.Type {
		case Commit:
			if committed[m] == nil {
				committed[m] = map[tp]int64{}
			}
			committed[m][k] = max(committed[m][k], op.Offset)
			if ex != nil && op.Time > ex.killedAt {
				if committedAfterKill[m] == nil {
					committedAfterKill[m] = map[tp]int64{}
				}
				committedAfterKill[m][k] = max(committedAfterKill[m][k], op.Offset)
			}
		case Read:
			if op.Group == "" {
				continue
			}
			g := groupPartition{op.Group, k}
			if readers[g] == nil {
				readers[g] = map[int64][]delivery{}
			}
			for _, prev := range readers[g][op.Offset] {
				if prev.member == op.Member {
					continue
				}
				pm := groupMember{op.Group, prev.member}
				prevAtMine, mineAtPrev := ownedAt(own, pm, k, i), ownedAt(own, m, k, prev.index)
				mine := ownedAt(own, m, k, i)
				switch {
				case committed[pm][k] > op.Offset && ex.lostCommit(op, committedAfterKill[pm][k]):
					// The commit past it was lost with the primary.
				case committed[pm][k] > op.Offset && mine != nil && mine.stale():
					// A zombie: fenced, it delivers what its stream still
					// had; its commits are refused.
					r.StaleDeliveries++
				case committed[pm][k] > op.Offset:
					r.flag(Anomaly{Kind: GroupCommittedRedelivery, Topic: k.topic, Partition: k.p, Offset: op.Offset, Value: op.Value,
						Detail: fmt.Sprintf("group %s: %s read it after %s committed %d", op.Group, op.Member, prev.member, committed[pm][k])})
				case prevAtMine != nil && mineAtPrev != nil && !prevAtMine.stale() && !mineAtPrev.stale():
					r.flag(Anomaly{Kind: GroupConcurrent, Topic: k.topic, Partition: k.p, Offset: op.Offset, Value: op.Value,
						Detail: fmt.Sprintf("group %s: %s and %s both own the partition", op.Group, prev.member, op.Member)})
				default:
					r.Redelivered++
				}
			}
			readers[g][op.Offset] = append(readers[g][op.Offset], delivery{op.Member, i})
		case GroupEnd:
			g := groupPartition{op.Group, k}
			got := readers[g]
			for o := op.From; o < op.Offset; o++ {
				if len(got[o]) > 0 {
					continue
				}
				if parts[k].trimmed(o) {
					r.Trimmed[GroupUnconsumed]++
					continue
				}
				if !ex.unconsumed(g, o) {
					r.flag(Anomaly{Kind: GroupUnconsumed, Topic: k.topic, Partition: k.p, Offset: o,
						Detail: fmt.Sprintf("group %s: below its position %d, read by no member", op.Group, op.Offset)})
				}
			}
		}
	}
}
