package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/errandhq/errand/internal/store"
)

// wakeChannel is the LISTEN/NOTIFY channel of every errand node on a
// database.
const wakeChannel = "errand_wake"

// Notify tells every other listening node that tasks or queues changed.
// The payload is this store's origin, followed by waitersSuffix for
// store.ChangeWaiters and functionsSuffix for store.ChangeFunctions: its
// own Listen skips it, as the sender woke its own services when it made
// the change (an idle node would otherwise run a second pass of its
// dispatcher, rescuer and scheduler beside the claim of every task it
// adds). Nodes of earlier versions take any payload but
// configPayload as a plain wake (a change for the waiters too: they wake
// more than they need, as before). Each node opens its own Store: two
// engines on one Store value would not hear each other's Notify.
func (s *Store) Notify(ctx context.Context, c store.Change) error {
	payload := s.origin
	switch c {
	case store.ChangeWaiters:
		payload += waitersSuffix
	case store.ChangeFunctions:
		payload += functionsSuffix
	}
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify('"+wakeChannel+"', $1)", payload); err != nil {
		return interpretError(err)
	}
	return nil
}

// configPayload marks NotifyConfig's notifications on the wake channel:
// instances, queues or API keys changed. It wakes the services as any notification
// does.
const configPayload = "config"

// waitersSuffix ends the payload of a Notify of store.ChangeWaiters, after
// the sender's origin; functionsSuffix one of store.ChangeFunctions.
const (
	waitersSuffix   = "/waiters"
	functionsSuffix = "/functions"
)

// NotifyConfig sends a notification that instances, queues or API keys
// changed.
func (s *Store) NotifyConfig(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify('"+wakeChannel+"', '"+configPayload+"')"); err != nil {
		return interpretError(err)
	}
	return nil
}

// Listen holds one connection with LISTEN errand_wake and calls fn for every
// notification but this store's own Notify (store.HeardWaiters for another
// node's of store.ChangeWaiters, store.HeardFunctions for one of
// store.ChangeFunctions), and once after each
// (re)connect, since notifications sent while it was away are lost. Its own
// NotifyConfig and the notification TaskAddTx queues (empty payload, sent
// at the application's commit) are passed on. It returns when ctx ends.
func (s *Store) Listen(ctx context.Context, fn func(store.Heard)) error {
	return s.listen(ctx, wakeChannel, func(payload string, connected bool) {
		switch {
		case connected:
			fn(store.HeardConnect)
		case payload == configPayload:
			fn(store.HeardConfig)
		case payload == s.origin || payload == s.origin+waitersSuffix || payload == s.origin+functionsSuffix:
		case strings.HasSuffix(payload, waitersSuffix):
			fn(store.HeardWaiters)
		case strings.HasSuffix(payload, functionsSuffix):
			fn(store.HeardFunctions)
		default:
			fn(store.HeardChange)
		}
	})
}

// listen holds one connection with LISTEN name and calls fn with the
// payload of every notification, and with connected after each
// (re)connect: anything may have changed while no one listened. It
// reconnects a second after a loss and returns when ctx ends.
func (s *Store) listen(ctx context.Context, name string, fn func(payload string, connected bool)) error {
	for {
		err := s.listenOnce(ctx, name, fn)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("postgres: LISTEN connection lost; reconnecting", "channel", name, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, name string, fn func(payload string, connected bool)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+name); err != nil {
		return err
	}
	fn("", true)
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection may be mid-wait: do not hand it back to the
			// pool for others.
			conn.Conn().Close(context.Background())
			return err
		}
		fn(n.Payload, false)
	}
}

// ServerNow returns PostgreSQL's clock.
func (s *Store) ServerNow(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := s.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t); err != nil {
		return time.Time{}, interpretError(err)
	}
	return t, nil
}
