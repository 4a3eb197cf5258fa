package main

// errand_nodes.go holds the nodes workload (issue 21): 1, 2 and 3 `errand
// serve` processes on one PostgreSQL database, each its own process on its
// own port, sharing the store URL. For every node count it runs errand-pg's
// burn-down (pull: the lease workers spread round-robin over the nodes) and
// push workload (every node's dispatcher delivers to the loopback
// receiver), each on a fresh database, and keeps the throughput and the CPU
// per task of errand (all its nodes) and of the PostgreSQL server.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// nodeCounts are the node counts of the nodes workload.
var nodeCounts = []int{1, 2, 3}

// nodeWorkloads are the nodes workload's two measurements per node count:
// errand-pg's burn-down (a pull queue) and its push workload.
var nodeWorkloads = []string{"pull", "push"}

// setNodeCells sets nodeCounts and nodeWorkloads from the flags' lists
// (--nodes-counts, --nodes-workloads).
func setNodeCells(counts, workloads string) error {
	var ks []int
	for _, f := range splitList(counts) {
		k, err := strconv.Atoi(f)
		if err != nil || k < 1 || k > 9 {
			return fmt.Errorf("--nodes-counts: %q is not a node count from 1 to 9", f)
		}
		ks = append(ks, k)
	}
	wls := splitList(workloads)
	for _, wl := range wls {
		if !slices.Contains([]string{"pull", "push", "add", "push-add"}, wl) {
			return fmt.Errorf("--nodes-workloads: %q is not pull, push, add or push-add", wl)
		}
	}
	if len(ks) == 0 || len(wls) == 0 {
		return fmt.Errorf("--nodes-counts and --nodes-workloads need at least one entry each")
	}
	nodeCounts, nodeWorkloads = ks, wls
	return nil
}

// nodeCell is one measurement of the nodes workload: k nodes, one workload.
type nodeCell struct {
	nodes     int
	workload  string // "pull" or "push"
	n         int
	seconds   float64
	perSecond float64
	errandUS  float64 // errand's CPU µs per task, all k serve processes
	pgUS      float64 // PostgreSQL's CPU µs per task, the whole server
	pgRunUS   float64 // the part of pgUS of the run database's live processes
	harnessUS float64 // this process's CPU µs per task
}

// NodeScaler is implemented by systems that run the nodes workload: several
// server processes on one store (errand-pg).
type NodeScaler interface {
	// Nodes measures, for each of nodeCounts and each of nodeWorkloads, n
	// tasks on a fresh store served by that many nodes. The caller's Setup
	// made the first store and node; Teardown stops every node and drops
	// the store, also when Nodes fails.
	Nodes(ctx context.Context, n int) ([]nodeCell, error)
}

var _ NodeScaler = (*errandSystem)(nil)

func (e *errandSystem) Nodes(ctx context.Context, n int) ([]nodeCell, error) {
	bin, err := errandBinary(e.o)
	if err != nil {
		return nil, err
	}
	var cells []nodeCell
	first := true
	for _, k := range nodeCounts {
		for _, wl := range nodeWorkloads {
			t0 := time.Now()
			// Every cell starts on a fresh database with node 1 (the first
			// one on the store the harness's Setup made), so that no cell
			// works beside the rows of the one before.
			if !first {
				if err := e.renew(ctx); err != nil {
					return nil, fmt.Errorf("%d nodes, %s: %w", k, wl, err)
				}
			}
			first = false
			if err := e.startExtraNodes(ctx, bin, k-1); err != nil {
				return nil, fmt.Errorf("%d nodes: %w", k, err)
			}
			var d time.Duration
			switch wl {
			case "pull":
				d, err = e.BurnDown(ctx, n)
			case "push":
				d, err = e.Push(ctx, n)
			case "add":
				d, err = e.adds(ctx, n)
			case "push-add":
				d, err = e.pushAdds(ctx, n)
			}
			if err != nil {
				return nil, fmt.Errorf("%d nodes, %s: %w", k, wl, err)
			}
			w := e.lastCPU
			if len(w.nodes) != k || w.n != n {
				return nil, fmt.Errorf("%d nodes, %s: the CPU reading counted %d nodes and %d tasks", k, wl, len(w.nodes), w.n)
			}
			us := func(cpu float64) float64 { return cpu / float64(n) * 1e6 }
			c := nodeCell{nodes: k, workload: wl, n: n, seconds: d.Seconds(), perSecond: float64(n) / d.Seconds(),
				errandUS: us(w.errand()), pgUS: us(w.pg), pgRunUS: us(w.pgRun), harnessUS: us(w.self)}
			cells = append(cells, c)
			logf("  %s nodes: %d node(s) %s: %s tasks/s, errand %.0f µs/task, PostgreSQL %.0f µs/task (the run database's processes %.0f), harness %.0f µs/task; %.1fs with setup and preload",
				e.Name(), k, wl, thousands(c.perSecond), c.errandUS, c.pgUS, c.pgRunUS, c.harnessUS, time.Since(t0).Seconds())
		}
	}
	return cells, nil
}

