package postgres_test

import (
	"errors"
	"net"
	"net/url"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// withHost returns the database URL with its host and port replaced.
func withHost(t *testing.T, raw, hostport string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Skipf("ERRAND_TEST_POSTGRES is not a postgres:// URL with a host: %v", err)
	}
	u.Host = hostport
	return u.String()
}

// TestOpenUnreachable: a server that cannot be reached is UNAVAILABLE.
func TestOpenUnreachable(t *testing.T) {
	u := withHost(t, postgres.DatabaseURL(t), closedPort(t))
	_, err := postgres.Open(t.Context(), postgres.WithParam(u, "connect_timeout", "5"), postgres.Options{Logger: postgres.Quiet})
	if !task.IsCode(err, task.CodeUnavailable) {
		t.Fatalf("Open on a closed port: %v (code %s), want UNAVAILABLE", err, task.ErrorCode(err))
	}
}

// TestUnavailableAndBack: while the database cannot be reached every call
// answers UNAVAILABLE (never a panic, never a hang), and once it is back the
// pool reconnects on its own.
func TestUnavailableAndBack(t *testing.T) {
	raw := postgres.DatabaseURL(t)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Skipf("ERRAND_TEST_POSTGRES is not a postgres:// URL with a host")
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := testkit.NewProxy(t, target)
	schema := postgres.FreshSchema(t)
	s, err := postgres.Open(t.Context(), postgres.WithParam(withHost(t, raw, p.Addr), "connect_timeout", "5"),
		postgres.Options{Logger: postgres.Quiet, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}

	p.Cut()
	calls := map[string]func() error{
		"InstanceGet": func() error { _, err := s.InstanceGet(ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); return err },
		"InstanceUpdate": func() error {
			_, err := s.InstanceUpdate(ctx, store.InstanceRef{Org: "acme", Name: "jobs"}, func(*task.Instance) error { return nil })
			return err
		},
		"TaskAdd": func() error {
			q := task.NewQueue("i1", task.DefaultQueueName, task.ModePull)
			_, err := s.TaskAdd(ctx, []*task.Task{pullTask(t, q, "x")})
			return err
		},
		"TaskNextDue": func() error { _, _, err := s.TaskNextDue(ctx); return err },
		"KeyCount":    func() error { _, err := s.KeyCount(ctx); return err },
	}
	for name, call := range calls {
		for range 3 {
			err := call()
			if !task.IsCode(err, task.CodeUnavailable) {
				t.Fatalf("%s while the database is gone: %v (code %s), want UNAVAILABLE", name, err, task.ErrorCode(err))
			}
		}
	}

	// Start returns once the proxy listens again, so the database is back
	// now: no waiting is needed, on a timer or an event. What remains are
	// pooled connections that died with the proxy: each may fail one call
	// (UNAVAILABLE) and is dropped by the pool when it does, so the store
	// answers within one call more than the pool holds (16, Open's
	// default), never after a time.
	p.Start(p.Addr)
	const poolMax = 16
	for try := 0; ; try++ {
		got, err := s.InstanceGet(ctx, store.InstanceRef{Org: "acme", Name: "jobs"})
		if err == nil {
			if got.ID != "i1" {
				t.Fatalf("InstanceGet after reconnect = %+v", got)
			}
			break
		}
		var te *task.Error
		if !errors.As(err, &te) || te.Code != task.CodeUnavailable {
			t.Fatalf("InstanceGet while reconnecting: %v", err)
		}
		if try == poolMax {
			t.Fatalf("the store did not reconnect after %d calls: %v", try+1, err)
		}
	}
	if _, _, err := s.TaskNextDue(ctx); err != nil {
		t.Fatalf("TaskNextDue after reconnect: %v", err)
	}
}
