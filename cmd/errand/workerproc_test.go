package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

// The worker processes of these tests are this test binary run again with
// ERRAND_TEST_WORKER set (see TestMain): a real SDK worker in its own
// process, reporting each call to the test over HTTP.

// workerEnv is the environment variable that makes the test binary a worker.
const workerEnv = "ERRAND_TEST_WORKER"

// workPayload is what the test worker's function app/work reads.
type workPayload struct {
	SleepMs int    `json:"sleepMs,omitempty"`
	HangOn1 bool   `json:"hangOn1,omitempty"` // hang on attempt 1 until killed
	Chain   string `json:"chain,omitempty"`   // add another task to this queue
}

// report is what the test worker posts to the test, at start and end.
type report struct {
	Event   string `json:"event"` // start, end, add
	Worker  string `json:"worker"`
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	Depth   int    `json:"depth"`
	Source  string `json:"source"`
	Code    string `json:"code,omitempty"` // add: the refusal's code, "" when added
}

// runTestWorker is the worker process: it serves app/work for instance
// jobs at $ERRAND_URL until SIGTERM.
func runTestWorker() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	name, url, key, reportURL := os.Getenv(workerEnv), os.Getenv("ERRAND_URL"), os.Getenv("ERRAND_API_KEY"), os.Getenv("REPORT_URL")
	slots, _ := strconv.Atoi(os.Getenv("SLOTS"))
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	post := func(r report) {
		r.Worker = name
		b, _ := json.Marshal(r)
		resp, err := http.Post(reportURL, "application/json", bytes.NewReader(b))
		if err == nil {
			resp.Body.Close()
		}
	}
	c, err := client.New(url, client.Options{APIKey: key})
	if err != nil {
		log.Error("client", "err", err)
		return 2
	}
	w, err := worker.New(url, "jobs", "app", worker.Options{APIKey: key, Slots: slots, Logger: log, MaxBackoff: time.Second})
	if err != nil {
		log.Error("worker", "err", err)
		return 2
	}
	w.Handle("work", func(ctx context.Context, t *worker.Task) (json.RawMessage, error) {
		var p workPayload
		_ = json.Unmarshal(t.Payload, &p)
		post(report{Event: "start", Task: t.ID, Attempt: t.Attempt, Depth: t.Depth, Source: t.Source})
		if p.HangOn1 && t.Attempt == 1 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		time.Sleep(time.Duration(p.SleepMs) * time.Millisecond)
		if p.Chain != "" {
			_, err := c.AddTask(ctx, "jobs", p.Chain, errandapi.NewTask{Payload: t.Payload})
			code := ""
			if e, ok := err.(*client.Error); ok {
				code = string(e.Code)
			} else if err != nil {
				return nil, err
			}
			post(report{Event: "add", Task: t.ID, Depth: t.Depth, Code: code})
		}
		post(report{Event: "end", Task: t.ID, Attempt: t.Attempt})
		return json.RawMessage(fmt.Sprintf(`{"by":%q}`, name)), nil
	})
	if err := w.Run(ctx); err != nil {
		log.Error("worker stopped", "err", err)
		return 1
	}
	return 0
}

// reports collects what the worker processes report.
type reports struct {
	mu       sync.Mutex
	running  map[string]string // task → worker while its handler runs
	overlap  string
	inFlight int
	peak     int
	onStart  func(report) // called at each start event, outside mu
	onAdd    func(report) // called at each add event, outside mu
}

func (rs *reports) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rep report
	if err := json.NewDecoder(r.Body).Decode(&rep); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	rs.mu.Lock()
	switch rep.Event {
	case "start":
		if other, ok := rs.running[rep.Task]; ok {
			rs.overlap = fmt.Sprintf("task %s started on %s while running on %s", rep.Task, rep.Worker, other)
		}
		rs.running[rep.Task] = rep.Worker
		rs.inFlight++
		rs.peak = max(rs.peak, rs.inFlight)
	case "end":
		delete(rs.running, rep.Task)
		rs.inFlight--
	}
	onStart, onAdd := rs.onStart, rs.onAdd
	rs.mu.Unlock()
	if rep.Event == "start" && onStart != nil {
		onStart(rep)
	}
	if rep.Event == "add" && onAdd != nil {
		onAdd(rep)
	}
}

// forget drops a killed worker's running tasks (their handlers died).
func (rs *reports) forget(workerName string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for task, w := range rs.running {
		if w == workerName {
			delete(rs.running, task)
			rs.inFlight--
		}
	}
}

// startWorker runs a worker process named name against url.
func startWorker(t *testing.T, name, url, key, reportURL string, slots int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+name, "ERRAND_URL="+url, "ERRAND_API_KEY="+key,
		"REPORT_URL="+reportURL, "SLOTS="+strconv.Itoa(slots))
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %s log:\n%s", name, logs)
		}
	})
	return cmd
}
