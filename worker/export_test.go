package worker

// CloseErrorOf is how the worker reads a close frame's error.
var CloseErrorOf = closeError

// OnAckQueued makes f hear each ack a Pull loop queues for its batch, until
// the returned func is called. Set it only while no Pull runs.
func OnAckQueued(f func()) (restore func()) {
	old := ackQueued
	ackQueued = f
	return func() { ackQueued = old }
}
