package kafka

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/floe-broker/floe/batcher"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn is one client connection.
type conn struct {
	s      *Server
	nc     net.Conn
	remote string
	// local is the address the client connected to (the default
	// advertised address).
	local *net.TCPAddr
	// ctx ends when the connection closes (set by serve before reading).
	ctx context.Context

	mu       sync.Mutex // protects clientID
	clientID string

	sasl connAuth // SASL state and principal (conn_auth.go)
	// writer is the batcher's view of this connection's produce requests
	// (set by serve before reading; nil: the backend keeps none).
	writer *batcher.Writer
	// closeAfter, set by a handler's synchronous part (on the reader),
	// closes the connection once that request is answered.
	closeAfter bool
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, remote: nc.RemoteAddr().String()}
	c.local, _ = nc.LocalAddr().(*net.TCPAddr)
	return c
}

// client names the client in log lines.
func (c *conn) client() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clientID == "" {
		return c.remote
	}
	return c.clientID + "@" + c.remote
}

// inflight is one request between dispatch and its response.
type inflight struct {
	correlation int32
	weight      int64
	closeAfter  bool // close the connection once this is answered
	done        chan struct{}
	resp        kmsg.Response // set before done closes; nil: no response
	// The response budget (respbudget.go): turn closes once this request
	// is admitted (prev, the previous request's turn, first); respBound is
	// what it took, respWeight what its response holds.
	turn, prev            chan struct{}
	respBound, respWeight int64
}

// serve runs the connection until the client closes it, a frame is
// malformed, a write fails, or ctx (the server) ends.
func (c *conn) serve(srvCtx context.Context) {
	ctx, cancel := context.WithCancel(srvCtx)
	defer cancel()
	c.ctx = ctx
	c.writer = c.s.be.KafkaNewWriter()
	defer c.writer.Close()
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	defer stop()
	queue := make(chan *inflight, c.s.cfg.MaxInFlight)
	budget, respBudget := newBudget(c.s.cfg.MaxBufferedBytes), newBudget(c.s.cfg.MaxBufferedBytes)
	var wg sync.WaitGroup // the handlers' goroutines
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.write(ctx, cancel, queue, budget, respBudget)
	}()
	err := c.read(ctx, srvCtx, queue, budget, respBudget, &wg)
	// No request follows: the batcher no longer waits for this
	// connection's batches (its requests in flight are still answered).
	c.writer.Close()
	close(queue)
	switch {
	case err == nil, errors.Is(err, io.EOF), ctx.Err() != nil, errors.Is(err, net.ErrClosed):
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrFrameTooLarge):
		c.s.log.Warn("kafka: closing connection: bad request", "client", c.client(), "err", err)
		cancel()
	default:
		c.s.log.Debug("kafka: connection read failed", "client", c.client(), "err", err)
		cancel()
	}
	<-writerDone
	cancel()
	wg.Wait()
	c.nc.Close()
}

// read reads and dispatches frames until an error.
func (c *conn) read(ctx, srvCtx context.Context, queue chan<- *inflight, budget, respBudget *budget, wg *sync.WaitGroup) error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	prev := make(chan struct{})
	close(prev)
	for {
		n, err := readFrameSize(br, c.s.cfg.MaxFrameBytes)
		if err != nil {
			return err
		}
		if err := budget.Acquire(ctx, int64(n)); err != nil {
			return err
		}
		c.s.held.Add(int64(n))
		frame := make([]byte, n)
		if _, err := io.ReadFull(br, frame); err != nil {
			c.release(budget, int64(n))
			return err
		}
		r, err := parseRequest(frame)
		if r.clientID != "" || err == nil {
			c.mu.Lock()
			c.clientID = r.clientID // also for a bad body: the log names the client
			c.mu.Unlock()
		}
		if err != nil {
			c.release(budget, int64(n))
			return err
		}
		c.s.requests.add(r.key)
		f := &inflight{correlation: r.correlation, weight: int64(n), done: make(chan struct{}), prev: prev, turn: prev}
		select {
		case queue <- f: // a slot of MaxInFlight
		case <-ctx.Done():
			c.release(budget, int64(n))
			return ctx.Err()
		}
		if r.unsupported {
			c.s.log.Debug("kafka: unsupported api or version", "client", c.client(), "api", kmsg.NameForKey(r.key), "version", r.version)
			f.resp = unsupportedResponse(r.key, r.version)
			close(f.done)
			continue
		}
		work, err := c.dispatchAuthorized(r) // authentication and ACLs (authz.go)
		if err != nil {
			f.resp = nil
			close(f.done)
			return err
		}
		f.closeAfter = c.closeAfter
		f.turn, f.respBound = make(chan struct{}), c.responseBound(r)
		prev = f.turn
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(f.done)
			if !c.admit(ctx, respBudget, f) {
				return
			}
			defer c.made(f)
			defer c.recoverTo(f, r.key)
			// Produce waits on the server's context: a produce appended
			// is committed (or not) whatever becomes of the connection.
			hctx := ctx
			if r.key == kmsg.Produce.Int16() {
				hctx = srvCtx
			}
			f.resp = work(hctx)
			if f.resp != nil {
				f.resp.SetVersion(r.version)
			}
		}()
		if f.closeAfter {
			<-ctx.Done() // read no more: the writer closes once it is answered
			return ctx.Err()
		}
	}
}

// dispatch runs a request's synchronous part, recovering from a panic as
// a malformed request.
func (c *conn) dispatch(r request) (work func(context.Context) kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.s.log.Error("kafka: handler panic", "client", c.client(), "api", kmsg.NameForKey(r.key), "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %s v%d: handler failed", ErrMalformed, kmsg.NameForKey(r.key), r.version)
		}
	}()
	return apis[r.key].handle(c.s, c, r.req), nil
}

// recoverTo turns a handler's panic into a closed connection.
func (c *conn) recoverTo(f *inflight, key int16) {
	if p := recover(); p != nil {
		c.s.log.Error("kafka: handler panic", "client", c.client(), "api", kmsg.NameForKey(key), "panic", p, "stack", string(debug.Stack()))
		f.resp = nil
		c.nc.Close()
	}
}

// write answers the requests in order until queue closes.
func (c *conn) write(ctx context.Context, cancel context.CancelFunc, queue <-chan *inflight, budget, respBudget *budget) {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	failed := false
	for f := range queue {
		select {
		case <-f.done:
		case <-ctx.Done():
			<-f.done // handlers end with ctx
		}
		c.release(budget, f.weight)
		if failed || f.resp == nil {
			c.written(respBudget, f)
			if f.closeAfter && !failed { // refused without an answer
				failed = true
				cancel()
				c.nc.Close()
			}
			continue
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
		// Flushed at once: the next response may be a long poll.
		var err error
		buf, err = c.writeResponse(bw, buf, f.correlation, f.resp)
		c.written(respBudget, f)
		if err != nil || f.closeAfter {
			failed = true
			cancel()
			c.nc.Close()
			continue
		}
		if cap(buf) > 1<<20 {
			buf = nil // keep no large buffer between responses
		}
	}
}

// clientIDNow is the client id of the connection's latest request.
func (c *conn) clientIDNow() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientID
}

// remoteHost is the client's address as group descriptions show it.
func (c *conn) remoteHost() string {
	if h, _, err := net.SplitHostPort(c.remote); err == nil {
		return "/" + h
	}
	return c.remote
}
