// Package deliver carries one attempt of a push task to its target and says
// how it ended. It holds the webhook deliverer (signed POSTs over a pooled
// HTTP client), the signing helpers a receiver uses to verify them, and
// serve mode's outbound address guard. It knows no engine and no store: the
// engine resolves the target, sets the attempt's deadline on the context,
// calls a Deliverer and records the Result.
package deliver
