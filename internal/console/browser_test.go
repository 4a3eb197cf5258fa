package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// chromiumNames are the browsers the end-to-end test looks for on PATH
// (ERRAND_CHROMIUM names one anywhere).
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// browserSkipped holds why the browser test was skipped, for TestMain to
// say after the run.
var browserSkipped atomic.Pointer[string]

// findChromium returns the browser to drive, or skips the test, saying
// so, when none is installed; with ERRAND_CONSOLE_REQUIRED=1 (CI) a
// missing browser fails the test instead.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ERRAND_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := "no Chromium found (looked for " + strings.Join(chromiumNames, ", ") + " on PATH and ERRAND_CHROMIUM): " +
		"the console's browser tests need one (Debian: apt-get install chromium)"
	if os.Getenv("ERRAND_CONSOLE_REQUIRED") == "1" {
		t.Fatal(msg + "; ERRAND_CONSOLE_REQUIRED=1 makes that a failure")
	}
	msg += "; skipped (set ERRAND_CONSOLE_REQUIRED=1 to fail instead)"
	browserSkipped.Store(&msg)
	t.Skip(msg)
	return ""
}

// startBrowser starts one headless Chromium for the whole test; each tab
// gets its own browser context (its own cookies).
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(findChromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(func(string, ...any) {}))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(b); err != nil {
		t.Fatalf("starting %s: %v", findChromium(t), err)
	}
	return b
}

// tab opens a tab in a fresh browser context of b: a user of its own.
func tab(t *testing.T, b context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
	})
	return ctx
}

// run runs the steps in order.
func run(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// text reads the text of the first node that matches sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(sel)))
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(s)
}

// eval evaluates JavaScript in the page, awaiting a promise.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitJS waits until the expression is true in the page, checked by the
// browser at each animation frame.
func waitJS(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v", js, err)
	}
}

