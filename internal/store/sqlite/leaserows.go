package sqlite

import (
	"database/sql"

	"github.com/errandhq/errand/internal/task"
)

// A finish names each task by its key, so SQLite seeks the key's index
// before the row. The claim has just read each row's rowid, and a lease id
// is 128 random bits, unique to one attempt: the store keeps, for the
// leases its claims granted, the rowid of the task each was granted on,
// and a finish whose tasks it all knows seeks the rows by rowid
// (qTaskFinishByRowN), fenced on the lease as always. A rowid that no
// longer holds that task (a VACUUM renumbers rowids, a purge frees one
// for a new task) cannot hold its lease: the write changes nothing there,
// the chunk's count comes short, and the chunk is undone and sent again
// by key (finishRound). The map is only a cache of rowids.

// maxLeaseRows bounds leaseRows: past it the map starts afresh (leases
// that never come back to TaskFinish — expired, released — are not kept
// forever).
const maxLeaseRows = 200_000

// leaseRows maps lease ids granted by this store's claims to the rowids
// of their tasks. Only write transactions use it, one at a time.
type leaseRows map[string]int64

// granted records the rowids of tasks just claimed (rids[i] is
// tasks[i]'s) under their lease ids.
func (m *leaseRows) granted(tasks []*task.Task, rids []int64) {
	if *m == nil || len(*m)+len(tasks) > maxLeaseRows {
		*m = make(leaseRows, len(tasks))
	}
	for i, t := range tasks {
		(*m)[t.LeaseID] = rids[i]
	}
}

// insertedRunning records the rowids of the tasks of one plain multi-row
// INSERT (r its result) that it inserted RUNNING, claimed by an add
// (TaskAddClaim). SQLite gives each new row of a table without an
// INTEGER PRIMARY KEY one more than the largest rowid, so the rows of one
// statement get consecutive rowids ending at its last insert rowid; were
// that ever not so, a rowid recorded here is only wrong, and a wrong
// rowid is sent again by key (see above).
func (w *wtx) insertedRunning(tasks []*task.Task, r sql.Result) {
	first := -1
	for i, t := range tasks {
		if t.State == task.Running && t.LeaseID != "" {
			first = i
			break
		}
	}
	if first < 0 {
		return
	}
	last, err := r.LastInsertId()
	if err != nil {
		return
	}
	claimed := make([]*task.Task, 0, len(tasks)-first)
	rids := make([]int64, 0, len(tasks)-first)
	for i, t := range tasks[first:] {
		if t.State == task.Running && t.LeaseID != "" {
			claimed = append(claimed, t)
			rids = append(rids, last-int64(len(tasks)-1-first-i))
		}
	}
	w.s.leases.granted(claimed, rids)
}

// rowids returns, in buf's storage, the rowids of the n entries of a
// finish chunk keyed (key form, finishWidth an entry), if it knows every
// entry's fence.
func (m leaseRows) rowids(buf []int64, keyed []any, n int) ([]int64, bool) {
	buf = buf[:0]
	for e := range n {
		fence, _ := keyed[e*finishWidth+2].(string)
		rid, ok := m[fence]
		if !ok {
			return buf, false
		}
		buf = append(buf, rid)
	}
	return buf, true
}

// forget drops the fences of a finished chunk.
func (m leaseRows) forget(keyed []any, n int) {
	for e := range n {
		if fence, ok := keyed[e*finishWidth+2].(string); ok {
			delete(m, fence)
		}
	}
}
