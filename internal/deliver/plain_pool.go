package deliver

import (
	"bufio"
	"context"
	"time"
)

// Connections per target. A push queue keeps up to maxInFlight deliveries
// in flight (1,000 by default), and with one request at a time on an
// HTTP/1.1 connection each would open its own: a fast target then holds a
// thousand connections, of which a few dozen would carry the same pace,
// and a server serves many connections slower than few (on loopback the
// bench's receiver answered ~1.5× fewer requests a second over 1,000
// than over 64). So past connsPerHost open connections to a target, a
// delivery that finds none idle first waits up to connWait for one to come
// back, and dials only if none does. A fast target's connections come back
// well within connWait, and their number stays near what its pace needs; a
// slow target's do not, and each delivery past connsPerHost then dials
// after connWait, once: its connection stays open for the next.
const (
	defaultConnsPerHost = 64
	defaultConnWait     = 100 * time.Millisecond
)

// hostPool is the pool's state for one dial address.
type hostPool struct {
	idle    []*plainConn      // the longest idle first
	open    int               // connections dialed and not yet closed, idle or in use
	waiters []chan *plainConn // deliveries waiting for a connection, the first first
}

// popWaiter takes the first waiting delivery off the list, or returns nil
// when none waits; p.mu is held.
func (h *hostPool) popWaiter() chan *plainConn {
	if len(h.waiters) == 0 {
		return nil
	}
	w := h.waiters[0]
	h.waiters[0] = nil
	h.waiters = h.waiters[1:]
	return w
}

// host returns addr's state; p.mu is held.
func (p *plainClient) host(addr string) *hostPool {
	h := p.hosts[addr]
	if h == nil {
		if p.hosts == nil {
			p.hosts = make(map[string]*hostPool)
		}
		h = &hostPool{}
		p.hosts[addr] = h
	}
	return h
}

// forget removes addr's state once nothing refers to it; p.mu is held.
func (p *plainClient) forget(addr string, h *hostPool) {
	if h.open == 0 && len(h.idle) == 0 && len(h.waiters) == 0 {
		delete(p.hosts, addr)
	}
}

// get returns a connection to addr: the one that went idle last, if the
// target has not closed it; one handed back while it waited (see
// defaultConnsPerHost); or a new one.
func (p *plainClient) get(ctx context.Context, addr string) (*plainConn, error) {
	waited := false
	for {
		now := time.Now()
		p.mu.Lock()
		h := p.host(addr)
		if n := len(h.idle); n > 0 {
			c := h.idle[n-1]
			h.idle[n-1] = nil
			h.idle = h.idle[:n-1]
			p.nIdle--
			p.mu.Unlock()
			if now.Sub(c.idleAt) < p.idleTimeout && !c.poisoned.Load() && c.br.Buffered() == 0 && plainAlive(c.nc) {
				return c, nil
			}
			p.drop(c)
			continue
		}
		if waited || h.open < p.connsPerHost {
			h.open++
			p.mu.Unlock()
			return p.dialConn(ctx, addr)
		}
		w := make(chan *plainConn, 1)
		h.waiters = append(h.waiters, w)
		p.mu.Unlock()
		if p.onWait != nil {
			p.onWait()
		}
		c, err := p.await(ctx, addr, w)
		if err != nil {
			return nil, err
		}
		if c != nil {
			return c, nil
		}
		waited = true // a connection closed, or none came back in time: dial
	}
}

