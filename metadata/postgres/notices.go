package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
)

const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// Notices returns a channel of the commit notices of every process sharing
// the database. The first call starts the store's listener — one dedicated
// connection doing LISTEN — and waits (up to ConnectTimeout) until it
// listens, so that commits made after Notices returns are announced.
func (s *Store) Notices(ctx context.Context) (<-chan metadata.Notice, error) {
	ch, err := s.hub.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	s.awaitListener(ctx)
	return ch, nil
}

// awaitListener starts the listener if needed and waits (up to
// ConnectTimeout) until it listens.
func (s *Store) awaitListener(ctx context.Context) {
	ready := s.startListener()
	timer := time.NewTimer(s.opts.ConnectTimeout)
	defer timer.Stop()
	select {
	case <-ready:
	case <-timer.C:
		s.opts.Logger.Warn("metadata: notices: listener not connected yet; notices start when it is")
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
}

// startListener starts the listener once and returns the channel closed
// when it first listens.
func (s *Store) startListener() <-chan struct{} {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	if s.ctx.Err() != nil { // closed
		done := make(chan struct{})
		close(done)
		return done
	}
	if s.ready == nil {
		s.ready = make(chan struct{})
		s.wg.Add(1)
		go s.listen(s.ready)
	}
	return s.ready
}

// listen keeps a LISTEN connection up until Close, reconnecting with
// backoff. After a reconnect it publishes an All notice, since notices sent
// while it was away are lost.
func (s *Store) listen(ready chan struct{}) {
	defer s.wg.Done()
	ctx := s.ctx
	retry := listenRetryMin
	connected := false
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			if connected {
				s.hub.Publish(metadata.Notice{All: true})
				s.aclSignal.Publish()
			} else {
				connected = true
				close(ready)
			}
			retry = listenRetryMin
		})
		if ctx.Err() != nil {
			return
		}
		s.opts.Logger.Warn("metadata: notices: listener connection lost; reconnecting",
			"channel", s.opts.NotifyChannel, "err", err, "retry_in", retry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, listenRetryMax)
	}
}

// listenOnce connects, LISTENs, calls listening, and relays notifications
// until the connection fails or ctx ends.
func (s *Store) listenOnce(ctx context.Context, listening func()) error {
	connectCtx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	conn, err := pgx.ConnectConfig(connectCtx, s.connCfg)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	refs, acls := refsChannel(s.opts.NotifyChannel), aclChannel(s.opts.NotifyChannel)
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.opts.NotifyChannel}.Sanitize()+"; LISTEN "+pgx.Identifier{refs}.Sanitize()+
		"; LISTEN "+pgx.Identifier{acls}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == acls {
			s.aclSignal.Publish()
			continue
		}
		if n.Channel == refs {
			if notice, ok := ParseRefsPayload(n.Payload); ok {
				s.hub.Publish(notice)
			}
			continue
		}
		s.hub.Publish(ParsePayload(n.Payload))
	}
}

// ParsePayload decodes a floe_commit_file notification payload: comma
// separated "topic:partition:highwatermark" items, or "*" for all. Anything
// malformed reads as All.
func ParsePayload(payload string) metadata.Notice {
	if payload == "*" || payload == "" {
		return metadata.Notice{All: true}
	}
	items := strings.Split(payload, ",")
	n := metadata.Notice{Partitions: make([]metadata.PartitionNotice, 0, len(items))}
	for _, item := range items {
		t, rest, ok1 := strings.Cut(item, ":")
		p, hw, ok2 := strings.Cut(rest, ":")
		topic, err1 := strconv.ParseInt(t, 10, 64)
		part, err2 := strconv.ParseInt(p, 10, 32)
		mark, err3 := strconv.ParseInt(hw, 10, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil {
			return metadata.Notice{All: true}
		}
		n.Partitions = append(n.Partitions, metadata.PartitionNotice{TopicID: topic, Partition: int32(part), HighWatermark: mark})
	}
	return n
}
