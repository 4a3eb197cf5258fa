package store

import (
	"context"
	"strings"

	"github.com/errandhq/errand/internal/task"
)

// NodeStore keeps the liveness of the nodes that share a store, so that any
// node can tell when another died and retry the push attempts it held.
//
// A push attempt's lease id begins with the id of the node that claimed it
// and a dot (NodeLeaseID): a node's attempts in flight are found by their
// lease ids, with no column of their own, and the fence that refuses a late
// finish is the lease id the store already checks.
type NodeStore interface {
	// NodeBeat records that p.Node is alive at p.Now (its row is made on
	// its first beat) and returns what it saw of the other nodes' rows, in
	// one statement on a shared store.
	NodeBeat(ctx context.Context, p *NodeBeatParams) (NodeBeatResult, error)
	// NodeForget removes the rows of p.Nodes whose last beat was at or
	// before p.DeadBefore; a node that beat again meanwhile keeps its row.
	// A node leaving (graceful shutdown) forgets itself.
	NodeForget(ctx context.Context, p *NodeForgetParams) error
	// TaskHeldBy returns up to p.Limit RUNNING push tasks whose lease one of
	// p.Nodes holds (NodeLeaseID), with payloads, of every instance.
	TaskHeldBy(ctx context.Context, p *HeldByParams) ([]*task.Task, error)
}

// NodeBeatParams is one node's heartbeat.
type NodeBeatParams struct {
	Node       string
	Now        int64
	DeadBefore int64 // other nodes silent since this time or earlier are returned
}

// NodeBeatResult is what a beat saw of the other nodes' rows.
type NodeBeatResult struct {
	// Dead are the other nodes whose last beat was at or before
	// DeadBefore, by id.
	Dead []string
	// Others counts the other nodes' rows, Dead's included: a node that
	// sees none is alone on the store, and its changes need no
	// notification.
	Others int
}

// NodeForgetParams names nodes whose rows go.
type NodeForgetParams struct {
	Nodes      []string
	DeadBefore int64 // only rows whose last beat is at or before it
}

// HeldByParams selects the attempts of nodes declared dead.
type HeldByParams struct {
	Nodes []string
	Limit int
}

// NodeLeaseID returns the lease id of a push attempt that node claims:
// the node's id, a dot, and lease (a random lease id). A node id holds no
// dot.
func NodeLeaseID(node, lease string) string { return node + "." + lease }

// LeaseNode returns the node that holds leaseID (NodeLeaseID), or "" for a
// lease that names none (a pull worker's).
func LeaseNode(leaseID string) string {
	node, _, ok := strings.Cut(leaseID, ".")
	if !ok {
		return ""
	}
	return node
}