// await waits on w for a connection handed back to a waiter of addr, for
// a close that leaves room to dial (nil), or for connWait to pass (nil).
func (p *plainClient) await(ctx context.Context, addr string, w chan *plainConn) (*plainConn, error) {
	t := time.NewTimer(p.connWait)
	defer t.Stop()
	select {
	case c := <-w:
		return c, nil
	case <-t.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	h := p.host(addr)
	for i, x := range h.waiters {
		if x == w {
			h.waiters = append(h.waiters[:i], h.waiters[i+1:]...)
			p.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	p.mu.Unlock()
	// Handed something as it stopped waiting: take it.
	c := <-w
	if err := ctx.Err(); err != nil {
		if c != nil {
			p.put(c)
		} else {
			p.wakeOne(addr)
		}
		return nil, err
	}
	return c, nil
}

// dialConn dials a connection counted in addr's open ones.
func (p *plainClient) dialConn(ctx context.Context, addr string) (*plainConn, error) {
	nc, err := p.dial(ctx, "tcp", addr)
	if err != nil {
		p.closed(addr)
		return nil, err
	}
	c := &plainConn{nc: nc, addr: addr, budget: -1}
	c.br = bufio.NewReaderSize(c, 4<<10)
	c.bw = bufio.NewWriterSize(nc, 4<<10)
	return c, nil
}

// put hands c to the first delivery waiting for a connection to its
// target, or returns it to the pool, or closes it when the pool is full.
func (p *plainClient) put(c *plainConn) {
	c.idleAt = time.Now()
	p.mu.Lock()
	h := p.host(c.addr)
	if w := h.popWaiter(); w != nil {
		p.mu.Unlock()
		w <- c
		return
	}
	if p.nIdle >= p.maxIdle || len(h.idle) >= p.maxIdleHost {
		p.mu.Unlock()
		p.drop(c)
		return
	}
	h.idle = append(h.idle, c)
	p.nIdle++
	if p.sweep == nil {
		p.sweep = time.AfterFunc(p.idleTimeout, p.sweepIdle)
	}
	p.mu.Unlock()
}

// drop closes c, which is in no pool.
func (p *plainClient) drop(c *plainConn) {
	c.nc.Close()
	p.closed(c.addr)
}

// closed counts a connection to addr gone, and lets the first delivery
// waiting for one dial instead.
func (p *plainClient) closed(addr string) { p.wake(addr, true) }

// wakeOne tells the first delivery waiting for a connection to addr, if
// any, to dial.
func (p *plainClient) wakeOne(addr string) { p.wake(addr, false) }

// wake is closed (one connection fewer to addr when gone) and wakeOne, in
// one hold of p.mu; addr's state is forgotten once nothing refers to it.
func (p *plainClient) wake(addr string, gone bool) {
	p.mu.Lock()
	h := p.host(addr)
	if gone {
		h.open--
	}
	w := h.popWaiter()
	if w == nil {
		p.forget(addr, h)
	}
	p.mu.Unlock()
	if w != nil {
		w <- nil
	}
}

// sweepIdle closes the connections idle for idleTimeout or longer, and
// comes back when the next one will be.
func (p *plainClient) sweepIdle() {
	now := time.Now()
	var stale []*plainConn
	p.mu.Lock()
	next := time.Duration(-1)
	for _, h := range p.hosts {
		i := 0
		for i < len(h.idle) && now.Sub(h.idle[i].idleAt) >= p.idleTimeout {
			i++
		}
		if i > 0 {
			stale = append(stale, h.idle[:i]...)
			h.idle = append(h.idle[:0:0], h.idle[i:]...)
		}
		if len(h.idle) > 0 {
			if d := p.idleTimeout - now.Sub(h.idle[0].idleAt); next < 0 || d < next {
				next = d
			}
		}
	}
	p.nIdle -= len(stale)
	p.sweep = nil
	if next >= 0 {
		p.sweep = time.AfterFunc(next, p.sweepIdle)
	}
	p.mu.Unlock()
	for _, c := range stale {
		p.drop(c)
	}
}

// closeIdle closes every idle connection; connections in use go back to
// the pool when their delivery ends, as with the Transport.
func (p *plainClient) closeIdle() {
	var idle []*plainConn
	p.mu.Lock()
	for _, h := range p.hosts {
		idle = append(idle, h.idle...)
		h.idle = nil
	}
	p.nIdle = 0
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
	p.mu.Unlock()
	for _, c := range idle {
		p.drop(c)
	}
}
