package testkit

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from a loopback port to the database, and
// can be cut and restored on the same port, to show a database going away
// and coming back without touching the shared server.
type Proxy struct {
	t      testing.TB
	Addr   string // where it listens
	target string // the database

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to target on a free loopback port; it stops at
// the end of the test.
func NewProxy(t testing.TB, target string) *Proxy {
	p := &Proxy{t: t, target: target, conns: map[net.Conn]bool{}}
	p.Start("127.0.0.1:0")
	t.Cleanup(p.stop)
	return p
}

// Start listens (again) on addr on addr and forwards every connection accepted.
func (p *Proxy) Start(addr string) {
	p.t.Helper()
	var (
		l   net.Listener
		err error
	)
	for try := 0; try < 50; try++ { // the port may take a moment to be free again
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("proxy listen %s: %v", addr, err)
	}
	p.mu.Lock()
	p.l, p.Addr = l, l.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.forward(c) })
		}
	})
}

// forward copies bytes both ways between c and a new connection to the
// database until either side closes.
func (p *Proxy) forward(c net.Conn) {
	d, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.l == nil { // cut meanwhile
		p.mu.Unlock()
		c.Close()
		d.Close()
		return
	}
	p.conns[c], p.conns[d] = true, true
	p.mu.Unlock()
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	wg.Go(func() { pipe(d, c) })
	wg.Go(func() { pipe(c, d) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, d)
	p.mu.Unlock()
}

// Cut closes the listener and every connection: the database is gone.
func (p *Proxy) Cut() {
	p.mu.Lock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) stop() {
	p.Cut()
	p.wg.Wait()
}
