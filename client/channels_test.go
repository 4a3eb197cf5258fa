package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/testkit"
)

// appendTo appends a message to a channel's log as a delivery does and
// tells the engine, returning its body's payload.
func (e *env) appendTo(instance, channel, payload string) {
	e.t.Helper()
	inst, err := e.eng.Instance(context.Background(), "dev", instance)
	if err != nil {
		e.t.Fatal(err)
	}
	taskID := id.New(e.clock.Now())
	ref := store.ChannelRef{InstanceID: inst.ID, Channel: channel}
	ms, err := e.st.ChannelAppend(context.Background(), []*store.ChannelAppendParams{{Ref: ref, TaskID: taskID,
		Body: []byte(`{"task":{"id":"` + taskID + `"},"payload":` + payload + `}`), Now: e.clock.Now().UnixMilli()}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.eng.ChannelAppended(ref, ms[0])
}

// TestSubscribe: the SDK's subscription gets typed events in order, with
// event ids; a new one resumes after an id; when the connection breaks the
// next call resumes on a new one from the last id; an id the channel
// never gave and a bad channel name are INVALID_ARGUMENT; Close ends it.
func TestSubscribe(t *testing.T) {
	e := start(t, options{})
	ctx := t.Context()
	sub := must(e.c.Subscribe(ctx, "jobs", "room-1", "")).of(t)
	e.appendTo("jobs", "room-1", `{"n":1}`)
	e.appendTo("jobs", "room-1", `{"n":2}`)
	for _, want := range []string{"1", "2"} {
		ev, err := sub.Next()
		if err != nil || ev.Type != errandapi.ChannelMessage || ev.ID != want || sub.LastEventID() != want {
			t.Fatalf("event %+v %v, want message %s", ev, err, want)
		}
	}
	// From an id.
	from1 := must(e.c.Subscribe(ctx, "jobs", "room-1", "1")).of(t)
	if ev, err := from1.Next(); err != nil || ev.ID != "2" || !strings.HasSuffix(string(ev.Data), `"payload":{"n":2}}`) {
		t.Fatalf("from 1: %+v %v", ev, err)
	}
	_ = from1.Close()
	if _, err := from1.Next(); !errors.Is(err, client.ErrSubscriptionClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := e.c.Subscribe(ctx, "jobs", "room-1", "99"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("an id never given: %v", err)
	}
	if _, err := e.c.Subscribe(ctx, "jobs", "bad.name", ""); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("a bad channel name: %v", err)
	}
	// A broken connection: the next call resumes from the last id.
	e.srv.CloseClientConnections()
	e.appendTo("jobs", "room-1", `{"n":3}`)
	if ev, err := sub.Next(); err != nil || ev.ID != "3" || !strings.HasSuffix(string(ev.Data), `"payload":{"n":3}}`) {
		t.Fatalf("after the connection broke: %+v %v", ev, err)
	}
	_ = sub.Close()
}

// proxied returns a client of e's node through a TCP proxy the test can
// cut and start again on the same address (the node going away and
// coming back).
func (e *env) proxied(t *testing.T) (*client.Client, *testkit.Proxy) {
	t.Helper()
	proxy := testkit.NewProxy(t, e.srv.Listener.Addr().String())
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := client.New("http://"+proxy.Addr, client.Options{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return c, proxy
}

// TestSubscriptionOutlivesAnOutage: a subscriber whose node is unreachable
// for far longer than the retry policy's tries (30 s of waits here, on an
// injected sleep: no real waiting) keeps trying, with waits that double up
// to MaxBackoff, and once the node is back on the same address resumes
// from its last event id: it gets the message published while the node
// was away, then the one published after.
func TestSubscriptionOutlivesAnOutage(t *testing.T) {
	e := start(t, options{})
	c, proxy := e.proxied(t)
	client.SetJitter(c, func(n int64) int64 { return n - 1 }) // every wait its whole step
	var waits []time.Duration
	var down time.Duration
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		if down += d; down >= 30*time.Second && len(waits) > 0 {
			proxy.Start(proxy.Addr) // the node is back, on the same address
		}
		return ctx.Err()
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // bounds a Next that never gets its event
	defer cancel()
	sub := must(c.Subscribe(ctx, "jobs", "room-1", "")).of(t)
	defer sub.Close()
	e.appendTo("jobs", "room-1", `{"n":1}`)
	if ev, err := sub.Next(); err != nil || ev.ID != "1" {
		t.Fatalf("before the outage: %+v %v", ev, err)
	}

	proxy.Cut() // the node goes away: the stream breaks, and dials are refused
	e.appendTo("jobs", "room-1", `{"n":2}`)
	if ev, err := sub.Next(); err != nil || ev.ID != "2" || !strings.HasSuffix(string(ev.Data), `"payload":{"n":2}}`) {
		t.Fatalf("after %d waits (%s) with the node away: %+v %v", len(waits), down, ev, err)
	}
	e.appendTo("jobs", "room-1", `{"n":3}`)
	if ev, err := sub.Next(); err != nil || ev.ID != "3" {
		t.Fatalf("after the node came back: %+v %v", ev, err)
	}

	// 0.1 s doubling, then 5 s (MaxBackoff) until 30 s have passed.
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000, 5000}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v ms", waits, want)
	}
	for i, w := range want {
		if waits[i] != w*time.Millisecond {
			t.Fatalf("waits %v, want %v ms", waits, want)
		}
	}
}

// TestSubscriptionEndsOnlyOnARefusal: a subscriber resumes through more
// 503 UNAVAILABLE answers than the retry policy's tries (from the head it
// subscribed at, though it had no message yet), but a reconnect
// refused for good (its key revoked: 401) ends the subscription at once,
// without a wait, and every later Next answers the same refusal.
func TestSubscriptionEndsOnlyOnARefusal(t *testing.T) {
	var unavailable atomic.Int64 // channel requests still to answer 503
	e := start(t, options{serve: true, wrap: func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1/channels/") && unavailable.Add(-1) >= 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_ = json.NewEncoder(w).Encode(errandapi.ErrorResponse{Error: errandapi.ErrorDetail{
					Code: errandapi.CodeUnavailable, Message: "the store is unreachable; try again"}})
				return
			}
			api.ServeHTTP(w, r)
		})
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // bounds a Next that never gets its event
	defer cancel()
	admin := e.client(e.key("dev", "full:*"), client.RetryPolicy{})
	must(admin.CreateInstance(ctx, "jobs")).of(t)
	reader := e.client(e.key("dev", "read:jobs"), client.RetryPolicy{})
	sub := must(reader.Subscribe(ctx, "jobs", "room-1", "")).of(t)
	defer sub.Close()

	unavailable.Store(6)
	e.srv.CloseClientConnections()
	e.appendTo("jobs", "room-1", `{"n":1}`)
	if ev, err := sub.Next(); err != nil || ev.ID != "1" {
		t.Fatalf("after six 503s: %+v %v", ev, err)
	}
	if n := len(e.recordedWaits()); n != 6 {
		t.Fatalf("%d waits for six 503s, want 6", n)
	}

	self := must(reader.Self(ctx)).of(t)
	if err := e.st.KeyRevoke(ctx, store.KeyRef{Org: "dev", ID: *self.KeyID}, e.clock.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	e.srv.CloseClientConnections()
	for range 2 {
		if _, err := sub.Next(); !errors.Is(err, client.ErrUnauthenticated) {
			t.Fatalf("after the key was revoked: %v, want UNAUTHENTICATED", err)
		}
	}
	if n := len(e.recordedWaits()); n != 6 {
		t.Fatalf("%d waits, want none after the refusal", n-6)
	}
}

// TestCloseEndsAWaitBetweenTries: Close, from another goroutine, ends a
// Next that is waiting to reconnect to a node that is away, at once (the
// wait is an injected sleep that only Close's cancellation ends early).
func TestCloseEndsAWaitBetweenTries(t *testing.T) {
	e := start(t, options{})
	c, proxy := e.proxied(t)
	waiting := make(chan struct{}, 1)
	outwaited := make(chan struct{}, 1)
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		select {
		case waiting <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second): // a bound, not a wait the test relies on
			outwaited <- struct{}{}
			return nil
		}
	})
	sub := must(c.Subscribe(t.Context(), "jobs", "room-1", "")).of(t)
	proxy.Cut()
	next := make(chan error, 1)
	go func() { _, err := sub.Next(); next <- err }()
	<-waiting
	_ = sub.Close()
	if err := <-next; !errors.Is(err, client.ErrSubscriptionClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	select {
	case <-outwaited:
		t.Fatal("Close did not end the wait between tries")
	default:
	}
}
