package worker

import "github.com/errandhq/errand/errandapi"

// CloseErrorOf is how the worker reads a close frame's error.
var CloseErrorOf = closeError

// OnAckQueued makes f hear each ack a Pull loop queues for its batch, until
// the returned func is called. Set it only while no Pull runs.
func OnAckQueued(f func()) (restore func()) {
	old := ackQueued
	ackQueued = f
	return func() { ackQueued = old }
}

// OnOutbox gives f each session's outbox (to a node that reads batches)
// before its first frame, until the returned func is called. Set it only
// while no Run runs.
func OnOutbox(f func(*errandapi.Outbox)) (restore func()) {
	old := outboxMade
	outboxMade = f
	return func() { outboxMade = old }
}
