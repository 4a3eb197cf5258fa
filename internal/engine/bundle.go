package engine

import (
	"context"
	"fmt"
	"reflect"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// BundleVersion is the version of the configuration bundle's format.
const BundleVersion = 1

// Bundle is a configuration bundle (backup.export): an organization's
// instances with their settings and queues, as JSON. It never holds API
// keys, webhook signing keys or tasks. Triggers join it once they exist.
type Bundle struct {
	Version    int              `json:"version"`
	ExportedAt int64            `json:"exportedAt"`
	Instances  []BundleInstance `json:"instances"`
}

// BundleInstance is one instance of a Bundle.
type BundleInstance struct {
	Name     string         `json:"name"`
	Settings BundleSettings `json:"settings"`
	Queues   []BundleQueue  `json:"queues"`
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
		Name: q.Name, Mode: q.Mode, Target: q.Target, RatePerSecond: q.RatePerSecond, MaxConcurrent: q.MaxConcurrent,
		MaxAttempts: q.MaxAttempts, MinBackoffSeconds: q.MinBackoffSeconds, MaxBackoffSeconds: q.MaxBackoffSeconds,
		MaxDoublings: q.MaxDoublings, MaxAgeSeconds: q.MaxAgeSeconds, DeadlineSeconds: q.DeadlineSeconds,
		DeadLetterQueue: q.DeadLetterQueue, TargetControl: q.TargetControl, Paused: q.Paused,
	}
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
	return &task.QueuePatch{
		Mode: &b.Mode, Target: &target, RatePerSecond: nz(b.RatePerSecond), MaxConcurrent: nzi(b.MaxConcurrent),
		MaxAttempts: &b.MaxAttempts, MinBackoffSeconds: &b.MinBackoffSeconds, MaxBackoffSeconds: &b.MaxBackoffSeconds,
		MaxDoublings: &b.MaxDoublings, MaxAgeSeconds: &age, DeadlineSeconds: &b.DeadlineSeconds,
		DeadLetterQueue: &dlq, TargetControl: &b.TargetControl, Paused: &b.Paused,
	}
}

// ExportBundle returns org's configuration bundle.
func (e *Engine) ExportBundle(ctx context.Context, org string) (*Bundle, error) {
	insts, err := e.InstanceList(ctx, org)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Version: BundleVersion, ExportedAt: e.now(), Instances: []BundleInstance{}}
	for _, inst := range insts {
		qs, err := e.store.QueueList(ctx, inst.ID)
		if err != nil {
			return nil, err
		}
		bi := BundleInstance{Name: inst.Name, Settings: BundleSettings(inst.Settings), Queues: []BundleQueue{}}
		for _, q := range qs {
			bi.Queues = append(bi.Queues, bundleQueue(q))
		}
		b.Instances = append(b.Instances, bi)
	}
	return b, nil
}

// Check checks a whole bundle without a store: its version, every name,
// every setting (webhook targets under rules), and that each
// deadLetterQueue is a queue of the bundle's same instance. The error
// names the field (instances[0].queues[2].maxAttempts).
func (b *Bundle) Check(rules task.URLRules) error {
	if b.Version != BundleVersion {
		return task.FieldErrorf(task.CodeInvalidArgument, "version", "must be %d", BundleVersion)
	}
	for i, bi := range b.Instances {
		field := fmt.Sprintf("instances[%d]", i)
		if err := task.ValidateQueueName(bi.Name, field+".name"); err != nil {
			return err
		}
		s := task.DefaultSettings()
		if err := settingsPatch(bi.Settings).Apply(&s); err != nil {
			return prefixed(err, field+".settings")
		}
		names := map[string]bool{}
		for _, bq := range bi.Queues {
			names[bq.Name] = true
		}
		for j, bq := range bi.Queues {
			qf := fmt.Sprintf("%s.queues[%d]", field, j)
			if err := task.ValidateQueueName(bq.Name, qf+".name"); err != nil {
				return err
			}
			if err := bq.patch().Apply(task.NewQueue("", bq.Name, bq.Mode), true, rules); err != nil {
				return prefixed(err, qf)
			}
			if bq.DeadLetterQueue != "" && !names[bq.DeadLetterQueue] {
				return task.FieldErrorf(task.CodeInvalidArgument, qf+".deadLetterQueue", "names %q, which the bundle does not hold", bq.DeadLetterQueue)
			}
		}
	}
	return nil
}

// ModeChangeError refuses importing queue j of instance i of a bundle over
// an existing queue of another mode.
func ModeChangeError(i, j int, instance, queue string, was task.Mode) error {
	return task.FieldErrorf(task.CodeInvalidArgument, fmt.Sprintf("instances[%d].queues[%d].mode", i, j),
		"queue %s/%s exists as a %s queue; a queue's mode cannot change", instance, queue, was)
}

