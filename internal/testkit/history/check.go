package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// Final is the store's state at the end of a run, read after the load
// stopped and every task finished.
type Final struct {
	// Tasks is every task of the queues under test, each read with its
	// attempts (GET of the task).
	Tasks []errandapi.Task
	// Counts is those queues' counts by state, summed (each stops at
	// 10,000, as the API's do).
	Counts map[errandapi.State]int
}

// Options tune Check.
type Options struct {
	// MaxConcurrent bounds, per queue, the deliveries the receiver may see
	// open at once (0 or absent: not checked).
	MaxConcurrent map[string]int
	// Slack is the clock tolerance when a lease's expiry (the server's
	// clock) is compared with the test's times (default 250 ms).
	Slack time.Duration
}

// Report is what Check found: figures, and one line per violation.
type Report struct {
	Adds          int // add entries (tries of one task, each counted)
	Acknowledged  int // names some add answered as stored
	Indeterminate int // names no add answered either way
	Refused       int // names every add of which was refused
	Deliveries    int // push deliveries the receiver saw
	Leases        int // tasks handed to pull workers
	Completed     int // names whose work was accepted (2xx, or an ack)
	// Redeliveries counts deliveries and leases beyond the first of each
	// task: retries after failures, kills and expiries.
	Redeliveries int
	// Duplicates counts tasks whose work was accepted more than once (a
	// 2xx answered twice, or an ack sent for two leases): allowed by
	// at-least-once delivery when the first acceptance was not stored.
	Duplicates int
	// PeakConcurrent is, per queue, the most deliveries open at once.
	PeakConcurrent map[string]int

	// The violations, one line each.
	Lost           []string // acknowledged, never completed or missing at the end
	Unexpected     []string // delivered, leased or stored, never added
	CompletedTwice []string // stored as done twice, or handed out after being done
	Overlaps       []string // two deliveries or leases of a task at once; a stale ack accepted
	AttemptOrder   []string // attempt numbers of redeliveries not strictly increasing
	FinalMismatch  []string // the final state disagrees with the history
	BadHeaders     []string // a delivery with a wrong Webhook-Id or signature
	Concurrency    []string // more deliveries open at once than the queue's maxConcurrent
}

// OK reports whether no violation was found.
func (r *Report) OK() bool { return len(r.problems()) == 0 }

