package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestCLITriggers: errand triggers creates each kind of rule, lists, shows,
// changes and deletes them against a real node; a hook rule's URL, as the
// CLI prints it, adds a task; refusals name the flag, and a missing kind,
// two kinds or a delete without --yes are usage errors.
func TestCLITriggers(t *testing.T) {
	c := devCLI(t)
	c.ok("queues", "create", "reports", "--mode", "pull")
	// No rule yet: the table is not printed, stderr says why (as list says
	// of an empty queue).
	if r := c.run("", "triggers", "list"); r.code != 0 || r.out != "" || r.errout != "no trigger rules in instance jobs\n" {
		t.Fatalf("triggers list of none: exit %d, stdout %q, stderr %q", r.code, r.out, r.errout)
	}

	var sched, hook, chain errandapi.TriggerResponse
	c.json(&sched, "triggers", "create", "--queue", "reports", "--cron", "@every 1m", "--time-zone", "Europe/Paris", "--payload", `{"r":1}`)
	if tr := sched.Trigger; tr == nil || tr.Kind != errandapi.KindSchedule || tr.Queue != "jobs/reports" || string(tr.Payload) != `{"r":1}` ||
		tr.Schedule.TimeZone != "Europe/Paris" || !tr.Enabled {
		t.Fatalf("schedule rule %+v", sched.Trigger)
	}
	c.json(&hook, "triggers", "create", "--queue", "jobs/reports", "--hook", "--header", "X-Event", "--priority", "5")
	if tr := hook.Trigger; tr == nil || tr.Hook == nil || tr.Hook.Path == "" || strings.Join(tr.Hook.Headers, ",") != "X-Event" || tr.Priority != 5 {
		t.Fatalf("hook rule %+v", hook.Trigger)
	}
	c.json(&chain, "triggers", "create", "--queue", "reports", "--on-queue", "default", "--on", "succeeded,failed", "--id", "after-default")
	if tr := chain.Trigger; tr == nil || tr.ID != "after-default" || tr.Task == nil || tr.Task.Queue != "jobs/default" || strings.Join(tr.Task.On, ",") != "succeeded,failed" {
		t.Fatalf("chain rule %+v", chain.Trigger)
	}

	var list errandapi.TriggerList
	c.json(&list, "triggers", "list")
	if len(list.Triggers) != 3 {
		t.Fatalf("%d rules listed", len(list.Triggers))
	}
	hookURL := c.url + hook.Trigger.Hook.Path
	if out := c.ok("triggers", "list"); !strings.Contains(out, "POST "+hookURL) || !strings.Contains(out, "@every 1m Europe/Paris") {
		t.Fatalf("triggers list:\n%s", out)
	}
	// The URL the CLI prints adds a task.
	resp, err := http.Post(hookURL, "application/json", strings.NewReader(`{"from":"hook"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST to the printed hook URL: %d", resp.StatusCode)
	}
	var fromHook errandapi.TaskPage
	c.json(&fromHook, "list", "-q", "reports")
	if len(fromHook.Tasks) != 1 || fromHook.Tasks[0].State != "scheduled" || fromHook.Tasks[0].Priority != 5 {
		t.Fatalf("the hook's task: %+v; want one, scheduled, priority 5 (the rule's)", fromHook.Tasks)
	}

	id := sched.Trigger.ID
	if out := c.ok("triggers", "get", id); !strings.Contains(out, `payload template  {"r":1}`) || !strings.Contains(out, "schedule") {
		t.Fatalf("triggers get:\n%s", out)
	}
	var upd errandapi.TriggerResponse
	c.json(&upd, "triggers", "update", id, "--enabled=false", "--cron", "@every 10m")
	if tr := upd.Trigger; tr.Enabled || tr.Schedule.Cron != "@every 10m" || tr.Schedule.NextTickAt != nil {
		t.Fatalf("updated %+v", tr)
	}
	upd = errandapi.TriggerResponse{}
	c.json(&upd, "triggers", "update", id, "--payload", "none")
	if p := string(upd.Trigger.Payload); p != "" && p != "null" {
		t.Fatalf("payload after --payload none: %s", p)
	}

	// A hook's own signature scheme: set with the secret, shown by get,
	// cleared with none.
	hid := hook.Trigger.ID
	upd = errandapi.TriggerResponse{}
	c.json(&upd, "triggers", "update", hid, "--secret", "acme-shared-secret-123", "--signature", "header=x-acme-signature,hash=sha512,prefix=v1=,id-header=X-Acme-Delivery")
	if s := upd.Trigger.Hook.Signature; s == nil || *s != (errandapi.HookSignature{Header: "X-Acme-Signature", Hash: "sha512", Encoding: "hex", Prefix: "v1=", IDHeader: "X-Acme-Delivery"}) {
		t.Fatalf("signature after --signature: %+v", upd.Trigger.Hook)
	}
	if out := c.ok("triggers", "get", hid); !strings.Contains(out, `X-Acme-Signature: hex HMAC-SHA512 of the body after "v1="; X-Acme-Delivery names the task`) {
		t.Fatalf("triggers get of a signed hook:\n%s", out)
	}
	// A scheme that signs the call's time.
	upd = errandapi.TriggerResponse{}
	c.json(&upd, "triggers", "update", hid, "--signature", "header=X-Acme-Signature,prefix=v0=,timestamp-header=X-Acme-Timestamp,signed=v0:{timestamp}:{body}")
	if s := upd.Trigger.Hook.Signature; s == nil || s.TimestampHeader != "X-Acme-Timestamp" || s.Signed != "v0:{timestamp}:{body}" {
		t.Fatalf("signature after --signature with a time: %+v", upd.Trigger.Hook)
	}
	if out := c.ok("triggers", "get", hid); !strings.Contains(out, `X-Acme-Signature: hex HMAC-SHA256 of "v0:{timestamp}:{body}" after "v0="; the time in X-Acme-Timestamp`) {
		t.Fatalf("triggers get of a hook signed with its time:\n%s", out)
	}
	upd = errandapi.TriggerResponse{}
	c.json(&upd, "triggers", "update", hid, "--signature", "none", "--secret", "none")
	if upd.Trigger.Hook.Signature != nil || upd.Trigger.Hook.HasSecret {
		t.Fatalf("after --signature none: %+v", upd.Trigger.Hook)
	}
	c.usage("--signature: unknown key", "triggers", "update", hid, "--signature", "header=X-A,algo=sha1")
	c.usage("--signature: \"sha1\" is not key=value", "triggers", "update", hid, "--signature", "header=X-A,sha1")

	// Refusals.
	c.usage("give the rule's kind", "triggers", "create", "--queue", "reports")
	c.usage("a rule has one kind", "triggers", "create", "--queue", "reports", "--cron", "@hourly", "--hook")
	c.usage("--payload is not JSON", "triggers", "create", "--queue", "reports", "--hook", "--payload", "{")
	c.usage("nothing to change", "triggers", "update", id)
	c.usage("--yes", "triggers", "delete", id)
	for _, cs := range []struct {
		flag string
		args []string
	}{
		{"--cron", []string{"triggers", "create", "--queue", "reports", "--cron", "bad cron"}},
		{"--time-zone", []string{"triggers", "create", "--queue", "reports", "--cron", "@hourly", "--time-zone", "Mars/Olympus"}},
		{"--secret", []string{"triggers", "update", id, "--secret", "whsec_x"}},
		{"--on", []string{"triggers", "create", "--queue", "reports", "--on-queue", "default", "--on", "done"}},
		{"--header", []string{"triggers", "create", "--queue", "reports", "--hook", "--header", "X-Event", "--header", "Authorization"}},
		{"--priority", []string{"triggers", "update", id, "--priority", "12"}},
		{"--signature", []string{"triggers", "create", "--queue", "reports", "--hook", "--secret", "acme-shared-secret-123", "--signature", "header=X-A,hash=md5"}},
		{"--signature", []string{"triggers", "create", "--queue", "reports", "--hook", "--signature", "header=X-A"}},
	} {
		r := c.run("", cs.args...)
		if r.code != exitRefused || !strings.Contains(r.errout, "INVALID_ARGUMENT: "+cs.flag+":") {
			t.Fatalf("errand %s: exit %d, stderr %q; want INVALID_ARGUMENT naming %s", strings.Join(cs.args, " "), r.code, r.errout, cs.flag)
		}
	}
	c.refused(errandapi.CodeNotFound, "triggers", "create", "--queue", "nope", "--cron", "@hourly")
	if out := c.ok("triggers", "delete", id, "--yes"); !strings.Contains(out, "deleted rule "+id) {
		t.Fatalf("delete: %q", out)
	}
	c.refused(errandapi.CodeNotFound, "triggers", "get", id)
}
