package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// outcomesQueue is the pull queue of instance jobs that the task rules of
// outcomes chain finished tasks to.
const outcomesQueue = "outcomes"

// outcomes follows tasks of instance jobs to their end through an event the
// product gives: a task rule chains each task of a watched queue that
// succeeds or fails to the pull queue outcomes (the chain event is written
// in the transaction that stores the outcome), and wait long-polls that
// queue's lease, which the node answers as soon as a chained task is due.
type outcomes struct {
	c     *client.Client
	state map[string]string // a finished task's id → succeeded or failed
}

// watchOutcomes makes the pull queue outcomes of jobs through c (a key with
// the full grant on jobs) and a task rule for each of queues.
func watchOutcomes(t *testing.T, c *client.Client, queues ...string) *outcomes {
	t.Helper()
	if _, err := c.CreateQueue(context.Background(), "jobs", outcomesQueue, errandapi.QueueRequest{Mode: new(errandapi.ModePull)}); err != nil {
		t.Fatal(err)
	}
	o := &outcomes{c: c, state: map[string]string{}}
	for _, q := range queues {
		o.watch(t, q)
	}
	return o
}

// watch chains every task of queue q of jobs that succeeds or fails to
// outcomes.
func (o *outcomes) watch(t *testing.T, q string) {
	t.Helper()
	rule := errandapi.TriggerRequest{Queue: new("jobs/" + outcomesQueue),
		Task: &errandapi.TriggerTaskSpec{Queue: new("jobs/" + q), On: &[]string{"succeeded", "failed"}}}
	if _, err := o.c.CreateTrigger(context.Background(), "jobs", rule); err != nil {
		t.Fatalf("task rule for %s: %v", q, err)
	}
}

// wait records the outcomes chained until done holds, and fails t, saying
// what it waited for, when within passes first. Each chained task is
// leased for a day, so none comes back.
func (o *outcomes) wait(t *testing.T, what string, within time.Duration, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for !done() {
		leased, err := o.c.Lease(ctx, "jobs", outcomesQueue, errandapi.LeaseRequest{Count: new(1000), LeaseSeconds: new(86400), WaitSeconds: 30})
		if ctx.Err() != nil {
			t.Fatalf("timed out after %v waiting for %s: %d tasks finished", within, what, len(o.state))
		}
		if err != nil {
			t.Fatalf("lease %s: %v", outcomesQueue, err)
		}
		for _, lt := range leased {
			var p struct {
				Task struct {
					ID    string `json:"id"`
					State string `json:"state"`
				} `json:"task"`
			}
			if err := json.Unmarshal(lt.Payload, &p); err != nil || p.Task.ID == "" {
				t.Fatalf("a chained task's payload %s: %v", lt.Payload, err)
			}
			o.state[p.Task.ID] = p.Task.State
		}
	}
}

// waitIDs waits until every task of ids has finished and returns their
// states by id.
func (o *outcomes) waitIDs(t *testing.T, ids []string, within time.Duration) map[string]string {
	t.Helper()
	o.wait(t, "every task to finish", within, func() bool {
		for _, id := range ids {
			if o.state[id] == "" {
				return false
			}
		}
		return true
	})
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		out[id] = o.state[id]
	}
	return out
}

// apiClient is a client of the node at url with key.
func apiClient(t *testing.T, url, key string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.Options{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