// ImportReport says what an import did, each item named
// "instance NAME", "settings NAME" or "queue NAME/QUEUE".
type ImportReport struct {
	Created []string `json:"created"`
	Changed []string `json:"changed"`
	Left    []string `json:"left"`
}

// ImportBundle loads a bundle into org: missing instances and queues are
// created, settings that differ are changed, and what already matches is
// left. Running it again changes nothing. The whole bundle is checked
// before anything is written, so a refused import changes nothing; an
// instance or queue of org that the bundle does not name is left alone.
func (e *Engine) ImportBundle(ctx context.Context, org string, b *Bundle) (*ImportReport, error) {
	if err := b.Check(e.rules); err != nil {
		return nil, err
	}
	// No existing queue may change mode.
	for i, bi := range b.Instances {
		inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: bi.Name})
		if err != nil {
			continue
		}
		for j, bq := range bi.Queues {
			if old, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: bq.Name}); err == nil && old.Mode != bq.Mode {
				return nil, ModeChangeError(i, j, bi.Name, bq.Name, old.Mode)
			}
		}
	}
	rep := &ImportReport{Created: []string{}, Changed: []string{}, Left: []string{}}
	for _, bi := range b.Instances {
		if err := e.importInstance(ctx, org, bi, rep); err != nil {
			return rep, err
		}
	}
	e.changed()
	return rep, nil
}

func (e *Engine) importInstance(ctx context.Context, org string, bi BundleInstance, rep *ImportReport) error {
	inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: bi.Name})
	if task.IsCode(err, task.CodeNotFound) {
		inst, err = e.InstanceCreate(ctx, org, bi.Name)
		if err == nil {
			rep.Created = append(rep.Created, "instance "+bi.Name)
		}
	} else if err == nil {
		rep.Left = append(rep.Left, "instance "+bi.Name)
	}
	if err != nil {
		return err
	}
	if BundleSettings(inst.Settings) != bi.Settings {
		if _, err := e.store.InstanceUpdate(ctx, store.InstanceRef{Org: org, Name: bi.Name}, func(i *task.Instance) error {
			return settingsPatch(bi.Settings).Apply(&i.Settings)
		}); err != nil {
			return err
		}
		rep.Changed = append(rep.Changed, "settings "+bi.Name)
	} else {
		rep.Left = append(rep.Left, "settings "+bi.Name)
	}
	// Queues first without their dead-letter queue, which may be created
	// later in the same import; then the dead-letter queues are set.
	for pass := range 2 {
		for _, bq := range bi.Queues {
			if err := e.importQueue(ctx, inst, bi.Name, bq, pass, rep); err != nil {
				return err
			}
		}
	}
	return nil
}

// importQueue creates or updates one queue: pass 0 everything but the
// dead-letter queue, pass 1 the dead-letter queue and the report.
func (e *Engine) importQueue(ctx context.Context, inst *task.Instance, instName string, bq BundleQueue, pass int, rep *ImportReport) error {
	item := "queue " + instName + "/" + bq.Name
	want := bq
	if pass == 0 {
		want.DeadLetterQueue = ""
	}
	old, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: bq.Name})
	if task.IsCode(err, task.CodeNotFound) {
		q := task.NewQueue(inst.ID, bq.Name, bq.Mode)
		if err := want.patch().Apply(q, true, e.rules); err != nil {
			return err
		}
		q.CreatedAt = e.now()
		if err := e.store.QueueCreate(ctx, q); err != nil {
			return err
		}
		rep.Created = append(rep.Created, item)
		return nil
	}
	if err != nil {
		return err
	}
	cur := bundleQueue(old)
	if pass == 0 {
		want.DeadLetterQueue = cur.DeadLetterQueue // set in pass 1
	}
	if reflect.DeepEqual(cur, want) {
		if pass == 1 && !contains(rep.Created, item) && !contains(rep.Changed, item) {
			rep.Left = append(rep.Left, item)
		}
		return nil
	}
	if _, err := e.store.QueueUpdate(ctx, store.QueueRef{InstanceID: inst.ID, Name: bq.Name}, func(q *task.Queue) error {
		return want.patch().Apply(q, false, e.rules)
	}); err != nil {
		return err
	}
	if !contains(rep.Created, item) && !contains(rep.Changed, item) {
		rep.Changed = append(rep.Changed, item)
	}
	return nil
}

func settingsPatch(s BundleSettings) *task.SettingsPatch {
	var rl *float64
	if s.RateLimit != 0 {
		rl = &s.RateLimit
	}
	return &task.SettingsPatch{RetentionDays: &s.RetentionDays, RateLimit: &rl, MaxInFlight: &s.MaxInFlight}
}

// prefixed puts field before the field an error names.
func prefixed(err error, field string) error {
	te, ok := err.(*task.Error)
	if !ok {
		return err
	}
	c := *te
	c.Field = field + "." + c.Field
	c.Message = field + "." + c.Message
	return &c
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