func (r *Report) problems() [][2]any {
	var out [][2]any
	for _, p := range [][2]any{
		{"lost", r.Lost}, {"unexpected", r.Unexpected}, {"completed twice", r.CompletedTwice},
		{"overlaps", r.Overlaps}, {"attempt order", r.AttemptOrder}, {"final mismatch", r.FinalMismatch},
		{"bad headers", r.BadHeaders}, {"concurrency", r.Concurrency},
	} {
		if len(p[1].([]string)) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Err returns nil when the report is clean, else an error naming each kind
// of violation with its count and its first few lines.
func (r *Report) Err() error {
	ps := r.problems()
	if len(ps) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "history check failed (%s):", r.Figures())
	for _, p := range ps {
		lines := p[1].([]string)
		fmt.Fprintf(&b, "\n  %s: %d", p[0], len(lines))
		for _, l := range lines[:min(len(lines), 5)] {
			b.WriteString("\n    " + l)
		}
	}
	return fmt.Errorf("%s", b.String())
}

// Figures is the report's one-line summary.
func (r *Report) Figures() string {
	return fmt.Sprintf("tasks %d acknowledged, %d indeterminate, %d refused; %d deliveries, %d leases, %d redeliveries, %d completed; lost %d, unexpected %d, duplicates %d, completed twice %d, overlaps %d",
		r.Acknowledged, r.Indeterminate, r.Refused, r.Deliveries, r.Leases, r.Redeliveries, r.Completed,
		len(r.Lost), len(r.Unexpected), r.Duplicates, len(r.CompletedTwice), len(r.Overlaps))
}

// byName is everything the history holds about one task name.
type byName struct {
	adds       []Entry
	deliveries []Entry // sorted by Start
	grants     []Entry // sorted by End
	finishes   []Entry // acks and releases
}

// Check reads the history beside the final state and reports every
// violation of the queue's promises. It never changes h.
func Check(h *History, final Final, o Options) *Report {
	if o.Slack == 0 {
		o.Slack = 250 * time.Millisecond
	}
	r := &Report{PeakConcurrent: map[string]int{}}
	names := map[string]*byName{}
	get := func(n string) *byName {
		if names[n] == nil {
			names[n] = &byName{}
		}
		return names[n]
	}
	leaseName := map[string]string{} // lease id -> task name
	var deliveries []Entry
	for _, e := range h.Entries() {
		if e.Type == Pending {
			e.Type = Info
		}
		switch e.F {
		case Add:
			r.Adds++
			get(e.Name).adds = append(get(e.Name).adds, e)
		case Deliver:
			r.Deliveries++
			deliveries = append(deliveries, e)
			get(e.Name).deliveries = append(get(e.Name).deliveries, e)
		case Lease:
			if e.Type == OK && e.Name != "" {
				r.Leases++
				get(e.Name).grants = append(get(e.Name).grants, e)
				leaseName[e.LeaseID] = e.Name
			}
		}
	}
	for _, e := range h.Entries() {
		if e.Type == Pending {
			e.Type = Info
		}
		if e.F == Ack || e.F == Release {
			n := cmp.Or(e.Name, leaseName[e.LeaseID])
			get(n).finishes = append(get(n).finishes, e)
		}
	}
	finalByName := map[string][]errandapi.Task{}
	for _, t := range final.Tasks {
		n := ""
		if t.Name != nil {
			n = *t.Name
		}
		finalByName[n] = append(finalByName[n], t)
	}

	for _, n := range sortedKeys(names) {
		r.checkName(n, names[n], finalByName[n], o)
	}
	for _, n := range sortedKeys(finalByName) {
		if names[n] == nil || len(names[n].adds) == 0 {
			for _, t := range finalByName[n] {
				r.Unexpected = append(r.Unexpected, fmt.Sprintf("task %s (name %q) is in the store but no add of it was sent", t.ID, n))
			}
		}
	}
	r.checkCounts(final)
	r.checkConcurrency(deliveries, o)
	return r
}

// addStatus sums up the adds of one name: whether one answered stored (and
// with which ids), and whether every one was refused.
func addStatus(adds []Entry) (acked bool, ids map[string]bool, refused bool) {
	ids = map[string]bool{}
	refused = len(adds) > 0
	for _, a := range adds {
		switch a.Type {
		case OK:
			acked = true
			ids[a.ID] = true
			refused = false
		case Info:
			refused = false
		}
	}
	return acked, ids, refused
}

func (r *Report) checkName(n string, b *byName, finals []errandapi.Task, o Options) {
	acked, ids, refused := addStatus(b.adds)
	switch {
	case len(b.adds) == 0:
	case acked:
		r.Acknowledged++
	case refused:
		r.Refused++
	default:
		r.Indeterminate++
	}
	if len(ids) > 1 {
		r.FinalMismatch = append(r.FinalMismatch, fmt.Sprintf("%s: adds answered %d different ids", n, len(ids)))
	}
	seen := len(b.deliveries) > 0 || len(b.grants) > 0
	if seen && (len(b.adds) == 0 || refused) {
		r.Unexpected = append(r.Unexpected, fmt.Sprintf("%s: delivered or leased %d times but never added", n, len(b.deliveries)+len(b.grants)))
	}
	for _, d := range b.deliveries {
		if len(ids) > 0 && !ids[d.ID] {
			r.Unexpected = append(r.Unexpected, fmt.Sprintf("%s: delivered as task %s, not the id its add answered", n, d.ID))
		}
		if d.WebhookID != d.ID || !d.SigOK {
			r.BadHeaders = append(r.BadHeaders, fmt.Sprintf("%s: delivery of attempt %d had Webhook-Id %q (task %s), signature ok %v", n, d.Attempt, d.WebhookID, d.ID, d.SigOK))
		}
	}
	r.Redeliveries += max(0, len(b.deliveries)+len(b.grants)-1)

	// The work, as the receiver and the workers saw it.
	slices.SortStableFunc(b.deliveries, func(x, y Entry) int { return x.Start.Compare(y.Start) })
	slices.SortStableFunc(b.grants, func(x, y Entry) int { return x.End.Compare(y.End) })
	accepted := 0 // 2xx answers and acks that may have been stored
	okAcks := map[string]Entry{}
	ackSent := map[string]bool{}
	for _, d := range b.deliveries {
		if answered2xx(d) {
			accepted++
		}
	}
	for _, f := range b.finishes {
		if f.F == Ack && f.Type != Fail {
			accepted++
			ackSent[f.LeaseID] = true
		}
		if f.F == Ack && f.Type == OK {
			if _, dup := okAcks[f.LeaseID]; dup {
				continue // the same lease acked twice (a retry) is one completion
			}
			okAcks[f.LeaseID] = f
		}
	}
	if len(okAcks) > 1 {
		r.CompletedTwice = append(r.CompletedTwice, fmt.Sprintf("%s: acks of %d different leases answered ok", n, len(okAcks)))
	}
	if accepted > 0 {
		r.Completed++
	}
	if accepted > 1 {
		r.Duplicates++
	}
	for _, a := range okAcks {
		for _, g := range b.grants {
			if g.Start.After(a.End) {
				r.CompletedTwice = append(r.CompletedTwice, fmt.Sprintf("%s: leased again (attempt %d, lease %s) after the ack of lease %s answered ok", n, g.Attempt, g.LeaseID, a.LeaseID))
			}
		}
	}

	r.checkOverlaps(n, b, o)
	r.checkAttemptOrder(n, b)

	// The end state.
	if acked && accepted == 0 {
		r.Lost = append(r.Lost, fmt.Sprintf("%s: acknowledged (id %s) but never delivered with a 2xx nor acked", n, firstKey(ids)))
	}
	switch {
	case len(finals) == 0 && acked:
		r.Lost = append(r.Lost, fmt.Sprintf("%s: acknowledged (id %s) but not in the store at the end", n, firstKey(ids)))
		return
	case len(finals) == 0:
		if accepted > 0 {
			r.FinalMismatch = append(r.FinalMismatch, fmt.Sprintf("%s: its work was accepted but it is not in the store at the end", n))
		}
		return
	case len(finals) > 1:
		r.CompletedTwice = append(r.CompletedTwice, fmt.Sprintf("%s: %d tasks of this name in the store (added twice)", n, len(finals)))
	}
	t := finals[0]
	if len(ids) > 0 && !ids[t.ID] {
		r.Lost = append(r.Lost, fmt.Sprintf("%s: acknowledged as %s but the store holds %s", n, firstKey(ids), t.ID))
	}
	r.checkFinal(n, b, t, ackSent)
}

// checkFinal compares one task's final state and attempt history with what
// was seen of it.
func (r *Report) checkFinal(n string, b *byName, t errandapi.Task, ackSent map[string]bool) {
	if t.State != errandapi.StateSucceeded {
		r.FinalMismatch = append(r.FinalMismatch, fmt.Sprintf("%s: %s at the end (attempt %d), want succeeded", n, t.State, t.Attempt))
	}
	inHistory := map[int]bool{}
	succeeded := []int{}
	for _, a := range t.Attempts {
		inHistory[a.Attempt] = true
		if a.Status == errandapi.AttemptSucceeded {
			succeeded = append(succeeded, a.Attempt)
		}
	}
	if len(succeeded) > 1 {
		r.CompletedTwice = append(r.CompletedTwice, fmt.Sprintf("%s: attempts %v all succeeded", n, succeeded))
	}
	seen := func(attempt int) {
		if !inHistory[attempt] {
			r.FinalMismatch = append(r.FinalMismatch, fmt.Sprintf("%s: handed out as attempt %d, which is not in its attempt history", n, attempt))
		}
	}
	for _, d := range b.deliveries {
		seen(d.Attempt)
	}
	for _, g := range b.grants {
		seen(g.Attempt)
	}
	if len(succeeded) == 0 {
		return
	}
	s := succeeded[0]
	var backed bool // the succeeded attempt was answered 2xx, or acked
	for _, d := range b.deliveries {
		if d.Attempt > s {
			r.CompletedTwice = append(r.CompletedTwice, fmt.Sprintf("%s: delivered as attempt %d after attempt %d was stored as succeeded", n, d.Attempt, s))
		}
		backed = backed || d.Attempt == s && answered2xx(d)
	}
	for _, g := range b.grants {
		backed = backed || g.Attempt == s && ackSent[g.LeaseID]
	}
	if !backed {
		r.FinalMismatch = append(r.FinalMismatch, fmt.Sprintf("%s: attempt %d is stored as succeeded but no 2xx answer or ack of it was seen", n, s))
	}
}

// answered2xx reports a delivery the receiver answered 2xx: OK, or Info
// when the sender went away meanwhile and may have read the answer.
func answered2xx(d Entry) bool {
	return d.Type == OK || d.Type == Info && d.Status/100 == 2
}

// checkOverlaps finds a task handed out twice at once: a delivery that
// arrived while another of the same task was still open at the receiver; a
// lease granted while an earlier one was surely still held (before its
// expiry, and before any ack or release of it was sent); an ack accepted
// for a lease after the task was leased again, or after the lease expired.
func (r *Report) checkOverlaps(n string, b *byName, o Options) {
	var open time.Time // the latest end of the deliveries before
	for i, d := range b.deliveries {
		if i > 0 && d.Start.Before(open) {
			r.Overlaps = append(r.Overlaps, fmt.Sprintf("%s: attempt %d arrived at %s while an earlier delivery was open until %s", n, d.Attempt, d.Start.Format(time.StampMicro), open.Format(time.StampMicro)))
		}
		if d.End.After(open) {
			open = d.End
		}
	}
	held := func(g Entry) time.Time { // until when lease g was surely held
		until := g.Expires.Add(-o.Slack)
		for _, f := range b.finishes {
			if f.LeaseID == g.LeaseID && f.Start.Before(until) {
				until = f.Start
			}
		}
		return until
	}
	for j, g2 := range b.grants {
		for _, g1 := range b.grants[:j] {
			if g1.LeaseID != g2.LeaseID && g2.End.Before(held(g1)) {
				r.Overlaps = append(r.Overlaps, fmt.Sprintf("%s: lease %s (attempt %d) granted while lease %s (attempt %d, expiring %s) was held", n, g2.LeaseID, g2.Attempt, g1.LeaseID, g1.Attempt, g1.Expires.Format(time.StampMilli)))
			}
		}
	}
	for _, f := range b.finishes {
		if f.Type != OK {
			continue
		}
		for _, g := range b.grants {
			switch {
			case g.LeaseID == f.LeaseID && f.Start.After(g.Expires.Add(o.Slack)):
				r.Overlaps = append(r.Overlaps, fmt.Sprintf("%s: %s of lease %s sent after it expired answered ok", n, f.F, f.LeaseID))
			case g.LeaseID != f.LeaseID && g.End.Before(f.Start) && leaseBefore(b.grants, f.LeaseID, g):
				r.Overlaps = append(r.Overlaps, fmt.Sprintf("%s: %s of lease %s answered ok after the task was leased again (lease %s)", n, f.F, f.LeaseID, g.LeaseID))
			}
		}
	}
}

// leaseBefore reports whether lease id was granted before grant g.
func leaseBefore(grants []Entry, id string, g Entry) bool {
	for _, x := range grants {
		if x.LeaseID == id {
			return x.End.Before(g.Start) || x.End.Equal(g.Start)
		}
	}
	return false
}

// checkAttemptOrder: each redelivery or re-lease of a task carries a
// higher attempt number than the one before (the generators never defer
// nor release without an error, the two cases that keep the number).
func (r *Report) checkAttemptOrder(n string, b *byName) {
	for _, list := range [][]Entry{b.deliveries, b.grants} {
		for i := 1; i < len(list); i++ {
			if list[i].Attempt <= list[i-1].Attempt {
				r.AttemptOrder = append(r.AttemptOrder, fmt.Sprintf("%s: %s as attempt %d after attempt %d", n, list[i].F, list[i].Attempt, list[i-1].Attempt))
			}
		}
	}
}

// checkCounts: the queues' counts by state agree with the tasks read one
// by one.
func (r *Report) checkCounts(final Final) {
	if final.Counts == nil {
		return
	}
	tally := map[errandapi.State]int{}
	for _, t := range final.Tasks {
		tally[t.State]++
	}
	for _, s := range sortedKeys(mergeKeys(tally, final.Counts)) {
		capped := final.Counts[s] >= 10000 && tally[s] >= final.Counts[s] // each queue's count stops at 10,000
		if final.Counts[s] != tally[s] && !capped {
			r.FinalMismatch = append(r.FinalMismatch, fmt.Sprintf("the queues count %d %s tasks; %d were read", final.Counts[s], s, tally[s]))
		}
	}
}

// checkConcurrency sweeps the deliveries of each queue for the most open at
// once.
func (r *Report) checkConcurrency(ds []Entry, o Options) {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := map[string][]edge{}
	for _, d := range ds {
		end := d.End
		if end.IsZero() {
			end = time.Unix(1<<40, 0)
		}
		edges[d.Queue] = append(edges[d.Queue], edge{d.Start, 1}, edge{end, -1})
	}
	for q, es := range edges {
		slices.SortFunc(es, func(x, y edge) int { // ends before starts at one instant
			return cmp.Or(x.at.Compare(y.at), cmp.Compare(x.delta, y.delta))
		})
		cur, peak := 0, 0
		for _, e := range es {
			cur += e.delta
			peak = max(peak, cur)
		}
		r.PeakConcurrent[q] = peak
		if limit := o.MaxConcurrent[q]; limit > 0 && peak > limit {
			r.Concurrency = append(r.Concurrency, fmt.Sprintf("queue %s: %d deliveries open at once, maxConcurrent %d", q, peak, limit))
		}
	}
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func mergeKeys[K comparable](a, b map[K]int) map[K]int {
	out := map[K]int{}
	for k := range a {
		out[k] = 0
	}
	for k := range b {
		out[k] = 0
	}
	return out
}

func firstKey(m map[string]bool) string {
	for _, k := range sortedKeys(m) {
		return k
	}
	return ""
}
