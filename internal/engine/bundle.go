package engine

import (
	"fmt"
	"maps"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// BundleVersion is the version of the configuration bundle's format that
// errand writes: 2 added triggers. Version 1 bundles (without triggers) are
// still read.
const BundleVersion = 2

// Bundle is a configuration bundle (backup.export): an organization's
// instances with their settings, queues and trigger rules, as JSON. It
// never holds API keys, webhook signing keys, hook tokens or secrets, the
// values of a target's headers (masked: BundleQueue.WithoutHidden), or
// tasks.
type Bundle struct {
	Version    int              `json:"version"`
	ExportedAt int64            `json:"exportedAt"`
	Instances  []BundleInstance `json:"instances"`
}

// BundleInstance is one instance of a Bundle.
type BundleInstance struct {
	Name     string          `json:"name"`
	Settings BundleSettings  `json:"settings"`
	Queues   []BundleQueue   `json:"queues"`
	Triggers []BundleTrigger `json:"triggers,omitempty"`
}

// BundleSettings are an instance's settings in v1 names; RateLimit 0 is
// unlimited.
type BundleSettings struct {
	RetentionDays int     `json:"retentionDays"`
	RateLimit     float64 `json:"rateLimit"`
	MaxInFlight   int     `json:"maxInFlight"`
}

// BundleQueue is a queue's settings in v1 names; zero RatePerSecond,
// MaxConcurrent and MaxAgeSeconds are unlimited.
type BundleQueue struct {
	Name              string       `json:"name"`
	Mode              task.Mode    `json:"mode"`
	Target            *task.Target `json:"target"`
	RatePerSecond     float64      `json:"ratePerSecond"`
	MaxConcurrent     int          `json:"maxConcurrent"`
	MaxAttempts       int          `json:"maxAttempts"`
	MinBackoffSeconds float64      `json:"minBackoffSeconds"`
	MaxBackoffSeconds float64      `json:"maxBackoffSeconds"`
	MaxDoublings      int          `json:"maxDoublings"`
	MaxAgeSeconds     int64        `json:"maxAgeSeconds"`
	DeadlineSeconds   int          `json:"deadlineSeconds"`
	DeadLetterQueue   string       `json:"deadLetterQueue"`
	TargetControl     bool         `json:"targetControl"`
	Paused            bool         `json:"paused"`
}

func bundleQueue(q *task.Queue) BundleQueue {
	return BundleQueue{
		Name: q.Name, Mode: q.Mode, Target: q.Target.Masked(), RatePerSecond: q.RatePerSecond, MaxConcurrent: q.MaxConcurrent,
		MaxAttempts: q.MaxAttempts, MinBackoffSeconds: q.MinBackoffSeconds, MaxBackoffSeconds: q.MaxBackoffSeconds,
		MaxDoublings: q.MaxDoublings, MaxAgeSeconds: q.MaxAgeSeconds, DeadlineSeconds: q.DeadlineSeconds,
		DeadLetterQueue: q.DeadLetterQueue, TargetControl: q.TargetControl, Paused: q.Paused,
	}
}

// WithoutHidden is b as an import applies it over cur, the queue's
// target now (nil for a queue to create): a bundle holds no header values
// (bundleQueue masks them), so the target's headers cur cannot give are
// left out (task.Target.DropHidden) and the queue is paused, and note says
// what to do ("" when nothing was left out). Both importers (ImportBundle
// and errand import) use it, and Check.
func (b BundleQueue) WithoutHidden(instance string, cur *task.Target) (out BundleQueue, note string) {
	t, dropped := b.Target.DropHidden(cur)
	if dropped == nil {
		return b, ""
	}
	b.Target, b.Paused = t, true
	return b, fmt.Sprintf("queue %s/%s is paused: its target's headers %s have values a bundle does not carry; "+
		"set its target with them, then resume it", instance, b.Name, strings.Join(dropped, ", "))
}

// patch is b as a queue patch that sets every setting.
func (b BundleQueue) patch() *task.QueuePatch {
	nz := func(v float64) **float64 {
		var p *float64
		if v != 0 {
			p = &v
		}
		return &p
	}
	nzi := func(v int) **int {
		var p *int
		if v != 0 {
			p = &v
		}
		return &p
	}
	var age *int64
	if b.MaxAgeSeconds != 0 {
		age = &b.MaxAgeSeconds
	}
	var dlq *string
	if b.DeadLetterQueue != "" {
		dlq = &b.DeadLetterQueue
	}
	target := b.Target
	if target != nil {
		// A copy: applying the patch checks the target in place (header
		// names made canonical, hidden values filled from the queue's),
		// which must not change the bundle.
		t := *target
		t.Headers = maps.Clone(target.Headers)
		target = &t
	}
	return &task.QueuePatch{
		Mode: &b.Mode, Target: &target, RatePerSecond: nz(b.RatePerSecond), MaxConcurrent: nzi(b.MaxConcurrent),
		MaxAttempts: &b.MaxAttempts, MinBackoffSeconds: &b.MinBackoffSeconds, MaxBackoffSeconds: &b.MaxBackoffSeconds,
		MaxDoublings: &b.MaxDoublings, MaxAgeSeconds: &age, DeadlineSeconds: &b.DeadlineSeconds,
		DeadLetterQueue: &dlq, TargetControl: &b.TargetControl, Paused: &b.Paused,
	}
}

// Check checks a whole bundle without a store: its version, every name,
// every setting (webhook targets under rules), that each deadLetterQueue is
// a queue of the bundle's same instance that does not lead back to it, and
// every trigger rule. The error names the field
// (instances[0].queues[2].maxAttempts).
func (b *Bundle) Check(rules task.URLRules) error {
	if err := CheckBundleVersion(b.Version); err != nil {
		return err
	}
	names := map[string]bool{}
	for i := range b.Instances {
		if err := CheckBundleInstance(i, &b.Instances[i], rules); err != nil {
			return err
		}
		if names[b.Instances[i].Name] {
			return task.FieldErrorf(task.CodeInvalidArgument, fmt.Sprintf("instances[%d].name", i), "%s is named twice in the bundle", task.Quote(b.Instances[i].Name))
		}
		names[b.Instances[i].Name] = true
	}
	return nil
}

// CheckBundleVersion refuses a bundle format this errand does not read.
func CheckBundleVersion(v int) error {
	if v != 1 && v != BundleVersion {
		return task.FieldErrorf(task.CodeInvalidArgument, "version", "must be 1 or %d", BundleVersion)
	}
	return nil
}

// CheckBundleInstance checks instance i of a bundle on its own (a streamed
// import checks one instance at a time).
func CheckBundleInstance(i int, bi *BundleInstance, rules task.URLRules) error {
	field := fmt.Sprintf("instances[%d]", i)
	if err := task.ValidateQueueName(bi.Name, field+".name"); err != nil {
		return err
	}
	s := task.DefaultSettings()
	if err := settingsPatch(bi.Settings).Apply(&s); err != nil {
		return prefixed(err, field+".settings")
	}
	names, dlqs := map[string]bool{}, map[string]string{}
	for _, bq := range bi.Queues {
		names[bq.Name], dlqs[bq.Name] = true, bq.DeadLetterQueue
	}
	for j, bq := range bi.Queues {
		qf := fmt.Sprintf("%s.queues[%d]", field, j)
		if err := task.ValidateQueueName(bq.Name, qf+".name"); err != nil {
			return err
		}
		bq, _ := bq.WithoutHidden(bi.Name, nil)
		if err := bq.patch().Apply(task.NewQueue("", bq.Name, bq.Mode), true, rules); err != nil {
			return prefixed(err, qf)
		}
		if bq.DeadLetterQueue != "" && !names[bq.DeadLetterQueue] {
			return task.FieldErrorf(task.CodeInvalidArgument, qf+".deadLetterQueue", "names %s, which the bundle does not hold", task.Quote(bq.DeadLetterQueue))
		}
		// The store's rule, on the bundle's queues: a loop of dead-letter
		// queues is refused before anything is imported.
		if err := store.CheckDeadLetter(&task.Queue{Name: bq.Name, DeadLetterQueue: bq.DeadLetterQueue}, func(name string) (string, bool, error) {
			d, ok := dlqs[name]
			return d, ok, nil
		}); err != nil {
			return prefixed(err, qf)
		}
	}
	seen := map[string]bool{}
	for k, bt := range bi.Triggers {
		if err := bt.check(bi, fmt.Sprintf("%s.triggers[%d]", field, k), seen); err != nil {
			return err
		}
	}
	return nil
}
