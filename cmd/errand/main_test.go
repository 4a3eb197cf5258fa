package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/errandhq/errand/internal/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" { // a worker process of workers_test.go
		os.Exit(runTestWorker())
	}
	dir, err := os.MkdirTemp("", "errand-bin")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := testkit.Run(m, "cmd/errand")
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	binDir   string
	buildOne sync.Once
	builtBin string
	buildErr error
)

// buildErrand compiles the binary once per test run.
func buildErrand(t *testing.T) string {
	t.Helper()
	buildOne.Do(func() {
		builtBin = filepath.Join(binDir, "errand")
		// As the README builds it: static, with no C toolchain involved.
		cmd := exec.Command("go", "build", "-o", builtBin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = os.Stderr
		buildErr = cmd.Run()
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return builtBin
}

// startErrand runs `errand dev` on a free port and returns its base URL.
func startErrand(t *testing.T, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, url, _ := startMode(t, bin, "dev", args...)
	return cmd, url
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestAnsweredAddSurvivesKill9: a 201 means the tasks are on disk, even if
// the process is killed the instant after.
func TestAnsweredAddSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	data := t.TempDir()
	cmd, url := startErrand(t, bin, "--data", data)
	if st, _ := post(t, url+"/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`); st != 201 {
		t.Fatalf("create queue: %d", st)
	}
	var ids []string
	for i := range 20 {
		st, m := post(t, url+"/v1/tasks/jobs/queues/q/tasks", `[{"payload":{"i":1}},{"payload":{"i":2}},{"payload":{"i":3}}]`)
		if st != 201 {
			t.Fatalf("add %d: %d", i, st)
		}
		for _, r := range m["tasks"].([]any) {
			ids = append(ids, r.(map[string]any)["id"].(string))
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, url = startErrand(t, bin, "--data", data)
	for _, id := range ids {
		resp, err := http.Get(url + "/v1/tasks/jobs/tasks/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("task %s answered 201 but is gone after kill -9: %d", id, resp.StatusCode)
		}
	}
}

// TestGracefulShutdown: SIGTERM ends the process cleanly with exit code 0.
func TestGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	cmd, url := startErrand(t, bin, "--data", t.TempDir())
	resp, err := http.Get(url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	// /metrics counts what was added, and names no instance.
	if st, _ := post(t, url+"/v1/tasks/secretinstance/queues", `{"name":"q","mode":"pull"}`); st != 201 {
		t.Fatalf("queue: %d", st)
	}
	if st, _ := post(t, url+"/v1/tasks/secretinstance/queues/q/tasks", `[{},{}]`); st != 201 {
		t.Fatalf("add: %d", st)
	}
	resp, err = http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// It says which build runs, and the two tasks due in the pull queue.
	if !strings.Contains(string(body), "errand_tasks_added_total 2") || strings.Contains(string(body), "secretinstance") ||
		!strings.Contains(string(body), `errand_build_info{commit="`) || !strings.Contains(string(body), `errand_tasks_due{mode="pull"} 2`) {
		t.Fatalf("/metrics:\n%s", body)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}
