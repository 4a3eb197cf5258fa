package main

// errand_tuning.go holds the client-side and instance settings of an errand
// run and their --errand-tuning flag.

import (
	"fmt"
	"strconv"
	"strings"
)

// errandTuning is the client-side and instance settings of one errand run.
type errandTuning struct {
	InsertClients  int // concurrent add callers (insert, preloads, steady producers)
	LeaseWorkers   int // burndown: workers, each leasing LeaseCount and acking them
	LeaseCount     int // burndown: tasks per lease call (errand allows 1–1,000)
	AckConcurrency int // burndown: concurrent ack requests per worker (single acks)
	// BatchAck acks each leased batch in one call of errand's batch ack
	// (POST …/queues/{q}/ack); 0 sends one ack request per task.
	BatchAck    int
	MaxInFlight int // the instance's maxInFlight (push deliveries in flight)
	SteadyMode  string
}

// defaultErrandTuning is what the measurements on the 2-core machine chose
// (README.md, "Settings per system", says what was tried).
var defaultErrandTuning = errandTuning{
	InsertClients:  4,
	LeaseWorkers:   4,
	LeaseCount:     500,
	AckConcurrency: 16,
	BatchAck:       1,
	MaxInFlight:    1000,
	SteadyMode:     "push",
}

// parseErrandTuning applies "key=value,…" (the --errand-tuning flag) to t.
func parseErrandTuning(t errandTuning, s string) (errandTuning, error) {
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return t, fmt.Errorf("--errand-tuning: %q is not key=value", kv)
		}
		if k == "steadyMode" {
			if v != "push" && v != "pull" {
				return t, fmt.Errorf("--errand-tuning: steadyMode is push or pull, not %q", v)
			}
			t.SteadyMode = v
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || (n == 0 && k != "batchAck") {
			return t, fmt.Errorf("--errand-tuning: %s wants a positive integer, not %q", k, v)
		}
		switch k {
		case "insertClients":
			t.InsertClients = n
		case "leaseWorkers":
			t.LeaseWorkers = n
		case "leaseCount":
			t.LeaseCount = n
		case "ackConcurrency":
			t.AckConcurrency = n
		case "maxInFlight":
			t.MaxInFlight = n
		case "batchAck":
			t.BatchAck = n
		default:
			return t, fmt.Errorf("--errand-tuning: unknown key %q (insertClients, leaseWorkers, leaseCount, ackConcurrency, batchAck, maxInFlight, steadyMode)", k)
		}
	}
	return t, nil
}
