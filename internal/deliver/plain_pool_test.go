package deliver

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// countingReceiver is a target that counts the connections it accepted and
// answers each request with answer.
func countingReceiver(t *testing.T, answer http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(answer)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// plainWebhook is a deliverer with the given pool limits whose http://
// deliveries go through plainClient.
func plainWebhook(t *testing.T, perHost int, wait time.Duration) *Webhook {
	t.Helper()
	w := newWebhook(t, WebhookOptions{ConnsPerHost: perHost, ConnWait: wait})
	if w.plain == nil {
		t.Skip("no plainClient on this platform")
	}
	return w
}

// deliverAll delivers n tasks to url at once and fails the test unless
// each succeeded.
func deliverAll(t *testing.T, w *Webhook, url string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if r := deliver(t, w, url); r.Outcome.Status != task.AttemptSucceeded {
				t.Errorf("delivery: %+v", r.Outcome)
			}
		})
	}
	wg.Wait()
}

// holdUntil is a target that holds every request until n are in flight
// at once.
func holdUntil(n int) http.HandlerFunc {
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	return func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		if arrived++; arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-r.Context().Done():
		}
	}
}

// TestPlainConnsPerHost: deliveries at once to one target share
// ConnsPerHost connections while the target answers, and get more when
// it does not.
func TestPlainConnsPerHost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		answer    http.HandlerFunc
		perHost   int
		wait      time.Duration
		n, opened int64
	}{
		// Past ConnsPerHost a delivery waits for a connection to come
		// back (ConnWait is a minute: none dials).
		{"FastTarget", func(http.ResponseWriter, *http.Request) {}, 2, time.Minute, 40, 2},
		// The deliveries past ConnsPerHost dial after ConnWait instead
		// of waiting for a connection that does not come back.
		{"SlowTarget", holdUntil(3), 1, time.Millisecond, 3, 3},
		// A connection the target closes after its answer frees its
		// place: the delivery waiting for one dials at once.
		{"ClosedConnection", func(rw http.ResponseWriter, _ *http.Request) { rw.Header().Set("Connection", "close") }, 1, time.Minute, 5, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, conns := countingReceiver(t, c.answer)
			w := plainWebhook(t, c.perHost, c.wait)
			deliverAll(t, w, srv.URL, int(c.n))
			if got := conns.Load(); got != c.opened {
				t.Fatalf("%d deliveries opened %d connections, want %d", c.n, got, c.opened)
			}
		})
	}
}

// TestPlainWaitEndsWithTheAttempt: a delivery waiting for a connection
// ends with its attempt, and the pool is left as it was: the connection
// in use serves the next delivery when it comes back.
func TestPlainWaitEndsWithTheAttempt(t *testing.T) {
	t.Parallel()
	rt := newRawTarget(t)
	w := plainWebhook(t, 1, time.Minute)
	first := deliverAsync(context.Background(), w, rt.url())
	c, br := rt.accept(t)
	readRequest(t, br)
	waits := make(chan struct{}, 1)
	w.plain.onWait = func() { waits <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	waiting := deliverAsync(ctx, w, rt.url())
	select {
	case <-waits:
	case <-time.After(5 * time.Second):
		t.Fatal("the second delivery did not wait for the connection")
	}
	cancel()
	if r := wait(t, waiting); r.Outcome.Status != task.AttemptFailed || r.Outcome.Error != "canceled" {
		t.Fatalf("the waiting delivery: %+v, want failed by its end", r.Outcome)
	}
	io.WriteString(c, okAnswer)
	if r := wait(t, first); r.Outcome.Status != task.AttemptSucceeded {
		t.Fatalf("first delivery: %+v", r.Outcome)
	}
	next := deliverAsync(context.Background(), w, rt.url())
	readRequest(t, br) // on the first connection
	io.WriteString(c, okAnswer)
	if r := wait(t, next); r.Outcome.Status != task.AttemptSucceeded {
		t.Fatalf("next delivery: %+v", r.Outcome)
	}
	select {
	case <-rt.conns:
		t.Fatal("a second connection was dialed")
	default:
	}
}