// shot writes a screenshot of the page to docs/console/name.png when
// ERRAND_CONSOLE_SCREENSHOTS=1 (how the README's pictures are made).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("ERRAND_CONSOLE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err = os.WriteFile(filepath.Join("..", "..", "docs", "console", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserLiveRefused: when the instance's rateLimit refuses the live
// counts' read, the queues page says its counts are not live (rather
// than freezing silently), and follows them again once a read passes,
// after the refusal's Retry-After on the fake clock.
func TestBrowserLiveRefused(t *testing.T) {
	b := startBrowser(t)
	e := newEnv(t, envOptions{})
	e.fixture()
	base := e.srv.URL + "/console/"
	admin := tab(t, b)
	run(t, admin, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SendKeys(chromedp.CSS("#key"), e.full), chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#instances")))
	ctx := context.Background()
	if _, err := e.api.CreateInstance(ctx, "rl"); err != nil {
		t.Fatal(err)
	}
	pull := errandapi.ModePull
	if _, err := e.api.CreateQueue(ctx, "rl", "q1", errandapi.QueueRequest{Mode: &pull}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.UpdateSettings(ctx, "rl", errandapi.SettingsRequest{RateLimit: errandapi.Value(1.0)}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(5 * time.Second) // a full bucket: one call, the page's own
	note := `document.querySelector("#live-note")`
	run(t, admin, chromedp.Navigate(base+"i/rl/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="q1"]`)))
	waitJS(t, admin, `!`+note+`.hidden && `+note+`.textContent.startsWith("Counts not live: ")`)
	if eval[bool](t, admin, `document.querySelector("#queues").hasAttribute("data-updated")`) {
		t.Fatal("counts arrived though the stream's read was refused")
	}
	shot(t, admin, "queues-not-live")
	// The Retry-After: once the stream waits for it, the read is tried
	// again, and passes.
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.clock.WaitForSleeperAt(wctx, e.clock.Now().Add(time.Second)); err != nil {
		t.Fatal("the stream never waited out the Retry-After")
	}
	e.clock.Advance(time.Second)
	waitJS(t, admin, `document.querySelector("#queues").hasAttribute("data-updated") && `+note+`.hidden`)
}

// TestBrowser drives Debian's Chromium, headless, against a real errand
// serve node on loopback: log in with a key, create a queue, watch its
// counts change live, add a task whose payload is a <script>, see a
// running task's cancel refused, retry a failed one, replay dead letters,
// rotate the webhook key, be refused a forged form, see what a read-only
// key may not do hidden and refused, and log out.
func TestBrowser(t *testing.T) {
	b := startBrowser(t)
	e := newEnv(t, envOptions{realClock: true})
	e.fixture()
	base := e.srv.URL + "/console/"
	admin := tab(t, b)

	t.Run("log in", func(t *testing.T) {
		run(t, admin, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#key")),
			chromedp.SendKeys(chromedp.CSS("#key"), e.full), chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#instances")))
		if cookie := eval[string](t, admin, `document.cookie`); cookie != "" {
			t.Fatalf("the session cookie is readable by scripts: %q", cookie)
		}
		shot(t, admin, "instances")
	})

	t.Run("create a queue", func(t *testing.T) {
		run(t, admin, chromedp.Navigate(base+"i/jobs/"), chromedp.WaitVisible(chromedp.CSS("#queue-name")),
			chromedp.SendKeys(chromedp.CSS("#queue-name"), "web"), chromedp.SetValue(chromedp.CSS("#queue-mode"), "pull"),
			chromedp.Click(chromedp.CSS("#create-queue button[type=submit]")), chromedp.WaitVisible(chromedp.CSS("#tasks")))
		if h := text(t, admin, "h1"); h != "Queue web" {
			t.Fatalf("h1 %q", h)
		}
	})

	t.Run("counts update live", func(t *testing.T) {
		cell := `document.querySelector('tr[data-queue="web"] td[data-state="scheduled"]')`
		run(t, admin, chromedp.Navigate(base+"i/jobs/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="web"]`)))
		waitJS(t, admin, `document.querySelector("#queues").hasAttribute("data-updated")`) // the stream is open
		if n := text(t, admin, `tr[data-queue="web"] td[data-state="scheduled"]`); n != "0" {
			t.Fatalf("scheduled %q before adding", n)
		}
		e.add("web", errandapi.NewTask{Payload: json.RawMessage(`{"n":1}`)})
		e.add("web", errandapi.NewTask{Payload: json.RawMessage(`{"n":2}`)})
		waitJS(t, admin, cell+`.textContent === "2"`)
		shot(t, admin, "queues")
	})

	t.Run("the live table follows queue changes", func(t *testing.T) {
		ctx := context.Background()
		row := func(q string) string { return `document.querySelector('tr[data-queue="` + q + `"]')` }
		run(t, admin, chromedp.Navigate(base+"i/jobs/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="web"]`)))
		waitJS(t, admin, `document.querySelector("#queues").hasAttribute("data-updated")`)
		pull := errandapi.ModePull
		if _, err := e.api.CreateQueue(ctx, "jobs", "later", errandapi.QueueRequest{Mode: &pull}); err != nil {
			t.Fatal(err)
		}
		e.add("later", errandapi.NewTask{Payload: json.RawMessage(`{}`), Delay: new(3600.0)})
		waitJS(t, admin, row("later")+` !== null && `+row("later")+`.querySelector('td[data-state="scheduled"]').textContent === "1"`)
		if href := eval[string](t, admin, row("later")+`.querySelector("a").getAttribute("href")`); href != "/console/i/jobs/q/later/" {
			t.Fatalf("the new row links to %q", href)
		}
		paused, resumed := true, false
		if _, err := e.api.UpdateQueue(ctx, "jobs", "web", errandapi.QueueRequest{Paused: &paused}); err != nil {
			t.Fatal(err)
		}
		waitJS(t, admin, `!`+row("web")+`.querySelector("[data-paused]").hidden`)
		if _, err := e.api.UpdateQueue(ctx, "jobs", "web", errandapi.QueueRequest{Paused: &resumed}); err != nil {
			t.Fatal(err)
		}
		waitJS(t, admin, row("web")+`.querySelector("[data-paused]").hidden`)
		if _, err := e.api.DeleteQueue(ctx, "jobs", "later"); err != nil {
			t.Fatal(err)
		}
		waitJS(t, admin, row("later")+` === null`)
	})

	t.Run("add a task with a script payload", func(t *testing.T) {
		run(t, admin, chromedp.Navigate(base+"i/jobs/q/web/"), chromedp.Click(chromedp.CSS("#add-card summary")), chromedp.WaitVisible(chromedp.CSS("#add-payload")),
			chromedp.SendKeys(chromedp.CSS("#add-name"), "xss"),
			chromedp.SendKeys(chromedp.CSS("#add-payload"), `{"html": "<script>window.pwned = 1</script>", "n": 3}`),
			chromedp.Click(chromedp.CSS("#add")), chromedp.WaitVisible(chromedp.CSS("#notice")))
		if p := text(t, admin, "#payload"); !strings.Contains(p, `"html": "<script>window.pwned = 1</script>"`) {
			t.Fatalf("payload shown as %q", p)
		}
		pwned := eval[string](t, admin, `typeof window.pwned + "/" + document.querySelectorAll("main script").length`)
		if pwned != "undefined/0" {
			t.Fatalf("the payload ran or became markup: %s", pwned)
		}
		// The CSP refuses inline script even when the page's own DOM gets one.
		pwned = eval[string](t, admin, `(() => { const s = document.createElement("script"); s.textContent = "window.inline = 1"; document.body.appendChild(s); return typeof window.inline })()`)
		if pwned != "undefined" {
			t.Fatal("an inline script ran: the CSP does not hold")
		}
		shot(t, admin, "task")
	})

	t.Run("cancel a running task is refused", func(t *testing.T) {
		id := e.leased()
		run(t, admin, chromedp.Navigate(base+"i/jobs/t/"+id), chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#refusal")))
		if c := text(t, admin, "#refusal .code"); c != "RUNNING_NOT_CANCELLABLE" {
			t.Fatalf("refusal %q", c)
		}
		if s := text(t, admin, "#task-state"); s != "leased" {
			t.Fatalf("state %q after a refused cancel", s)
		}
	})

	t.Run("retry a failed task", func(t *testing.T) {
		e.flakyCalls.Store(0)
		id := e.failed()
		run(t, admin, chromedp.Navigate(base+"i/jobs/t/"+id), chromedp.WaitVisible(chromedp.CSS("#attempts")))
		if s := text(t, admin, "#task-state"); s != "failed" {
			t.Fatalf("state %q", s)
		}
		run(t, admin, chromedp.Click(chromedp.CSS("#retry")), chromedp.WaitVisible(chromedp.CSS("#notice")))
		e.waitState(id, errandapi.StateSucceeded)
	})

	t.Run("replay dead letters", func(t *testing.T) {
		e.flakyCalls.Store(0)
		a := e.failed()
		e.flakyCalls.Store(0)
		bb := e.failed()
		run(t, admin, chromedp.Navigate(base+"i/jobs/q/flaky/dead"), chromedp.WaitVisible(chromedp.CSS("#dead")))
		shot(t, admin, "dead-letters")
		run(t, admin, chromedp.Click(chromedp.CSS("#select-all")), chromedp.Click(chromedp.CSS("#replay-selected")),
			chromedp.WaitVisible(chromedp.CSS(`#job-status[data-status="SUCCEEDED"]`)))
		e.waitState(a, errandapi.StateSucceeded)
		e.waitState(bb, errandapi.StateSucceeded)
		run(t, admin, chromedp.Navigate(base+"i/jobs/q/flaky/"), chromedp.WaitVisible(chromedp.CSS("#chart")))
		shot(t, admin, "queue")
	})

	t.Run("rotate the webhook key", func(t *testing.T) {
		run(t, admin, chromedp.Navigate(base+"i/jobs/settings"), chromedp.Click(chromedp.CSS("#rotate-key")), chromedp.WaitVisible(chromedp.CSS("#confirm")),
			chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#webhook-key")))
		now, err := e.api.WebhookKey(context.Background(), "jobs")
		if err != nil {
			t.Fatal(err)
		}
		if k := text(t, admin, "#webhook-key"); k != now {
			t.Fatalf("shown %q, the instance's is %q", k, now)
		}
		shot(t, admin, "settings")
		// A reload shows the key again and rotates nothing.
		run(t, admin, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#webhook-key")))
		if after, _ := e.api.WebhookKey(context.Background(), "jobs"); after != now {
			t.Fatalf("a reload rotated the key again")
		}
		if k := text(t, admin, "#webhook-key"); k != now {
			t.Fatalf("after a reload shown %q, the instance's is %q", k, now)
		}
	})

	t.Run("disable a rule", func(t *testing.T) {
		q := "jobs/web"
		tr, err := e.api.CreateTrigger(context.Background(), "jobs", errandapi.TriggerRequest{Queue: &q, Schedule: &errandapi.TriggerScheduleSpec{Cron: new("@hourly")}})
		if err != nil {
			t.Fatal(err)
		}
		run(t, admin, chromedp.Navigate(base+"i/jobs/"), chromedp.Click(chromedp.CSS("#nav-rules")), chromedp.WaitVisible(chromedp.CSS("#rule-"+tr.ID)),
			chromedp.Click(chromedp.CSS("#switch-"+tr.ID)), chromedp.WaitVisible(chromedp.CSS("#notice")))
		if n := text(t, admin, "#notice"); !strings.Contains(n, "Rule "+tr.ID+" is disabled") {
			t.Fatalf("notice %q", n)
		}
		if got, err := e.api.GetTrigger(context.Background(), "jobs", tr.ID); err != nil || got.Enabled {
			t.Fatalf("the rule after Disable: %+v %v", got, err)
		}
		shot(t, admin, "rules")
	})

	t.Run("make a rule and delete it", func(t *testing.T) {
		run(t, admin, chromedp.Navigate(base+"i/jobs/rules"), chromedp.WaitVisible(chromedp.CSS("#create-rule")),
			chromedp.SetValue(chromedp.CSS("#rule-kind"), "schedule"), chromedp.SendKeys(chromedp.CSS("#rule-queue"), "web"),
			chromedp.SendKeys(chromedp.CSS("#rule-cron"), "@every 90s"), chromedp.SendKeys(chromedp.CSS("#rule-payload"), `{"from":"the console"}`),
			chromedp.Click(chromedp.CSS("#create-rule-submit")), chromedp.WaitVisible(chromedp.CSS("#notice")))
		n := text(t, admin, "#notice")
		id, ok := strings.CutSuffix(strings.TrimPrefix(n, "Rule "), " is created.")
		got, err := e.api.GetTrigger(context.Background(), "jobs", id)
		if !ok || err != nil || got.Schedule == nil || got.Schedule.Cron != "@every 90s" || string(got.Payload) != `{"from":"the console"}` {
			t.Fatalf("notice %q; the rule %+v %v", n, got, err)
		}
		run(t, admin, chromedp.Click(chromedp.CSS("#delete-"+id)), chromedp.WaitVisible(chromedp.CSS("#confirm")),
			chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#notice")))
		if n := text(t, admin, "#notice"); n != "Rule "+id+" is deleted." {
			t.Fatalf("notice after the delete %q", n)
		}
		if _, err := e.api.GetTrigger(context.Background(), "jobs", id); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("the deleted rule: %v", err)
		}
	})

	t.Run("a forged form is refused", func(t *testing.T) {
		id := e.add("web", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
		run(t, admin, chromedp.Navigate(base+"i/jobs/t/"+id), chromedp.WaitVisible(chromedp.CSS("#cancel")))
		eval[bool](t, admin, `(() => { document.querySelector('form[action$="/cancel"] input[name=csrf]').value = "forged"; return true })()`)
		run(t, admin, chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#refusal")))
		if m := text(t, admin, "#refusal"); !strings.Contains(m, "CSRF token") {
			t.Fatalf("refusal %q", m)
		}
		if tk, _ := e.api.GetTask(context.Background(), "jobs", id); tk.State != errandapi.StateScheduled {
			t.Fatalf("the forged cancel changed the task: %s", tk.State)
		}
	})

	t.Run("a read-only key sees no writes and is refused them", func(t *testing.T) {
		ro := tab(t, b)
		id := e.add("web", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
		run(t, ro, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#key")), chromedp.SendKeys(chromedp.CSS("#key"), e.key(e.org, "read:jobs")),
			chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#instances")), chromedp.Navigate(base+"i/jobs/t/"+id), chromedp.WaitVisible(chromedp.CSS("#payload")))
		seen := eval[string](t, ro, `["#run", "#cancel", "#retry"].filter(s => document.querySelector(s)).join()`)
		if seen != "" {
			t.Fatalf("a read-only key sees %s", seen)
		}
		status := eval[float64](t, ro, `fetch(location.pathname + "/cancel", {method: "POST", body: new URLSearchParams({csrf: document.querySelector("input[name=csrf]").value})}).then(r => r.status)`)
		if status != 403 {
			t.Fatalf("a forced cancel answered %v", status)
		}
		run(t, ro, chromedp.Navigate(base+"i/jobs/q/web/"), chromedp.WaitVisible(chromedp.CSS("#tasks")))
		seen = eval[string](t, ro, `["#add-task", "#pause", "#purge", "#delete"].filter(s => document.querySelector(s)).join()`)
		if seen != "" {
			t.Fatalf("a read-only key sees %s", seen)
		}
		run(t, ro, chromedp.Navigate(base+"i/jobs/settings"), chromedp.WaitVisible(chromedp.CSS("#settings")))
		seen = eval[string](t, ro, `["#settings-form", "#reveal-key", "#rotate-key"].filter(s => document.querySelector(s)).join()`)
		if seen != "" {
			t.Fatalf("a read-only key sees %s", seen)
		}
	})

	t.Run("phone", func(t *testing.T) {
		phone := tab(t, b)
		run(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
			chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#key")), chromedp.SendKeys(chromedp.CSS("#key"), e.full), chromedp.Click(chromedp.CSS("#login")),
			chromedp.WaitVisible(chromedp.CSS("#instances")), chromedp.Navigate(base+"i/jobs/q/web/"), chromedp.WaitVisible(chromedp.CSS("#tasks")))
		if eval[bool](t, phone, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
			t.Fatal("the queue page is wider than a phone's screen")
		}
		shot(t, phone, "phone")
		// The longest names allowed wrap rather than widen the page.
		long := "q" + strings.Repeat("x", 99)
		pull := errandapi.ModePull
		if _, err := e.api.CreateQueue(context.Background(), "jobs", long, errandapi.QueueRequest{Mode: &pull}); err != nil {
			t.Fatal(err)
		}
		id := e.add(long, errandapi.NewTask{Name: strings.Repeat("n", 500), Payload: json.RawMessage(`{}`)})
		for _, page := range []string{"i/jobs/q/" + long + "/", "i/jobs/t/" + id} {
			run(t, phone, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS("h1")))
			if w := eval[int](t, phone, `document.documentElement.scrollWidth`); w > 391 {
				t.Fatalf("%s with the longest names is %d px wide on a 390 px phone", page, w)
			}
		}
		// An attempt's error keeps a readable width: its table scrolls in
		// its box instead of wrapping the error a letter or two a line.
		leased, err := e.api.Lease(context.Background(), "jobs", long, errandapi.LeaseRequest{})
		if err != nil || len(leased) != 1 {
			t.Fatalf("lease: %v %v", leased, err)
		}
		if _, err := e.api.Release(context.Background(), "jobs", leased[0].ID, errandapi.ReleaseRequest{LeaseID: leased[0].LeaseID,
			Error: "the receiver answered 500 Internal Server Error: upstream connect error or disconnect/reset before headers"}); err != nil {
			t.Fatal(err)
		}
		run(t, phone, chromedp.Navigate(base+"i/jobs/t/"+leased[0].ID), chromedp.WaitVisible(chromedp.CSS("#attempts td.err")))
		if w := eval[float64](t, phone, `document.querySelector("#attempts td.err").getBoundingClientRect().width`); w < 200 {
			t.Fatalf("an attempt's error is %.0f px wide on a 390 px phone", w)
		}
		if w := eval[int](t, phone, `document.documentElement.scrollWidth`); w > 391 {
			t.Fatalf("the task page with an attempt's error is %d px wide on a 390 px phone", w)
		}
	})

	t.Run("log out", func(t *testing.T) {
		run(t, admin, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#logout")), chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#key")),
			chromedp.Navigate(base+"i/jobs/"), chromedp.WaitVisible(chromedp.CSS("#key")))
	})
}
