// Package task is errand's domain: tasks, queues, instances, the lifecycle
// states and the one transition table, attempt accounting, the backoff policy,
// and validation of everything a caller sends. It does no I/O: no clock, no
// randomness, no network, no storage. Callers pass "now" in.
package task
