// Package errandapi is errand's v1 API contract in Go: the JSON shapes of
// every request and answer, the error codes, their HTTP statuses and the
// one error type that carries them.
//
// It is the single definition shared by the server (which encodes its
// answers and decodes its requests with these types), the client SDK
// (github.com/errandhq/errand/client) and the embedded engine
// (github.com/errandhq/errand/embedded), so the three cannot drift. It does
// no I/O and imports nothing of errand's internals; a test enforces both.
// For the connected workers' WebSocket it also holds the framing both ends
// share: WorkerFrame, batches of frames (AppendBatch, PackBatches,
// SplitBatch) and Outbox, which gathers concurrent senders' frames into
// batches through a write function its user gives it.
//
// Times are epoch milliseconds and absent values are null, as on the wire.
// Request fields that the server must tell "absent" from "zero" are
// pointers (Go 1.26: new(10) makes one); settings a PATCH can clear are
// Nullable.
package errandapi
