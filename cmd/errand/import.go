package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

const importUsage = `usage:
  errand import [--url URL] [--api-key KEY] [--dry-run] [--json] FILE|-

Load a configuration bundle (written by errand export) into the node's
organization: instances, queues and trigger rules that are missing are
created, settings that differ are changed, and what already matches is left.
Each item is reported as created, changed or left ("instance NAME", "settings
NAME", "queue NAME/QUEUE", "trigger NAME/ID"). A rule keeps its id. A bundle
holds no hook URL token or secret: an imported hook rule gets a new URL, and
one that had a secret stays disabled until you set its secret and enable it
(a note says so). A bundle holds a webhook target's header names but not
their values: a queue keeps the values its target already sends to the same
host; one created, or whose target cannot keep them, is paused without
those headers (a note names them). The bundle is read one instance at a time.
Importing the same bundle again changes nothing. An instance or queue the
bundle does not name is left alone: an import never deletes.

The whole bundle is checked before anything is written — every name and
setting, that each deadLetterQueue is in the bundle, that no existing queue
would change mode, that the key has the full grant on every instance named —
so a refused import changes nothing. Only the node's own refusal of a value
(its webhook address guard) can stop an import part-way; fix the bundle and
run it again: what was done is then left.

flags:
` + remoteFlagsHelp + `
  --dry-run               check and report what would be done; write nothing
  --json                  print the report as JSON on stdout

exit codes: 0 imported (or nothing to do), 1 refused or failed, 2 bad command line

examples:
  errand import errand-config.json
  errand export --url http://old:9191 | errand import --url https://new.example.com --api-key "$KEY" -
  errand import --dry-run errand-config.json`

func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf := addRemoteFlags(fs)
	// A node that does not answer is explained as every verb explains it.
	defer func() { err = reach(*rf.url, err) }()
	dry := fs.Bool("dry-run", false, "")
	asJSON := fs.Bool("json", false, "")
	pos, help, err := parseVerb(fs, args, importUsage, stdout)
	switch {
	case help || err != nil:
		return err
	case len(pos) != 1:
		return usagef("name one bundle file, or - for stdin\n\n%s", importUsage)
	}
	bf, err := openBundle(pos[0])
	if err != nil {
		return err
	}
	defer bf.close()
	c, err := rf.client()
	if err != nil {
		return err
	}
	have, err := checkImport(ctx, c, bf)
	if err != nil {
		return err
	}
	rep := &engine.ImportReport{Created: []string{}, Changed: []string{}, Left: []string{}}
	prog := newProgress(stderr)
	// Instance by instance: memory holds one instance's plan (and the
	// report's item names), whatever the bundle's size.
	err = bf.each(func(i int, bi *engine.BundleInstance) error {
		steps, notes, err := planInstance(ctx, c, bi, have[bi.Name])
		if err != nil {
			return err
		}
		for k, s := range steps {
			if !*dry && s.do != nil {
				prog.show("import: instance %d, %d/%d %s", i+1, k+1, len(steps), s.item)
				if err := s.do(ctx); err != nil {
					return fmt.Errorf("%s: %w (the items before it were imported; running the import again leaves them)", s.item, err)
				}
			}
			s.report(rep)
		}
		rep.Notes = append(rep.Notes, notes...)
		return nil
	})
	prog.done()
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	verb := map[bool]string{false: "", true: "would be "}[*dry]
	for _, l := range []struct {
		what  string
		items []string
	}{{"created", rep.Created}, {"changed", rep.Changed}, {"left", rep.Left}} {
		for _, it := range l.items {
			fmt.Fprintf(stdout, "%s%-8s %s\n", verb, l.what, it)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stderr, "errand: note: %s\n", n)
	}
	fmt.Fprintf(stderr, "errand: %d %screated, %d %schanged, %d left\n", len(rep.Created), verb, len(rep.Changed), verb, len(rep.Left))
	return nil
}

// bundleFile is a bundle read instance by instance, as many times as
// needed (stdin is first copied to a temporary file).
type bundleFile struct {
	path string
	tmp  bool
}

// openBundle opens a bundle file ("-" is stdin).
func openBundle(path string) (*bundleFile, error) {
	if path != "-" {
		if _, err := os.Stat(path); err != nil {
			// A file that is not there is the command line's fault, as
			// add --file's is.
			return nil, usageError{err}
		}
		return &bundleFile{path: path}, nil
	}
	f, err := os.CreateTemp("", "errand-import-*.json")
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(f, os.Stdin); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return &bundleFile{path: f.Name(), tmp: true}, nil
}