// adds is the nodes workload's add cell: n single adds (one task a call,
// as web handlers add their work) from the insert workload's callers,
// spread over the nodes, to a pull queue no worker leases from: what a
// node's add costs the others (their wake-ups) shows here.
func (e *errandSystem) adds(ctx context.Context, n int) (time.Duration, error) {
	if err := e.createQueue(ctx, "adds", "pull", false); err != nil {
		return 0, err
	}
	mark := e.markCPU()
	start := time.Now()
	ids, err := e.addMany(ctx, "adds", n, 1, e.tun.InsertClients)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	logf("  %s adds: %s", e.Name(), e.cpuNote(n, mark, d))
	return d, e.expectAll(ctx, "adds", "scheduled", ids)
}

// pushAdds is the nodes workload's push-add cell: n single adds from the
// insert workload's callers, spread over the nodes, to a push queue
// delivering to the loopback receiver, timed to the last delivery and the
// queue settled: a web handler's add on one of several nodes, end to end.
func (e *errandSystem) pushAdds(ctx context.Context, n int) (time.Duration, error) {
	if err := e.createQueue(ctx, "adds", "push", false); err != nil {
		return 0, err
	}
	mark := e.markCPU()
	start := time.Now()
	ids, err := e.addMany(ctx, "adds", n, 1, e.tun.InsertClients)
	if err != nil {
		return 0, err
	}
	done, err := e.delivered(ctx, "adds", ids)
	if err != nil {
		return 0, err
	}
	logf("  %s push-adds: %s", e.Name(), e.cpuNote(n, mark, done.Sub(start)))
	return done.Sub(start), nil
}

// renew tears the run down (every node stopped, the database dropped) and
// sets up a fresh one, as the harness does between runs.
func (e *errandSystem) renew(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	err := e.Teardown(tctx)
	cancel()
	if err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := e.Setup(sctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	return nil
}

// startExtraNodes starts m more `errand serve` processes on the run's
// store, each on its own port, each with a client of its own. Teardown
// stops them (also those started before an error here).
func (e *errandSystem) startExtraNodes(ctx context.Context, bin string, m int) error {
	for range m {
		i := 2 + len(e.extra)
		proc, base, err := e.startNode(ctx, bin, fmt.Sprintf("serve-%d.log", i))
		if err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
		x := &errandNode{proc: proc}
		e.extra = append(e.extra, x)
		x.base, x.key = base, e.key
		if x.api, x.client, err = newErrandAPI(base, e.key); err != nil {
			return err
		}
	}
	return nil
}

// stopExtraNodes stops nodes 2, 3, … all at once and forgets them.
func (e *errandSystem) stopExtraNodes() error {
	errs := make([]error, len(e.extra))
	var wg sync.WaitGroup
	for i, x := range e.extra {
		if x.client != nil {
			x.client.CloseIdleConnections() // see Teardown
		}
		wg.Go(func() {
			if err := x.proc.Stop(); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", i+2, err)
			}
		})
	}
	wg.Wait()
	e.extra = nil
	return errors.Join(errs...)
}

// conns is the harness's connection to every node of the run: node 1's,
// then the extra nodes'.
func (e *errandSystem) conns() []*errandConn {
	cs := []*errandConn{&e.errandConn}
	for _, x := range e.extra {
		cs = append(cs, &x.errandConn)
	}
	return cs
}
