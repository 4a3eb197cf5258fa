package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Backlog is the work due and not started in the unpaused queues of one
// mode (push or pull), across the store.
type Backlog struct {
	Mode string
	// Due is how many tasks are due (each queue counted up to BacklogLimit).
	Due int
	// OldestDue is how long the task due longest has been due.
	OldestDue time.Duration
}

// BacklogLimit is how many due tasks a scrape counts in one queue at most:
// the read stays short whatever the backlog (a count walks the queue's
// entries of its due index, and under churn each costs a heap fetch:
// 100,000 took ~80 ms a queue on PostgreSQL).
const BacklogLimit = 10_000

// BacklogEvery is how long one read of the backlog serves scrapes: however
// many scrapers ask, the store is read at most once in it.
const BacklogEvery = 5 * time.Second

// BacklogRead is one read of the store's backlog: the tasks due per mode
// and the chain events waiting for the chainers.
type BacklogRead struct {
	Queues []Backlog
	// ChainEvents is how many chain events wait (counted up to
	// BacklogLimit); OldestChainEvent how long ago the oldest counted
	// one's task finished.
	ChainEvents      int
	OldestChainEvent time.Duration
}

// BacklogReader reads the backlog from the store; its context ends 5 s
// after the read began.
type BacklogReader func(ctx context.Context) (*BacklogRead, error)

// backlogCollector reports errand_tasks_due, errand_oldest_due_task_seconds,
// errand_chain_events_pending, errand_oldest_chain_event_seconds and
// errand_store_up from one read of the store, kept for BacklogEvery.
type backlogCollector struct {
	due, oldest, chain, chainOldest, up *prometheus.Desc

	mu   sync.Mutex
	read BacklogReader
	now  func() time.Time
	at   time.Time // when last was read; zero before the first read
	last *BacklogRead
	ok   bool
}

func newBacklogCollector() *backlogCollector {
	return &backlogCollector{
		due: prometheus.NewDesc("errand_tasks_due",
			"Tasks due and not started in the unpaused queues of the store, by queue mode (each queue counted up to 10,000); the same on every node of a store.",
			[]string{"mode"}, nil),
		oldest: prometheus.NewDesc("errand_oldest_due_task_seconds",
			"How long the task due longest in an unpaused queue of the store has waited since it came due, by queue mode; 0 when none is due.",
			[]string{"mode"}, nil),
		chain: prometheus.NewDesc("errand_chain_events_pending",
			"Chain events (a watched task's finish) waiting for the chainers to add their task rules' tasks, counted up to 10,000; the same on every node of a store.",
			nil, nil),
		chainOldest: prometheus.NewDesc("errand_oldest_chain_event_seconds",
			"How long ago the task of the oldest waiting chain event finished; 0 when none waits.", nil, nil),
		up: prometheus.NewDesc("errand_store_up",
			"1 when this scrape's read of the store (the backlog) answered, 0 when it failed.", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.due
	ch <- c.oldest
	ch <- c.chain
	ch <- c.chainOldest
	ch <- c.up
}

// Collect reads the backlog (or uses the read of the last BacklogEvery) and
// sends the samples: both modes always, 0 when a mode has nothing due.
// Before a reader is set it sends nothing.
func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read == nil {
		return
	}
	if now := c.now(); c.at.IsZero() || now.Sub(c.at) >= BacklogEvery || now.Before(c.at) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := c.read(ctx)
		cancel()
		c.at, c.last, c.ok = now, got, err == nil
	}
	if !c.ok {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, mode := range []string{"push", "pull"} {
		var b Backlog
		for _, x := range c.last.Queues {
			if x.Mode == mode {
				b = x
			}
		}
		ch <- prometheus.MustNewConstMetric(c.due, prometheus.GaugeValue, float64(b.Due), mode)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, max(b.OldestDue, 0).Seconds(), mode)
	}
	ch <- prometheus.MustNewConstMetric(c.chain, prometheus.GaugeValue, float64(c.last.ChainEvents))
	ch <- prometheus.MustNewConstMetric(c.chainOldest, prometheus.GaugeValue, max(c.last.OldestChainEvent, 0).Seconds())
}

// SetBacklog makes scrapes report the store's backlog through read, with
// now the clock it is read at (the engine's). A later call replaces an
// earlier one.
func (m *Metrics) SetBacklog(read BacklogReader, now func() time.Time) {
	m.backlog.mu.Lock()
	defer m.backlog.mu.Unlock()
	m.backlog.read, m.backlog.now, m.backlog.at = read, now, time.Time{}
}