func (b *bundleFile) close() {
	if b.tmp {
		os.Remove(b.path)
	}
}

// each decodes the bundle strictly (an unknown field is refused) and calls
// fn with each instance in turn; the bundle's version is checked once the
// file is read.
func (b *bundleFile) each(fn func(i int, bi *engine.BundleInstance) error) error {
	f, err := os.Open(b.path)
	if err != nil {
		return err
	}
	defer f.Close()
	bad := func(err error) error {
		return fmt.Errorf("%s: not a bundle errand export wrote: %v", b.path, err)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	dec.DisallowUnknownFields()
	if err := expectDelim(dec, '{'); err != nil {
		return bad(err)
	}
	version := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		switch tok {
		case "version":
			err = dec.Decode(&version)
		case "exportedAt":
			var at int64
			err = dec.Decode(&at)
		case "instances":
			err = expectDelim(dec, '[')
			for i := 0; err == nil && dec.More(); i++ {
				var bi engine.BundleInstance
				if err = dec.Decode(&bi); err != nil {
					break
				}
				if ferr := fn(i, &bi); ferr != nil {
					return ferr
				}
			}
			if err == nil {
				err = expectDelim(dec, ']')
			}
		default:
			err = fmt.Errorf("json: unknown field %v", tok)
		}
		if err != nil {
			return bad(err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return bad(err)
	}
	return cliError(engine.CheckBundleVersion(version))
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %q, found %v", d, tok)
	}
	return nil
}

// checkImport reads the whole bundle once and checks it against the node
// before anything is written: every name, setting and rule, the key's
// grants, that no existing queue would change mode nor an existing rule
// kind. It returns the node's instances.
func checkImport(ctx context.Context, c *client.Client, bf *bundleFile) (map[string]bool, error) {
	self, err := c.Self(ctx)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	insts, err := c.ListInstances(ctx)
	if err != nil {
		return nil, err
	}
	for _, in := range insts {
		have[in.Name] = true
	}
	named := map[string]bool{}
	err = bf.each(func(i int, bi *engine.BundleInstance) error {
		// The node checks webhook URLs under its own rules when it is written.
		if err := engine.CheckBundleInstance(i, bi, task.URLRules{AllowHTTP: true}); err != nil {
			return cliError(err)
		}
		if named[bi.Name] {
			return fmt.Errorf("instances[%d].name: %q is named twice in the bundle", i, bi.Name)
		}
		named[bi.Name] = true
		if !fullOn(self, bi.Name) {
			return fmt.Errorf("the key has no full grant on instance %q; an import needs it on every instance it names", bi.Name)
		}
		if !have[bi.Name] {
			return nil
		}
		qs, err := c.ListQueues(ctx, bi.Name)
		if err != nil {
			return err
		}
		modes := map[string]errandapi.Mode{}
		for _, q := range qs {
			modes[q.Name] = q.Mode
		}
		for j, bq := range bi.Queues {
			if m, ok := modes[bq.Name]; ok && string(m) != string(bq.Mode) {
				return cliError(engine.ModeChangeError(i, j, bi.Name, bq.Name, task.Mode(m)))
			}
		}
		if len(bi.Triggers) == 0 {
			return nil
		}
		cur, err := triggersOf(ctx, c, bi.Name)
		if err != nil {
			return err
		}
		for _, bt := range bi.Triggers {
			if _, err := engine.PlanTrigger(bi.Name, bt, cur[bt.ID]); err != nil {
				return cliError(err)
			}
		}
		return nil
	})
	return have, err
}

// triggersOf is an instance's rules in the bundle's shape, by id.
func triggersOf(ctx context.Context, c *client.Client, instance string) (map[string]*engine.BundleTrigger, error) {
	list, err := c.ListTriggers(ctx, instance)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*engine.BundleTrigger, len(list))
	for _, tr := range list {
		bt := engine.BundleTriggerOf(tr)
		out[tr.ID] = &bt
	}
	return out, nil
}

// importStep is one item of an import: what to do (nil: it matches) and
// which list of the report it goes to.
type importStep struct {
	item   string
	kind   string // created, changed, left
	do     func(ctx context.Context) error
	silent bool // a second step of an item already reported
}

func (s importStep) report(rep *engine.ImportReport) {
	if s.silent {
		return
	}
	switch s.kind {
	case "created":
		rep.Created = append(rep.Created, s.item)
	case "changed":
		rep.Changed = append(rep.Changed, s.item)
	default:
		rep.Left = append(rep.Left, s.item)
	}
}

