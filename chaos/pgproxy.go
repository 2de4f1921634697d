package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
)

// PGMode is what the PostgreSQL proxy does; the zero value forwards.
type PGMode struct {
	// Refuse drops every connection and closes new ones at once (a
	// partition between floe and PostgreSQL).
	Refuse bool
	// LoseCommitAnswers withholds the answer to every statement naming
	// "commit" (COMMIT, floe_commit_file_v2, the group commits) that the
	// server completed: the connection is cut after the server's reply
	// arrived and before it is relayed, so the transaction committed and
	// the client does not know.
	LoseCommitAnswers bool
	// Link delays each burst of messages either way (Link).
	Link Link
}

// PGProxy is a TCP proxy in front of PostgreSQL that understands the
// message framing of the protocol enough to find commits.
type PGProxy struct {
	ln     net.Listener
	extra  []net.Listener // guarded by mu
	target string
	log    *slog.Logger

	mu    sync.Mutex // guards mode, conns, target
	mode  PGMode
	conns map[*pgConn]struct{}

	// Withheld counts the commit answers withheld.
	Withheld atomic.Int64
	wg       sync.WaitGroup
}

// StartPGProxy listens on a free loopback port and forwards to target
// (host:port).
func StartPGProxy(target string, log *slog.Logger) (*PGProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: postgres proxy: %w", err)
	}
	p := &PGProxy{ln: ln, target: target, log: log, conns: map[*pgConn]struct{}{}}
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

// Listen adds a listener on host (an address of the driver's own, such
// as a namespace's veth peer) and returns its host:port.
func (p *PGProxy) Listen(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("chaos: postgres proxy: %w", err)
	}
	p.mu.Lock()
	p.extra = append(p.extra, ln)
	p.mu.Unlock()
	p.wg.Add(1)
	go p.accept(ln)
	return ln.Addr().String(), nil
}

// Addr is the proxy's host:port.
func (p *PGProxy) Addr() string { return p.ln.Addr().String() }

// addr is Addr, "" for no proxy.
func (p *PGProxy) addr() string {
	if p == nil {
		return ""
	}
	return p.Addr()
}

// Set changes the mode; Refuse drops the open connections.
func (p *PGProxy) Set(m PGMode) {
	p.mu.Lock()
	p.mode = m
	var drop []*pgConn
	if m.Refuse {
		for c := range p.conns {
			drop = append(drop, c)
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
}

func (p *PGProxy) current() PGMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Close stops the proxy and drops its connections.
func (p *PGProxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, ln := range p.extra {
		_ = ln.Close()
	}
	p.mu.Unlock()
	p.Set(PGMode{Refuse: true})
	p.wg.Wait()
}

func (p *PGProxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if p.current().Refuse {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		s, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		pc := &pgConn{client: c, server: s, stmts: map[string]string{}}
		p.mu.Lock()
		p.conns[pc] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			err := pc.clientToServer(p)
			p.log.Debug("chaos: postgres proxy client side ended", "err", err)
			pc.close()
		}()
		go func() {
			defer p.wg.Done()
			if pc.serverToClient(p) {
				p.Withheld.Add(1)
			}
			pc.close()
			p.mu.Lock()
			delete(p.conns, pc)
			p.mu.Unlock()
		}()
	}
}

// pgConn is one proxied connection.
type pgConn struct {
	client, server net.Conn
	once           sync.Once
	// armed: a statement naming commit was forwarded and its answer is not
	// yet relayed.
	armed atomic.Bool
	// sslAsked: the client sent SSLRequest or GSSENCRequest, which the
	// server answers with one unframed byte.
	sslAsked atomic.Int32
	stmts    map[string]string // prepared statement -> query (client side goroutine only)
}

func (c *pgConn) close() {
	c.once.Do(func() {
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

const (
	sslRequestCode   = 80877103
	gssencRequestCod = 80877104
	maxPGMessage     = 1 << 30
)

// clientToServer forwards the startup messages, then typed messages,
// arming the connection on a statement naming commit.
func (c *pgConn) clientToServer(p *PGProxy) error {
	r := bufio.NewReader(c.client)
	for {
		msg, err := readUntyped(r)
		if err != nil {
			return err
		}
		code := binary.BigEndian.Uint32(msg[4:8])
		if code == sslRequestCode || code == gssencRequestCod {
			c.sslAsked.Add(1)
		}
		if _, err := c.server.Write(msg); err != nil {
			return err
		}
		if code != sslRequestCode && code != gssencRequestCod {
			break
		}
	}
	for {
		burst := r.Buffered() == 0
		msg, err := readTyped(r)
		if err != nil {
			return err
		}
		if burst {
			p.current().Link.wait(context.Background())
		}
		if q := c.query(msg); q != "" && bytes.Contains(bytes.ToLower([]byte(q)), []byte("commit")) {
			c.armed.Store(true)
		}
		if _, err := c.server.Write(msg); err != nil {
			return err
		}
	}
}

// query is the SQL a Query, Parse or Bind message runs ("" for others).
func (c *pgConn) query(msg []byte) string {
	body := msg[5:]
	field := func(b []byte) (string, []byte) {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return "", nil
		}
		return string(b[:i]), b[i+1:]
	}
	switch msg[0] {
	case 'Q':
		q, _ := field(body)
		return q
	case 'P':
		name, rest := field(body)
		q, _ := field(rest)
		c.stmts[name] = q
		return ""
	case 'B':
		_, rest := field(body)
		stmt, _ := field(rest)
		return c.stmts[stmt]
	}
	return ""
}

// serverToClient relays the server's messages. While the connection is
// armed it holds them until ReadyForQuery; then, if the proxy loses commit
// answers and the statement completed, it cuts the connection instead of
// relaying (and returns true).
func (c *pgConn) serverToClient(p *PGProxy) bool {
	r := bufio.NewReader(c.server)
	for range c.sslAsked.Load() {
		b, err := r.ReadByte()
		if err != nil {
			return false
		}
		if _, err := c.client.Write([]byte{b}); err != nil {
			return false
		}
	}
	var held []byte
	completed := false
	for {
		burst := r.Buffered() == 0
		msg, err := readTyped(r)
		if err != nil {
			return false
		}
		if burst {
			p.current().Link.wait(context.Background())
		}
		if !c.armed.Load() {
			if _, err := c.client.Write(msg); err != nil {
				return false
			}
			continue
		}
		held = append(held, msg...)
		switch msg[0] {
		case 'C':
			completed = true
		case 'E':
			completed = false
		case 'Z':
			if completed && p.current().LoseCommitAnswers {
				return true
			}
			c.armed.Store(false)
			if _, err := c.client.Write(held); err != nil {
				return false
			}
			held, completed = held[:0], false
		}
	}
}

var errPGFrame = errors.New("chaos: bad postgres message length")

func readUntyped(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 8 || n > maxPGMessage {
		return nil, errPGFrame
	}
	msg := make([]byte, n)
	copy(msg, hdr[:])
	_, err := io.ReadFull(r, msg[4:])
	return msg, err
}

func readTyped(r *bufio.Reader) ([]byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > maxPGMessage {
		return nil, errPGFrame
	}
	msg := make([]byte, 1+n)
	copy(msg, hdr[:])
	_, err := io.ReadFull(r, msg[5:])
	return msg, err
}
