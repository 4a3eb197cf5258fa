package task

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func sp(s string) *string { return &s }

func TestTriggerPatchValidation(t *testing.T) {
	raw := func(s string) *json.RawMessage { r := json.RawMessage(s); return &r }
	cases := []struct {
		name  string
		p     TriggerPatch
		code  Code
		field string
	}{
		{"schedule ok", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("*/5 * * * *")}}, "", ""},
		{"descriptor", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@every 30s")}}, "", ""},
		{"hourly in a zone", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@hourly"), TimeZone: sp("Europe/Paris")}}, "", ""},
		{"bad cron", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("61 * * * *")}}, CodeInvalidArgument, "schedule.cron"},
		{"six fields", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("0 */5 * * * *")}}, CodeInvalidArgument, "schedule.cron"},
		{"no cron", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{}}, CodeInvalidArgument, "schedule.cron"},
		{"tz in cron", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("CRON_TZ=UTC 0 * * * *")}}, CodeInvalidArgument, "schedule.cron"},
		{"every too short", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@every 10ms")}}, CodeInvalidArgument, "schedule.cron"},
		{"every a fraction", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@every 1500ms")}}, CodeInvalidArgument, "schedule.cron"},
		{"every whole seconds", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@every 1m30s")}}, "", ""},
		{"bad zone", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@hourly"), TimeZone: sp("Mars/Olympus")}}, CodeInvalidArgument, "schedule.timeZone"},
		{"long zone", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@hourly"), TimeZone: sp(strings.Repeat("Europe/", 1000))}}, CodeInvalidArgument, "schedule.timeZone"},
		{"long cron", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("0 0 * * " + strings.Repeat("1,", 300) + "2")}}, CodeInvalidArgument, "schedule.cron"},
		{"local zone", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@hourly"), TimeZone: sp("Local")}}, CodeInvalidArgument, "schedule.timeZone"},
		{"no kind", TriggerPatch{Queue: sp("jobs/q")}, CodeInvalidArgument, "schedule"},
		{"two kinds", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{}, Task: &TaskOnPatch{Queue: sp("jobs/a")}}, CodeInvalidArgument, "task"},
		{"three kinds", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@hourly")}, Hook: &HookPatch{}, Task: &TaskOnPatch{Queue: sp("jobs/a")}}, CodeInvalidArgument, "hook"},
		{"no queue", TriggerPatch{Hook: &HookPatch{}}, CodeInvalidArgument, "queue"},
		{"other instance", TriggerPatch{Queue: sp("other/q"), Hook: &HookPatch{}}, CodeInvalidArgument, "queue"},
		{"bare queue", TriggerPatch{Queue: sp("q"), Hook: &HookPatch{}}, CodeInvalidArgument, "queue"},
		{"params not object", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{}, Params: raw(`[1]`)}, CodeInvalidArgument, "params"},
		{"payload bad", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{}, Payload: raw(`{`)}, CodeInvalidArgument, "payload"},
		{"bad header", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{Headers: &[]string{"X Bad"}}}, CodeInvalidArgument, "hook.headers[0]"},
		{"header not a token", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{Headers: &[]string{"X-Event", "X(bad)"}}}, CodeInvalidArgument, "hook.headers[1]"},
		{"header not ASCII", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{Headers: &[]string{"X-Ä"}}}, CodeInvalidArgument, "hook.headers[0]"},
		{"header named twice", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{Headers: &[]string{"X-Event", "x-event"}}}, CodeInvalidArgument, "hook.headers[1]"},
		{"host header", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{Headers: &[]string{"host"}}}, CodeInvalidArgument, "hook.headers[0]"},
		{"token header ok", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{Headers: &[]string{"X-Hub-Signature-256", "x.custom~1"}}}, "", ""},
		{"params.headers beside copied headers", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{Headers: &[]string{"X-Event"}}, Params: raw(`{"headers":{"X-Static":"1"}}`)}, CodeInvalidArgument, "params.headers"},
		{"params.headers without copied headers", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{}, Params: raw(`{"headers":{"X-Static":"1"}}`)}, "", ""},
		{"id dot", TriggerPatch{ID: ".", Queue: sp("jobs/q"), Hook: &HookPatch{}}, CodeInvalidArgument, "id"},
		{"id dot dot", TriggerPatch{ID: "..", Queue: sp("jobs/q"), Hook: &HookPatch{}}, CodeInvalidArgument, "id"},
		{"id with dots", TriggerPatch{ID: "a.b..c", Queue: sp("jobs/q"), Hook: &HookPatch{}}, "", ""},
		{"bad secret", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{Secret: func() **string { s := sp("nope"); return &s }()}}, CodeInvalidArgument, "hook.secret"},
		{"task ok", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a"), On: &[]string{"failed"}}}, "", ""},
		{"priority ok", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{}, Priority: ip(9)}, "", ""},
		{"priority too high", TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{}, Priority: ip(10)}, CodeInvalidArgument, "priority"},
		{"priority negative", TriggerPatch{Queue: sp("jobs/q"), Schedule: &SchedulePatch{Cron: sp("@hourly")}, Priority: ip(-1)}, CodeInvalidArgument, "priority"},
		{"task no queue", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{}}, CodeInvalidArgument, "task.queue"},
		{"task other instance", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("x/a")}}, CodeInvalidArgument, "task.queue"},
		{"task bad on", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a"), On: &[]string{"done"}}}, CodeInvalidArgument, "task.on[0]"},
		{"task bad second on", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a"), On: &[]string{"failed", "SUCCEEDED"}}}, CodeInvalidArgument, "task.on[1]"},
		{"task on twice", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a"), On: &[]string{"succeeded", "succeeded"}}}, CodeInvalidArgument, "task.on[1]"},
		{"task on twice after the other", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a"), On: &[]string{"failed", "succeeded", "failed"}}}, CodeInvalidArgument, "task.on[2]"},
		{"task on both", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a"), On: &[]string{"failed", "succeeded"}}}, "", ""},
		{"task empty on", TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a"), On: &[]string{}}}, CodeInvalidArgument, "task.on"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tr Trigger
			err := c.p.Apply(&tr, "jobs", true)
			if ErrorCode(err) != c.code {
				t.Fatalf("code %q, want %q (%v)", ErrorCode(err), c.code, err)
			}
			if c.field != "" && err.(*Error).Field != c.field {
				t.Fatalf("field %q, want %q (%v)", err.(*Error).Field, c.field, err)
			}
		})
	}
	// A rule stored with both (before the check) is refused only by a
	// call that sets either side, naming that side: it can still be
	// disabled.
	old := Trigger{ID: "h1", Kind: TriggerHook, Enabled: true, HookHeaders: []string{"X-Event"}, Params: json.RawMessage(`{"headers":{"a":"1"}}`)}
	off := false
	if err := (&TriggerPatch{Enabled: &off}).Apply(&old, "jobs", false); err != nil || old.Enabled {
		t.Fatalf("disabling a rule stored with both: %v", err)
	}
	if err := (&TriggerPatch{Hook: &HookPatch{Headers: &[]string{"X-Other"}}}).Apply(&old, "jobs", false); !IsCode(err, CodeInvalidArgument) || err.(*Error).Field != "hook.headers" {
		t.Fatalf("setting hook.headers on a rule with params.headers: %v", err)
	}
	// A PATCH cannot change the kind: the field of the other kind is named.
	tr := Trigger{ID: "r1", Kind: TriggerHook, Enabled: true}
	if err := (&TriggerPatch{Schedule: &SchedulePatch{Cron: sp("@hourly")}}).Apply(&tr, "jobs", false); !IsCode(err, CodeInvalidArgument) || err.(*Error).Field != "schedule" {
		t.Fatalf("kind change: %v", err)
	}
	// A PATCH may send the rule's own id, not another.
	if err := (&TriggerPatch{ID: "r1", Enabled: &off}).Apply(&tr, "jobs", false); err != nil || tr.Enabled {
		t.Fatalf("a PATCH with the rule's own id: %v", err)
	}
	if err := (&TriggerPatch{ID: "r2"}).Apply(&tr, "jobs", false); !IsCode(err, CodeInvalidArgument) || err.(*Error).Field != "id" {
		t.Fatalf("a PATCH with another id: %v", err)
	}
}

// ticks lists the first n ticks after start, in the zone, as "15:04 MST".
func ticks(t *testing.T, expr, zone string, start time.Time, n int) []string {
	t.Helper()
	s, err := ParseSchedule(expr, zone)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := time.LoadLocation(zone)
	var out []string
	at := start
	for range n {
		at = s.Next(at)
		out = append(out, at.In(loc).Format("01-02 15:04 MST"))
	}
	return out
}

func ip(n int) *int { return &n }

// TestRulePriority: the tasks a rule adds (a schedule's tick, a hook call, a
// chain) carry its priority; a rule without one adds them at 0.
func TestRulePriority(t *testing.T) {
	tr := &Trigger{ID: "r1", Kind: TriggerHook, Priority: 6}
	hook, err := tr.HookInput([]byte(`{}`), func(string) string { return "" }, "", "")
	if err != nil {
		t.Fatal(err)
	}
	chain, err := tr.ChainInput(&Task{ID: "t1"}, Succeeded)
	if err != nil {
		t.Fatal(err)
	}
	for what, in := range map[string]AddInput{"schedule": tr.ScheduleInput(1000), "hook": hook, "chain": chain} {
		if in.Priority == nil || *in.Priority != 6 {
			t.Errorf("%s: priority %v, want 6", what, in.Priority)
		}
	}
	if in := (&Trigger{ID: "r2"}).ScheduleInput(1000); in.Priority != nil {
		t.Errorf("a rule without a priority: %d", *in.Priority)
	}
}

func TestScheduleDST(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	// 2026-03-08: 02:00 EST → 03:00 EDT. 2026-11-01: 02:00 EDT → 01:00 EST.
	spring := time.Date(2026, 3, 7, 12, 0, 0, 0, ny)
	fall := time.Date(2026, 10, 31, 12, 0, 0, 0, ny)
	cases := []struct {
		name, expr string
		start      time.Time
		n          int
		want       string
	}{
		// A wall time in the skipped hour fires once, at the change.
		{"spring daily 02:30", "30 2 * * *", spring, 3, "03-08 03:00 EDT,03-09 02:30 EDT,03-10 02:30 EDT"},
		// Wall times beside the gap are unmoved.
		{"spring daily 01:30", "30 1 * * *", spring, 2, "03-08 01:30 EST,03-09 01:30 EDT"},
		{"spring daily 03:30", "30 3 * * *", spring, 2, "03-08 03:30 EDT,03-09 03:30 EDT"},
		// A wall time in the repeated hour fires once, at its first occurrence.
		{"fall daily 01:30", "30 1 * * *", fall, 3, "11-01 01:30 EDT,11-02 01:30 EST,11-03 01:30 EST"},
		// Hourly runs by elapsed time: every real hour, twice through 01:xx.
		{"fall hourly", "0 * * * *", time.Date(2026, 11, 1, 0, 30, 0, 0, ny), 4, "11-01 01:00 EDT,11-01 01:00 EST,11-01 02:00 EST,11-01 03:00 EST"},
		{"spring hourly", "0 * * * *", time.Date(2026, 3, 8, 0, 30, 0, 0, ny), 3, "03-08 01:00 EST,03-08 03:00 EDT,03-08 04:00 EDT"},
		// @every is elapsed time whatever the zone.
		{"every 90m", "@every 90m", time.Date(2026, 11, 1, 0, 0, 0, 0, ny), 2, "11-01 01:30 EDT,11-01 02:00 EST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(ticks(t, c.expr, "America/New_York", c.start, c.n), ",")
			if got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestScheduleDSTEastOfUTC: a wall time that repeats when clocks go back
// fires at its first occurrence in zones east of UTC too (where Go's
// time.Date picks the second), in both hemispheres, and once only.
func TestScheduleDSTEastOfUTC(t *testing.T) {
	for _, c := range []struct {
		zone, expr string
		start      time.Time
		want       string
	}{
		// 2024-10-27 03:00 CEST → 02:00 CET.
		{"Europe/Paris", "30 2 * * *", time.Date(2024, 10, 26, 12, 0, 0, 0, time.UTC), "10-27 02:30 CEST,10-28 02:30 CET"},
		{"Europe/Paris", "0 2 * * *", time.Date(2024, 10, 26, 12, 0, 0, 0, time.UTC), "10-27 02:00 CEST,10-28 02:00 CET"},
		// 2024-10-27 02:00 BST → 01:00 GMT.
		{"Europe/London", "30 1 * * *", time.Date(2024, 10, 26, 12, 0, 0, 0, time.UTC), "10-27 01:30 BST,10-28 01:30 GMT"},
		// 2024-04-07 03:00 AEDT → 02:00 AEST.
		{"Australia/Sydney", "30 2 * * *", time.Date(2024, 4, 6, 0, 0, 0, 0, time.UTC), "04-07 02:30 AEDT,04-08 02:30 AEST"},
	} {
		if got := strings.Join(ticks(t, c.expr, c.zone, c.start, 2), ","); got != c.want {
			t.Errorf("%s %q: got %s, want %s", c.zone, c.expr, got, c.want)
		}
	}
}

func TestScheduleDueCatchUp(t *testing.T) {
	tr := &Trigger{ID: "r1", Kind: TriggerSchedule, Cron: "@every 1s", TimeZone: "UTC"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	tr.NextTickAt = tr.NextTickAfter(base)
	if tr.NextTickAt != base+1000 {
		t.Fatalf("next %d", tr.NextTickAt-base)
	}
	if _, _, ok := tr.Due(base + 999); ok {
		t.Fatal("due before its tick")
	}
	// Down for a day: one catch-up tick, the latest, then the next second.
	now := base + 86400_000 + 500
	tick, next, ok := tr.Due(now)
	if !ok || tick != base+86400_000 || next != base+86401_000 {
		t.Fatalf("catch-up: tick %d next %d ok %v", tick-base, next-base, ok)
	}
	// A daily schedule missed for three days fires its latest tick once.
	d := &Trigger{ID: "r2", Kind: TriggerSchedule, Cron: "0 9 * * *", TimeZone: "Europe/Paris"}
	d.NextTickAt = d.NextTickAfter(base)
	tick, next, ok = d.Due(base + 3*86400_000 + 12*3600_000)
	paris, _ := time.LoadLocation("Europe/Paris")
	if !ok || time.UnixMilli(tick).In(paris).Format("01-02 15:04") != "01-04 09:00" || time.UnixMilli(next).In(paris).Format("01-02 15:04") != "01-05 09:00" {
		t.Fatalf("daily catch-up: %v %v", time.UnixMilli(tick).In(paris), time.UnixMilli(next).In(paris))
	}
	if got := TickName("r1", base+1000); got != "r1-20260101T000001.000Z" {
		t.Fatalf("tick name %s", got)
	}
	if err := ValidateName(TickName(strings.Repeat("a", 21), base), "name"); err != nil {
		t.Fatal(err)
	}
}

func TestChainInput(t *testing.T) {
	tr := &Trigger{Kind: TriggerTask, Params: json.RawMessage(`{"a":1}`), OnSucceeded: true}
	parent := &Task{ID: "p1", Queue: "a", State: Succeeded, Attempt: 2, Depth: 3, Payload: json.RawMessage(`{"x":1}`), Result: json.RawMessage(`{"ok":true}`)}
	in, err := tr.ChainInput(parent, Succeeded)
	if err != nil || in.Depth != 4 || in.Source != SourceTask || string(in.Params) != `{"a":1}` {
		t.Fatalf("%+v %v", in, err)
	}
	var got map[string]any
	_ = json.Unmarshal(in.Payload, &got)
	if got["task"].(map[string]any)["id"] != "p1" || got["result"].(map[string]any)["ok"] != true || got["payload"].(map[string]any)["x"] != 1.0 {
		t.Fatalf("payload %s", in.Payload)
	}
	// The task's name is null when it has none, as a webhook's body has it.
	if name, ok := got["task"].(map[string]any)["name"]; !ok || name != nil {
		t.Fatalf("an unnamed task's name: %s", in.Payload)
	}
	parent.Name = "n1"
	if in, _ = tr.ChainInput(parent, Succeeded); !strings.Contains(string(in.Payload), `"name":"n1"`) {
		t.Fatalf("a named task's name: %s", in.Payload)
	}
	parent.State, parent.LastError = Failed, "HTTP 500"
	in, _ = tr.ChainInput(parent, Failed)
	if !strings.Contains(string(in.Payload), `"lastError":"HTTP 500"`) || strings.Contains(string(in.Payload), `"result"`) {
		t.Fatalf("failed payload %s", in.Payload)
	}
	parent.Depth = MaxDepth
	in, _ = tr.ChainInput(parent, Succeeded)
	if _, err := NewTask(&Queue{Mode: ModePull}, in, 0, URLRules{}); !IsCode(err, CodeDepthExceeded) {
		t.Fatalf("depth 9: %v", err)
	}
	if !tr.Fires(Succeeded) || tr.Fires(Failed) || tr.Fires(Cancelled) {
		t.Fatal("fires")
	}
}

func TestHookInput(t *testing.T) {
	tr := &Trigger{Kind: TriggerHook, Params: json.RawMessage(`{"a":1}`), HookHeaders: []string{"X-Github-Event"}}
	h := map[string]string{"X-Github-Event": "push"}
	tr.ID = "r1"
	in, err := tr.HookInput([]byte(`{"b":2}`), func(k string) string { return h[k] }, "key-1", "msg_1")
	if err != nil || in.Name != "r1-key-1" || string(in.Payload) != `{"b":2}` || string(in.Params) != `{"a":1,"headers":{"X-Github-Event":"push"}}` {
		t.Fatalf("%+v %v", in, err)
	}
	// A body of white space only is an empty body: null, or the template.
	if in, err := tr.HookInput([]byte("\n"), func(string) string { return "" }, "", ""); err != nil || in.Payload != nil {
		t.Fatalf("a newline body: %s %v", in.Payload, err)
	}
	tmpl := &Trigger{Kind: TriggerHook, Payload: json.RawMessage(`{"t":1}`)}
	if in, err := tmpl.HookInput([]byte(" \r\n"), func(string) string { return "" }, "", ""); err != nil || string(in.Payload) != `{"t":1}` {
		t.Fatalf("a blank body with a template: %s %v", in.Payload, err)
	}
	if _, err := tr.HookInput([]byte(`{`), func(string) string { return "" }, "", ""); !IsCode(err, CodeInvalidArgument) {
		t.Fatalf("bad json: %v", err)
	}
	if _, err := tr.HookInput([]byte(`1`), func(string) string { return "" }, "a b", ""); !IsCode(err, CodeInvalidArgument) {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := tr.HookInput([]byte(`1`), func(string) string { return "" }, strings.Repeat("k", MaxHookKeyLen+1), ""); !IsCode(err, CodeInvalidArgument) {
		t.Fatalf("long key: %v", err)
	}
	// Without a key the signed webhook-id names the task, within the rule;
	// one that is no task name is named by its digest, the same each time.
	noHeader := func(string) string { return "" }
	for msgID, want := range map[string]string{"msg_1": "r1-msg_1", "": ""} {
		if in, err := tr.HookInput(nil, noHeader, "", msgID); err != nil || in.Name != want {
			t.Fatalf("webhook-id %q: name %q %v, want %q", msgID, in.Name, err, want)
		}
	}
	a, errA := tr.HookInput(nil, noHeader, "", "msg:6")
	b, errB := tr.HookInput(nil, noHeader, "", "msg:6")
	c, errC := tr.HookInput(nil, noHeader, "", "msg:7")
	if errA != nil || errB != nil || errC != nil || a.Name != b.Name || a.Name == c.Name || ValidateName(a.Name, "name") != nil || !strings.HasPrefix(a.Name, "r1-") {
		t.Fatalf("webhook-ids that are no names: %q %q %q (%v %v %v)", a.Name, b.Name, c.Name, errA, errB, errC)
	}
}

// TestScheduleReadsLikeVixie: five fields read as Vixie cron (and cronie)
// read them: a day field starting with * restricts nothing, so */2 days
// AND a weekday; two restricted day fields OR; 7 is Sunday; an hour field
// starting with * runs by elapsed time.
func TestScheduleReadsLikeVixie(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	check := func(expr string, n int, ok func(time.Time) bool, what string) {
		t.Helper()
		s, err := ParseSchedule(expr, "UTC")
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		at := start
		for range n {
			at = s.Next(at)
			if !ok(at) {
				t.Fatalf("%q: a tick on %s, want only %s", expr, at.Format("Mon 2006-01-02"), what)
			}
		}
	}
	check("0 0 */2 * 1", 6, func(at time.Time) bool { return at.Weekday() == time.Monday && at.Day()%2 == 1 }, "Mondays on odd days")
	check("0 0 1 * */2", 4, func(at time.Time) bool { return at.Day() == 1 && at.Weekday()%2 == 0 }, "the 1st when it is a Sunday, Tuesday, Thursday or Saturday")
	mondays, firsts := 0, 0
	check("0 0 1,15 * 1", 12, func(at time.Time) bool {
		if at.Weekday() == time.Monday {
			mondays++
		}
		if at.Day() == 1 || at.Day() == 15 {
			firsts++
		}
		return at.Weekday() == time.Monday || at.Day() == 1 || at.Day() == 15
	}, "the 1st, the 15th and Mondays")
	if mondays == 0 || firsts == 0 {
		t.Fatalf("two restricted day fields: %d Mondays and %d 1sts/15ths in 12 ticks, want both (OR)", mondays, firsts)
	}
	check("0 0 * * 7", 3, func(at time.Time) bool { return at.Weekday() == time.Sunday }, "Sundays")
	weekend := func(at time.Time) bool { return at.Weekday() >= time.Friday || at.Weekday() == time.Sunday }
	check("0 0 * * 5-7", 6, weekend, "Friday to Sunday")
	days := map[time.Weekday]bool{}
	check("0 0 * * 0-7", 7, func(at time.Time) bool { days[at.Weekday()] = true; return true }, "every day")
	if len(days) != 7 {
		t.Fatalf("0-7: 7 ticks on %d weekdays, want every day", len(days))
	}
	if _, err := ParseSchedule("0 0 32 * 5-7", "UTC"); err == nil || !strings.Contains(err.Error(), `"0 0 32 * 5-7"`) {
		t.Fatalf("a refusal quotes the expression as written: %v", err)
	}
	if _, err := ParseSchedule("0 0 * * 8", "UTC"); !IsCode(err, CodeInvalidArgument) {
		t.Fatalf("day-of-week 8: %v", err)
	}
	for expr, elapsed := range map[string]bool{"0 */2 * * *": true, "0 * * * *": true, "*/30 2 * * *": true, "* 9 * * *": true,
		"0 1-23/2 * * *": false, "0 9 * * *": false, "@hourly": true, "@daily": false} {
		s, err := ParseSchedule(expr, "America/New_York")
		if err != nil || (s.elapsed != nil) != elapsed {
			t.Errorf("%q: runs by elapsed time %v, want %v (%v)", expr, s != nil && s.elapsed != nil, elapsed, err)
		}
	}
}

// TestChainTemplateBound: a task rule's template is refused past the room
// its tasks' payload leaves for it; one at the bound still adds a task for
// a finished task whose every field is at its longest.
func TestChainTemplateBound(t *testing.T) {
	template := func(n int) *json.RawMessage {
		r := json.RawMessage(`"` + strings.Repeat("t", n-2) + `"`)
		return &r
	}
	var tr Trigger
	err := (&TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a")}, Payload: template(maxChainTemplate + 1)}).Apply(&tr, "jobs", true)
	if !IsCode(err, CodePayloadTooLarge) || err.(*Error).Field != "payload" {
		t.Fatalf("a template past the bound: %v", err)
	}
	if err := (&TriggerPatch{Queue: sp("jobs/q"), Task: &TaskOnPatch{Queue: sp("jobs/a")}, Payload: template(maxChainTemplate)}).Apply(&tr, "jobs", true); err != nil {
		t.Fatalf("a template at the bound: %v", err)
	}
	// A hook's or a schedule's payload is the task's payload whole: 64 KiB.
	var hook Trigger
	if err := (&TriggerPatch{Queue: sp("jobs/q"), Hook: &HookPatch{}, Payload: template(maxChainTemplate + 1)}).Apply(&hook, "jobs", true); err != nil {
		t.Fatalf("a hook's payload past the chain bound: %v", err)
	}
	parent := &Task{ID: strings.Repeat("i", MaxIDLen), Queue: strings.Repeat("q", 100), Name: strings.Repeat("n", MaxNameLen),
		Attempt: 1000, MaxAttempts: 1000, Depth: 7, Source: SourceSchedule, CreatedAt: 1 << 50, FinishedAt: 1 << 50,
		Payload: json.RawMessage(`"` + strings.Repeat("p", MaxPayloadBytes-2) + `"`), LastError: strings.Repeat("\x01", 500)}
	for _, s := range []State{Succeeded, Failed} {
		parent.Result = json.RawMessage(`"` + strings.Repeat("r", MaxPayloadBytes-2) + `"`)
		in, err := tr.ChainInput(parent, s)
		if err != nil || len(in.Payload) > MaxPayloadBytes {
			t.Fatalf("%s: a chained payload of %d bytes, %v", s, len(in.Payload), err)
		}
	}
}

// TestOtherKind: a field in the block of another kind than the rule's is
// refused naming the block; the rule's own block and fields outside the
// blocks are not.
func TestOtherKind(t *testing.T) {
	hook := &Trigger{Kind: TriggerHook}
	for field, want := range map[string]string{
		"task":              "task",
		"task.on":           "task",
		"task.on[1]":        "task",
		"schedule.timeZone": "schedule",
		"schedule[0]":       "schedule",
		"hook":              "",
		"hook.headers[0]":   "",
		"enabled":           "",
		"tasks":             "",
		"body":              "",
		"":                  "",
	} {
		err := hook.OtherKind(field)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v, want nil", field, err)
		case want != "" && (!IsCode(err, CodeInvalidArgument) || err.(*Error).Field != want || !strings.HasSuffix(err.Error(), "this rule is a hook rule")):
			t.Errorf("%q: %v, want a refusal naming %s", field, err, want)
		}
	}
}
