package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// childEnv names the database a child process of TestKillDurability writes.
const childEnv = "ERRAND_SQLITE_KILL_CHILD"

// TestKillDurability runs a child process that adds tasks one commit at a
// time and reports each answered add on stdout, kills it with SIGKILL in
// the middle of its work, and checks that every add it answered is in the
// file: an answered write survives kill -9 with synchronous=NORMAL.
func TestKillDurability(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		killChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "errand.db")
	s := open(t, path, sqlite.Options{})
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(t.Context(), inst); err != nil {
		t.Fatal(err)
	}
	if err := s.QueueCreate(t.Context(), task.NewQueue("i1", "work", task.ModePull)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDurability$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if id := lines.Text(); len(id) > 0 && id[0] == 'k' {
			acked = append(acked, id)
		}
		if len(acked) == 300 {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("the child answered only %d adds", len(acked))
	}

	s = open(t, path, sqlite.Options{})
	defer s.Close()
	for _, id := range acked {
		if _, err := s.TaskGet(t.Context(), store.TaskRef{InstanceID: "i1", ID: id}); err != nil {
			t.Fatalf("answered task %s lost after kill -9: %v", id, err)
		}
	}
	t.Logf("%d answered adds, all kept", len(acked))
}

// killChild adds tasks until it is killed, printing each id once its
// commit has returned.
func killChild(path string) {
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{Logger: quiet})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	q := task.NewQueue("i1", "work", task.ModePull)
	for i := range 1_000_000 {
		tk, err := task.NewTask(q, task.AddInput{Payload: payload}, 1, task.URLRules{})
		if err != nil {
			os.Exit(1)
		}
		tk.ID = fmt.Sprintf("k%07d", i)
		res, err := s.TaskAdd(context.Background(), []*task.Task{tk})
		if err != nil || res[0].Err != nil {
			fmt.Println("add:", err)
			os.Exit(1)
		}
		if _, err := fmt.Println(tk.ID); err != nil {
			os.Exit(1)
		}
	}
	os.Exit(0)
}
