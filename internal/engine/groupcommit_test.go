package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
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
	g := &groupCommit[int, string]{max: 3, writers: 1,
		write: func(_ context.Context, ps []int) ([]string, error) {
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
	g.queued = func(n int) { queued <- n }

	type answer struct {
		rs   []string
		errs []error
	}
	call := func(ctx context.Context, ps ...int) chan answer {
		c := make(chan answer, 1)
		go func() {
			rs, errs := g.do(ctx, ps)
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
