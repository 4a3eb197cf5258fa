package engine

import (
	"context"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/store"
)

// InstanceUsage reports the instance's usage in the current month (UTC):
// the store's rows, this node's counts not flushed yet, and the bytes kept
// now for today. Other nodes' counts appear within their flush interval.
func (e *Engine) InstanceUsage(ctx context.Context, org, name string) (*errandapi.Usage, error) {
	inst, err := e.Instance(ctx, org, name)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now().UTC()
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	// A month back as well, for the bytes kept carried into the 1st.
	rows, err := e.store.UsageList(ctx, &store.UsageListParams{InstanceID: inst.ID, From: from.AddDate(0, -1, 0).UnixMilli(), To: to.UnixMilli()})
	if err != nil {
		return nil, err
	}
	bytes, err := e.store.UsageBytes(ctx, inst.ID)
	if err != nil {
		return nil, err
	}
	rows = append(rows, e.usage.unflushed(inst.ID)...)
	u := usageReport(rows, now, bytes)
	u.Instance = name
	return u, nil
}

// usageReport folds per-day rows (several per day allowed: they add up)
// into the month of now. A day's bytes kept is its latest sample, else the
// day before's; today's is bytesNow.
func usageReport(rows []store.UsageRow, now time.Time, bytesNow int64) *errandapi.Usage {
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	today := dayStart(now.UnixMilli())
	type sample struct{ bytes, at int64 }
	days := map[int64]*errandapi.UsageDay{}
	samples := map[int64]sample{}
	var carried sample // the latest sample before the month
	for _, r := range rows {
		if r.BytesAt > 0 {
			if r.Day < from.UnixMilli() {
				if r.BytesAt > carried.at {
					carried = sample{r.BytesKept, r.BytesAt}
				}
			} else if s := samples[r.Day]; r.BytesAt > s.at {
				samples[r.Day] = sample{r.BytesKept, r.BytesAt}
			}
		}
		if r.Day < from.UnixMilli() || r.Day > today {
			continue
		}
		d := days[r.Day]
		if d == nil {
			d = &errandapi.UsageDay{}
			days[r.Day] = d
		}
		d.TasksAdded += r.Added
		addDeliveries(&d.Deliveries, r)
	}
	u := &errandapi.Usage{Month: from.Format("2006-01"), From: from.UnixMilli(), To: to.UnixMilli(), BytesKept: bytesNow, Days: []errandapi.UsageDay{}}
	last := carried.bytes
	var sum int64
	for day := from.UnixMilli(); day <= today; day += dayMs {
		d := errandapi.UsageDay{}
		if got := days[day]; got != nil {
			d = *got
		}
		d.Date, d.Start = time.UnixMilli(day).UTC().Format(time.DateOnly), day
		if s, ok := samples[day]; ok {
			last = s.bytes
		}
		if day == today {
			last = bytesNow
		}
		d.BytesKept = last
		sum += last
		u.TasksAdded += d.TasksAdded
		u.Deliveries.Webhook += d.Deliveries.Webhook
		u.Deliveries.Function += d.Deliveries.Function
		u.Deliveries.Channel += d.Deliveries.Channel
		u.Deliveries.Pull += d.Deliveries.Pull
		u.Deliveries.Total += d.Deliveries.Total
		u.Days = append(u.Days, d)
	}
	u.AverageBytesKept = sum / int64(len(u.Days))
	return u
}

// addDeliveries adds r's delivery counts to d.
func addDeliveries(d *errandapi.Deliveries, r store.UsageRow) {
	d.Webhook += r.Webhook
	d.Function += r.Function
	d.Channel += r.Channel
	d.Pull += r.Pull
	d.Total += r.Webhook + r.Function + r.Channel + r.Pull
}
