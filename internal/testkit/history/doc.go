// Package history records what a fault test did and saw, Jepsen style, and
// checks it: every operation of the load generator (adds), of the pull
// workers (leases, acks, releases) and of the webhook receiver (push
// deliveries) is an Entry with the time it began and ended and how it ended
// — OK, Fail (definitely did not happen) or Info (indeterminate: the answer
// was lost, so it may or may not have happened). After the run, Check reads
// the history beside the store's final state and reports lost tasks
// (acknowledged, never completed), unexpected ones (delivered or stored, never
// added), tasks completed twice, overlapping leases or deliveries, attempt
// numbers that do not rise, and final counts that disagree with the
// history. Only tests import it.
package history
