package store

import (
	"context"
	"math"
)

// APIRateStore keeps each instance's bucket of API calls (its rateLimit
// setting) in the store, so that every node sharing the store pays from
// the one bucket: the limit holds across nodes, as maxConcurrent and
// ratePerSecond do. A node takes calls in small grants (APIRateTake) and
// spends them locally, so a call costs the store nothing until its grant
// runs out.
type APIRateStore interface {
	// APIRateTake refills p.InstanceID's bucket to p.Now (TakeCalls) and
	// takes up to p.Want calls from it, in one transaction under the
	// bucket's row lock: no two nodes take the same call. A bucket never
	// used starts full. An instance that does not exist (deleted, while
	// a node still held its id) is NOT_FOUND, and keeps no bucket: an
	// instance's bucket goes with it, whichever comes first. The write need
	// not survive a crash (a lost one only gives calls back), so a backend
	// may commit it without waiting for its log's flush.
	APIRateTake(ctx context.Context, p *APIRateParams) (APIRateTaken, error)
}

// APIRateParams is one grant asked of an instance's bucket of API calls.
type APIRateParams struct {
	InstanceID string
	Want       int     // calls wanted, at least 1
	Rate       float64 // the instance's rateLimit, calls per second (> 0)
	Burst      int     // the bucket's size, at least 1
	Now        int64   // epoch ms of the engine's clock
}

// APIRateTaken is what a grant took and what it left.
type APIRateTaken struct {
	Took int     // calls taken, 0–Want
	Left float64 // the bucket's tokens after the grant
}

// TakeCalls is APIRateTake's arithmetic, the same on every backend: the
// bucket as stored (tokens at time at; tokens < 0 for a bucket never used)
// is refilled to p.Now (Refill) and gives up to p.Want whole calls. It
// returns the grant and the bucket to store, whose time never moves back
// (a grant asked with an older clock than the last refills nothing).
func TakeCalls(tokens float64, at int64, p *APIRateParams) (g APIRateTaken, storeTokens float64, storeAt int64) {
	t := Refill(tokens, at, p.Now, p.Rate, p.Burst)
	took := min(max(p.Want, 0), max(int(math.Floor(t)), 0))
	left := t - float64(took)
	return APIRateTaken{Took: took, Left: left}, left, max(at, p.Now)
}
