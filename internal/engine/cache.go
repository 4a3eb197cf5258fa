package engine

import (
	"context"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// cacheTTL is how long a cached instance, queue or API key is used without
// being read again: the most a change made on another node (or by `errand
// keys revoke`) goes unseen here when its notification is lost.
const cacheTTL = time.Second

// cachedStore is the engine's store on a shared database: it keeps the
// instances and queues it read, which every add, every dispatcher pass and
// every finish look up, and the API keys found by digest, which every
// request looks up (auth.Keys over Engine.Store), so that they cost no
// round trip while nothing changes. Its own writes of instances and queues
// and its key revocations drop every copy and tell the other nodes
// (store.Notifier.NotifyConfig), whose caches drop theirs on hearing it;
// `errand keys revoke`, which writes the store directly, sends the same
// notification. A notification lost (a LISTEN connection that dropped, a
// revocation written by another path) leaves a copy in use for at most
// cacheTTL; a reconnect drops every copy. Only keys found are kept: an
// unknown key is read again on every call, so a key made meanwhile works
// at once and unknown keys sent in bulk fill no memory.
//
// Copies are handed out as copies: callers may change what they get.
type cachedStore struct {
	store.Store
	n   store.Notifier
	now func() time.Time // real time: the lifetime is not a task time

	mu     sync.Mutex
	gen    uint64 // bumped by every drop: a read begun before it is not kept
	byName map[store.InstanceRef]cached[*task.Instance]
	byID   map[string]cached[*task.Instance]
	queues map[store.QueueRef]cached[*task.Queue]
	all    map[struct{}]cached[[]*task.Queue] // QueueListAll's, under the one key
	keys   map[string]cached[*store.APIKey]   // by digest
	drops  *progress[int]                     // tests only: how many drops
}

type cached[T any] struct {
	v  T
	at time.Time
}

// Store's optional interfaces the engine looks for, passed through.
var (
	_ store.Notifier    = (*cachedStore)(nil)
	_ store.ServerClock = (*cachedStore)(nil)
)

func newCachedStore(s store.Store, n store.Notifier) *cachedStore {
	c := &cachedStore{Store: s, n: n, now: time.Now}
	c.reset()
	return c
}

func (c *cachedStore) reset() {
	c.byName = map[store.InstanceRef]cached[*task.Instance]{}
	c.byID = map[string]cached[*task.Instance]{}
	c.queues = map[store.QueueRef]cached[*task.Queue]{}
	c.all = map[struct{}]cached[[]*task.Queue]{}
	c.keys = map[string]cached[*store.APIKey]{}
}

// drop forgets every copy (another node changed instances, queues or keys,
// or the LISTEN connection was made again).
func (c *cachedStore) drop() {
	c.mu.Lock()
	c.gen++
	c.reset()
	c.mu.Unlock()
	c.drops.update(func(n *int) { *n++ })
}

// changed drops every copy after a write of this node and tells the others.
func (c *cachedStore) changed(ctx context.Context) {
	c.drop()
	// The write is committed: a failed notification leaves the other
	// nodes' copies to their lifetime, and is not the caller's error.
	_ = c.n.NotifyConfig(context.WithoutCancel(ctx))
}

// fresh reports whether a copy made at at is still in use.
func (c *cachedStore) fresh(at time.Time) bool { return c.now().Sub(at) < cacheTTL }

// read returns a copy from get under the lock if fresh, else loads it and
// keeps it unless a drop came meanwhile.
func read[K comparable, T any](c *cachedStore, m func() map[K]cached[T], k K, load func() (T, error)) (T, error) {
	c.mu.Lock()
	e, ok := m()[k]
	gen := c.gen
	c.mu.Unlock()
	if ok && c.fresh(e.at) {
		return e.v, nil
	}
	at := c.now()
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.gen == gen {
		m()[k] = cached[T]{v: v, at: at}
	}
	c.mu.Unlock()
	return v, nil
}

func copyInstance(i *task.Instance) *task.Instance { c := *i; return &c }

func copyQueue(q *task.Queue) *task.Queue {
	c := *q
	if q.Target != nil {
		t := *q.Target
		c.Target = &t
	}
	return &c
}

// InstanceGet reads an instance by (org, name) through the cache.
func (c *cachedStore) InstanceGet(ctx context.Context, ref store.InstanceRef) (*task.Instance, error) {
	i, err := read(c, func() map[store.InstanceRef]cached[*task.Instance] { return c.byName }, ref,
		func() (*task.Instance, error) { return c.Store.InstanceGet(ctx, ref) })
	if err != nil {
		return nil, err
	}
	return copyInstance(i), nil
}

// InstanceGetByID reads an instance by id through the cache.
func (c *cachedStore) InstanceGetByID(ctx context.Context, id string) (*task.Instance, error) {
	i, err := read(c, func() map[string]cached[*task.Instance] { return c.byID }, id,
		func() (*task.Instance, error) { return c.Store.InstanceGetByID(ctx, id) })
	if err != nil {
		return nil, err
	}
	return copyInstance(i), nil
}

// QueueGet reads a queue through the cache.
func (c *cachedStore) QueueGet(ctx context.Context, ref store.QueueRef) (*task.Queue, error) {
	q, err := read(c, func() map[store.QueueRef]cached[*task.Queue] { return c.queues }, ref,
		func() (*task.Queue, error) { return c.Store.QueueGet(ctx, ref) })
	if err != nil {
		return nil, err
	}
	return copyQueue(q), nil
}

func copyKey(k *store.APIKey) *store.APIKey {
	c := *k
	c.Digest = append([]byte(nil), k.Digest...)
	c.Grants = append([]store.Grant(nil), k.Grants...)
	return &c
}

// KeyByDigest finds an API key by digest through the cache; a key not
// found is not kept (see cachedStore).
func (c *cachedStore) KeyByDigest(ctx context.Context, digest []byte) (*store.APIKey, error) {
	k, err := read(c, func() map[string]cached[*store.APIKey] { return c.keys }, string(digest),
		func() (*store.APIKey, error) { return c.Store.KeyByDigest(ctx, digest) })
	if err != nil {
		return nil, err
	}
	return copyKey(k), nil
}

// QueueListAll lists every queue through the cache (the dispatcher's pass).
func (c *cachedStore) QueueListAll(ctx context.Context) ([]*task.Queue, error) {
	qs, err := read(c, func() map[struct{}]cached[[]*task.Queue] { return c.all }, struct{}{},
		func() ([]*task.Queue, error) { return c.Store.QueueListAll(ctx) })
	if err != nil {
		return nil, err
	}
	out := make([]*task.Queue, len(qs))
	for i, q := range qs {
		out[i] = copyQueue(q)
	}
	return out, nil
}

// The writes of instances and queues: each drops every copy once it is
// stored, and tells the other nodes. A failed write may have changed
// nothing, or (a lost answer) everything: it drops them too.

// InstanceCreate stores a new instance and drops the copies.
func (c *cachedStore) InstanceCreate(ctx context.Context, inst *task.Instance) error {
	defer c.changed(ctx)
	return c.Store.InstanceCreate(ctx, inst)
}

// InstanceUpdate updates an instance and drops the copies.
func (c *cachedStore) InstanceUpdate(ctx context.Context, ref store.InstanceRef, fn func(*task.Instance) error) (*task.Instance, error) {
	defer c.changed(ctx)
	return c.Store.InstanceUpdate(ctx, ref, fn)
}

// InstanceDelete removes an instance and drops the copies.
func (c *cachedStore) InstanceDelete(ctx context.Context, ref store.InstanceRef) error {
	defer c.changed(ctx)
	return c.Store.InstanceDelete(ctx, ref)
}

// QueueCreate stores a new queue and drops the copies.
func (c *cachedStore) QueueCreate(ctx context.Context, q *task.Queue) error {
	defer c.changed(ctx)
	return c.Store.QueueCreate(ctx, q)
}

// QueueUpdate updates a queue and drops the copies.
func (c *cachedStore) QueueUpdate(ctx context.Context, ref store.QueueRef, fn func(*task.Queue) error) (*task.Queue, error) {
	defer c.changed(ctx)
	return c.Store.QueueUpdate(ctx, ref, fn)
}

// QueueDelete removes a queue and drops the copies.
func (c *cachedStore) QueueDelete(ctx context.Context, ref store.QueueRef) (int, error) {
	defer c.changed(ctx)
	return c.Store.QueueDelete(ctx, ref)
}

// KeyRevoke revokes an API key and drops the copies, on every node.
func (c *cachedStore) KeyRevoke(ctx context.Context, ref store.KeyRef, now int64) error {
	defer c.changed(ctx)
	return c.Store.KeyRevoke(ctx, ref, now)
}

// Notify passes through.
func (c *cachedStore) Notify(ctx context.Context, ch store.Change) error { return c.n.Notify(ctx, ch) }

// NotifyConfig passes through.
func (c *cachedStore) NotifyConfig(ctx context.Context) error { return c.n.NotifyConfig(ctx) }

// Listen passes through; a config notification (or a reconnect) drops
// every copy before fn hears it.
func (c *cachedStore) Listen(ctx context.Context, fn func(store.Heard)) error {
	return c.n.Listen(ctx, func(h store.Heard) {
		if h.Config() {
			c.drop()
		}
		fn(h)
	})
}

// ServerNow passes through (store.ServerClock), or fails when the store
// has no clock of its own.
func (c *cachedStore) ServerNow(ctx context.Context) (time.Time, error) {
	if sc, ok := c.Store.(store.ServerClock); ok {
		return sc.ServerNow(ctx)
	}
	return time.Time{}, task.Errorf(task.CodeInternal, "store: no clock of its own")
}
