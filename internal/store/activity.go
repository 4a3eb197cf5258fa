package store

// ActivityParams select a queue's activity: the minutes of [Since, Until)
// (epoch ms), each kind of event read up to Limit tasks, through the
// indexes on createdAt and on (state, finishedAt), so the read is bounded
// however big the queue is.
type ActivityParams struct {
	InstanceID string
	Queue      string
	Since      int64
	Until      int64
	Limit      int
}

// Activity is a queue's events per minute: each map goes from the minute
// (epoch ms, a multiple of 60,000) to how many tasks were added, succeeded
// or failed in it; a minute with none is absent.
type Activity struct {
	Added     map[int64]int
	Succeeded map[int64]int
	Failed    map[int64]int
	// Capped names the kinds ("added", "succeeded", "failed") whose read
	// stopped at Limit: their counts are a lower bound.
	Capped []string
}

// ActivityKinds are the kinds of Activity, in the order the backends
// read them.
var ActivityKinds = []string{"added", "succeeded", "failed"}

// Put adds n events of kind (one of ActivityKinds) in minute.
func (a *Activity) Put(kind string, minute int64, n int) {
	m := map[string]*map[int64]int{"added": &a.Added, "succeeded": &a.Succeeded, "failed": &a.Failed}[kind]
	if *m == nil {
		*m = map[int64]int{}
	}
	(*m)[minute] += n
}

// ActivityRows are the rows of a backend's activity query: (kind, minute,
// count).
type ActivityRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanActivity reads the rows of a backend's activity query; a kind whose
// counts add up to limit is capped.
func ScanActivity(rows ActivityRows, limit int) (*Activity, error) {
	a := &Activity{}
	total := map[string]int{}
	for rows.Next() {
		var (
			kind   string
			minute int64
			n      int
		)
		if err := rows.Scan(&kind, &minute, &n); err != nil {
			return nil, err
		}
		a.Put(kind, minute, n)
		total[kind] += n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, k := range ActivityKinds {
		if limit > 0 && total[k] >= limit {
			a.Capped = append(a.Capped, k)
		}
	}
	return a, nil
}
