package errandapi

// Usage is an instance's usage in the current calendar month (UTC), as GET
// /v1/tasks/{instance}/usage answers it: the month's totals, one entry per
// day from the 1st to today, and the month's average of bytes kept.
type Usage struct {
	Instance string `json:"instance"`
	// Month is "YYYY-MM"; From and To are the epoch ms of its first
	// instant and of the next month's.
	Month string `json:"month"`
	From  int64  `json:"from"`
	To    int64  `json:"to"`
	// TasksAdded counts the tasks stored in the month.
	TasksAdded int64 `json:"tasksAdded"`
	// Deliveries counts every attempt started in the month, by target.
	Deliveries Deliveries `json:"deliveries"`
	// BytesKept is what the instance keeps now: the bytes of its tasks'
	// payloads, params and results.
	BytesKept int64 `json:"bytesKept"`
	// AverageBytesKept is the mean of Days' BytesKept.
	AverageBytesKept int64      `json:"averageBytesKept"`
	Days             []UsageDay `json:"days"`
}

// Deliveries counts attempts by the kind of target: webhook, function and
// channel for push queues, pull for tasks handed out by leases.
type Deliveries struct {
	Webhook  int64 `json:"webhook"`
	Function int64 `json:"function"`
	Channel  int64 `json:"channel"`
	Pull     int64 `json:"pull"`
	Total    int64 `json:"total"`
}

// UsageDay is one UTC day of a Usage. BytesKept is the day's last sample
// (taken hourly; today's is the value now), or the day before's when none
// was taken that day.
type UsageDay struct {
	// Date is "YYYY-MM-DD"; Start the epoch ms of its 00:00 UTC.
	Date       string     `json:"date"`
	Start      int64      `json:"start"`
	TasksAdded int64      `json:"tasksAdded"`
	Deliveries Deliveries `json:"deliveries"`
	BytesKept  int64      `json:"bytesKept"`
}

// UsageResponse is the answer of GET /v1/tasks/{instance}/usage.
type UsageResponse struct {
	Usage Usage `json:"usage"`
}