// planInstance returns the steps that load one instance of a bundle, in
// order (the instance, its settings, its queues, their dead-letter queues
// once every queue exists, then its rules), and the notes for the
// operator; it writes nothing. exists says whether the node has it.
func planInstance(ctx context.Context, c *client.Client, bi *engine.BundleInstance, exists bool) ([]importStep, []string, error) {
	cur := map[string]errandapi.Queue{}
	rules := map[string]*engine.BundleTrigger{}
	var steps, dlqSteps []importStep
	settings := engine.BundleSettings{}
	if exists {
		qs, err := c.ListQueues(ctx, bi.Name)
		if err != nil {
			return nil, nil, err
		}
		for _, q := range qs {
			cur[q.Name] = q
		}
		s, err := c.Settings(ctx, bi.Name)
		if err != nil {
			return nil, nil, err
		}
		settings = engine.BundleSettings{RetentionDays: s.RetentionDays, MaxInFlight: s.MaxInFlight}
		if s.RateLimit != nil {
			settings.RateLimit = *s.RateLimit
		}
		if rules, err = triggersOf(ctx, c, bi.Name); err != nil {
			return nil, nil, err
		}
		steps = append(steps, importStep{item: "instance " + bi.Name})
	} else {
		name := bi.Name
		steps = append(steps, importStep{item: "instance " + name, kind: "created", do: func(ctx context.Context) error {
			_, err := c.CreateInstance(ctx, name)
			return err
		}})
		// A new instance has the default settings and queue.
		settings = engine.BundleSettings(task.DefaultSettings())
		settings.RateLimit = 0
		cur["default"] = defaultQueue()
	}
	steps = append(steps, settingsStep(c, *bi, settings))
	var notes []string
	for _, bq := range bi.Queues {
		old, exists := cur[bq.Name]
		bq, note := bq.WithoutHidden(bi.Name, (*task.Target)(old.Target))
		if note != "" {
			notes = append(notes, note)
		}
		s, d := queueSteps(c, bi.Name, bq, old, exists)
		steps = append(steps, s)
		if d != nil {
			dlqSteps = append(dlqSteps, *d)
		}
	}
	steps = append(steps, dlqSteps...)
	for _, bt := range bi.Triggers {
		plan, err := engine.PlanTrigger(bi.Name, bt, rules[bt.ID])
		if err != nil {
			return nil, nil, cliError(err)
		}
		if plan.Note != "" {
			notes = append(notes, plan.Note)
		}
		steps = append(steps, triggerStep(c, bi.Name, plan))
	}
	return steps, notes, nil
}

// triggerStep is the step of one rule: its creation with its id, its
// update, or nothing.
func triggerStep(c *client.Client, instance string, plan engine.TriggerImport) importStep {
	st := importStep{item: "trigger " + instance + "/" + plan.Want.ID, kind: plan.Action}
	want := plan.Want
	switch plan.Action {
	case "created":
		st.do = func(ctx context.Context) error {
			_, err := c.CreateTrigger(ctx, instance, want.Request(true))
			return err
		}
	case "changed":
		st.do = func(ctx context.Context) error {
			_, err := c.UpdateTrigger(ctx, instance, want.ID, want.Request(false))
			return err
		}
	}
	return st
}

// fullOn reports whether the key has the full grant on instance.
func fullOn(self *errandapi.KeySelf, instance string) bool {
	for _, g := range self.Grants {
		if g.Role == errandapi.RoleFull && (g.Instance == "*" || g.Instance == instance) {
			return true
		}
	}
	return false
}

// defaultQueue is the queue a new instance is made with, as a bundle
// would show it.
func defaultQueue() errandapi.Queue {
	q := task.NewQueue("", "default", task.ModePush)
	return errandapi.Queue{Name: q.Name, Mode: errandapi.Mode(q.Mode), MaxAttempts: q.MaxAttempts, MinBackoffSeconds: q.MinBackoffSeconds,
		MaxBackoffSeconds: q.MaxBackoffSeconds, MaxDoublings: q.MaxDoublings, DeadlineSeconds: q.DeadlineSeconds,
		TargetControl: q.TargetControl, Paused: q.Paused}
}

func settingsStep(c *client.Client, bi engine.BundleInstance, cur engine.BundleSettings) importStep {
	item := "settings " + bi.Name
	if cur == bi.Settings {
		return importStep{item: item}
	}
	want, name := bi.Settings, bi.Name
	return importStep{item: item, kind: "changed", do: func(ctx context.Context) error {
		req := errandapi.SettingsRequest{RetentionDays: &want.RetentionDays, MaxInFlight: &want.MaxInFlight, RateLimit: errandapi.Null[float64]()}
		if want.RateLimit != 0 {
			req.RateLimit = errandapi.Value(want.RateLimit)
		}
		_, err := c.UpdateSettings(ctx, name, req)
		return err
	}}
}

