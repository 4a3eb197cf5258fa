package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestGroupCommit: callers that arrive while the one writer is busy are
// written together in the next batch, at most max items a batch, each
// caller answered with its own items' results in order; a batch's error
// answers each of its items; a caller that stops waiting is answered
// ctx's error while its batch is still written.
func TestGroupCommit(t *testing.T) {
	gate, entered := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	g := &Group[int, string]{Max: 3, Writers: 1,
		Write: func(_ context.Context, ps []int) ([]string, error) {
			mu.Lock()
			batches = append(batches, slices.Clone(ps))
			first := len(batches) == 1
			mu.Unlock()
			if first {
				close(entered)
				<-gate // the writer is busy while the others arrive
			}
			if slices.Contains(ps, 13) {
				return nil, errors.New("thirteen")
			}
			rs := make([]string, len(ps))
			for i, p := range ps {
				rs[i] = fmt.Sprint("r", p)
			}
			return rs, nil
		}}
	queued := make(chan int, 16)
	g.Queued = func(n int) { queued <- n }

	type answer struct {
		rs   []string
		errs []error
	}
	call := func(ctx context.Context, ps ...int) chan answer {
		c := make(chan answer, 1)
		go func() {
			rs, errs := g.Do(ctx, ps)
			c <- answer{rs, errs}
		}()
		return c
	}
	first := call(context.Background(), 1)
	<-queued
	<-entered // the first caller writes [1] and holds the writer
	// The rest arrive one after another while it is busy; the queue grows
	// to 1, 3, 4, 5 and 6 items.
	second := call(context.Background(), 2)
	if n := <-queued; n != 1 {
		t.Fatalf("queued %d", n)
	}
	third := call(context.Background(), 3, 4)
	<-queued
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := call(ctx, 5)
	<-queued
	thirteen := call(context.Background(), 13)
	<-queued
	last := call(context.Background(), 6)
	if n := <-queued; n != 6 {
		t.Fatalf("queued %d, want 6", n)
	}
	cancel()
	if a := <-gaveUp; !errors.Is(a.errs[0], context.Canceled) {
		t.Fatalf("a caller that stopped waiting: %+v", a)
	}
	close(gate)

	for _, c := range []struct {
		got  chan answer
		want []string
	}{{first, []string{"r1"}}, {second, []string{"r2"}}, {third, []string{"r3", "r4"}}} {
		a := <-c.got
		if !slices.Equal(a.rs, c.want) || slices.ContainsFunc(a.errs, func(err error) bool { return err != nil }) {
			t.Fatalf("answer %+v, want %v", a, c.want)
		}
	}
	for _, c := range []chan answer{thirteen, last} { // 6 shares 13's batch
		if a := <-c; a.errs[0] == nil || a.errs[0].Error() != "thirteen" {
			t.Fatalf("an item of a batch that failed: %+v", a)
		}
	}
	// [1] alone; then what waited, three at a time, in arrival order (the
	// caller that gave up is written all the same).
	want := [][]int{{1}, {2, 3, 4}, {5, 13, 6}}
	if !slices.EqualFunc(batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
}

// TestGroupCommitAlone: with alone set, a batch the store refuses is
// written again an item at a time, so that the item it cannot take fails
// alone; a batch that fails UNAVAILABLE (the store itself) is not.
func TestGroupCommitAlone(t *testing.T) {
	var batches [][]int
	g := &Group[int, string]{Max: 10, Writers: 1, Alone: true,
		Write: func(_ context.Context, ps []int) ([]string, error) {
			batches = append(batches, slices.Clone(ps))
			switch {
			case slices.Contains(ps, 13):
				return nil, errors.New("thirteen")
			case slices.Contains(ps, 503):
				return nil, task.Errorf(task.CodeUnavailable, "the store is down")
			}
			rs := make([]string, len(ps))
			for i, p := range ps {
				rs[i] = fmt.Sprint("r", p)
			}
			return rs, nil
		}}
	// One caller's three items make one batch: the write is one call.
	rs, errs := g.Do(context.Background(), []int{5, 13, 6})
	if !slices.Equal(rs, []string{"r5", "", "r6"}) || errs[0] != nil || errs[1] == nil || errs[2] != nil {
		t.Fatalf("results %q, errors %v", rs, errs)
	}
	_, errs = g.Do(context.Background(), []int{7, 503})
	if !task.IsCode(errs[0], task.CodeUnavailable) || !task.IsCode(errs[1], task.CodeUnavailable) {
		t.Fatalf("an unavailable store's batch: %v", errs)
	}
	want := [][]int{{5, 13, 6}, {5}, {13}, {6}, {7, 503}}
	if !slices.EqualFunc(batches, want, slices.Equal) {
		t.Fatalf("writes %v, want %v", batches, want)
	}
}