// bundleQueueOf is a queue of the v1 API in the bundle's shape.
func bundleQueueOf(q errandapi.Queue) engine.BundleQueue {
	b := engine.BundleQueue{Name: q.Name, Mode: task.Mode(q.Mode), Target: (*task.Target)(q.Target), MaxAttempts: q.MaxAttempts,
		MinBackoffSeconds: q.MinBackoffSeconds, MaxBackoffSeconds: q.MaxBackoffSeconds, MaxDoublings: q.MaxDoublings,
		DeadlineSeconds: q.DeadlineSeconds, TargetControl: q.TargetControl, Paused: q.Paused}
	if q.RatePerSecond != nil {
		b.RatePerSecond = *q.RatePerSecond
	}
	if q.MaxConcurrent != nil {
		b.MaxConcurrent = *q.MaxConcurrent
	}
	if q.MaxAgeSeconds != nil {
		b.MaxAgeSeconds = *q.MaxAgeSeconds
	}
	if q.DeadLetterQueue != nil {
		b.DeadLetterQueue = *q.DeadLetterQueue
	}
	return b
}

// queueRequest sets every setting of b but its name, mode and dead-letter
// queue.
func queueRequest(b engine.BundleQueue) errandapi.QueueRequest {
	nf := func(v float64) errandapi.Nullable[float64] {
		if v == 0 {
			return errandapi.Null[float64]()
		}
		return errandapi.Value(v)
	}
	r := errandapi.QueueRequest{Target: errandapi.Null[errandapi.Target](), RatePerSecond: nf(b.RatePerSecond),
		MaxConcurrent: errandapi.Null[int](), MaxAttempts: &b.MaxAttempts, MinBackoffSeconds: &b.MinBackoffSeconds,
		MaxBackoffSeconds: &b.MaxBackoffSeconds, MaxDoublings: &b.MaxDoublings, MaxAgeSeconds: errandapi.Null[int64](),
		DeadlineSeconds: &b.DeadlineSeconds, TargetControl: &b.TargetControl, Paused: &b.Paused}
	if b.Target != nil {
		r.Target = errandapi.Value(errandapi.Target(*b.Target))
	}
	if b.MaxConcurrent != 0 {
		r.MaxConcurrent = errandapi.Value(b.MaxConcurrent)
	}
	if b.MaxAgeSeconds != 0 {
		r.MaxAgeSeconds = errandapi.Value(b.MaxAgeSeconds)
	}
	return r
}

// queueSteps are the steps of one queue: its creation or update without
// its dead-letter queue, and (when that differs) the dead-letter queue's
// step, to run once every queue exists.
func queueSteps(c *client.Client, instance string, want engine.BundleQueue, old errandapi.Queue, exists bool) (importStep, *importStep) {
	item := "queue " + instance + "/" + want.Name
	cur := bundleQueueOf(old)
	var dlq *importStep
	if cur.DeadLetterQueue != want.DeadLetterQueue {
		name := want.DeadLetterQueue
		dlq = &importStep{item: item, silent: true, do: func(ctx context.Context) error {
			req := errandapi.QueueRequest{DeadLetterQueue: errandapi.Null[string]()}
			if name != "" {
				req.DeadLetterQueue = errandapi.Value(name)
			}
			_, err := c.UpdateQueue(ctx, instance, want.Name, req)
			return err
		}}
	}
	if !exists {
		return importStep{item: item, kind: "created", do: func(ctx context.Context) error {
			req := queueRequest(want)
			req.Name, req.Mode = &want.Name, (*errandapi.Mode)(&want.Mode)
			if want.Target == nil {
				req.Target = errandapi.Nullable[errandapi.Target]{}
			}
			_, err := c.CreateQueue(ctx, instance, want.Name, req)
			return err
		}}, dlq
	}
	cur.DeadLetterQueue = want.DeadLetterQueue
	switch {
	case reflect.DeepEqual(cur, want) && dlq == nil:
		return importStep{item: item}, nil
	case reflect.DeepEqual(cur, want):
		dlq.silent = false
		dlq.kind = "changed"
		return importStep{item: item, silent: true}, dlq
	}
	return importStep{item: item, kind: "changed", do: func(ctx context.Context) error {
		_, err := c.UpdateQueue(ctx, instance, want.Name, queueRequest(want))
		return err
	}}, dlq
}
