package engine

import (
	"testing"
	"time"
)

// gatherDispatcher is a dispatcher with only what gather uses.
func gatherDispatcher(results chan finished) *Dispatcher {
	d := newDispatcher(dispatcherDeps{writers: 4})
	d.results = results
	return d
}

// runGather runs d.gather on a batch of one in its own goroutine and
// returns the channel its batch arrives on.
func runGather(d *Dispatcher) chan []finished {
	out := make(chan []finished, 1)
	go func() { out <- d.gather(append(make([]finished, 0, 2*claimBatch), finished{})) }()
	return out
}

func TestGatherAloneWritesAtOnce(t *testing.T) {
	results := make(chan finished, 8)
	results <- finished{}
	results <- finished{}
	d := gatherDispatcher(results)
	if got := len(<-runGather(d)); got != 3 {
		t.Fatalf("batch of %d, want the 3 waiting: nothing else is being written", got)
	}
}

func TestGatherWaitsForTheWriteInProgress(t *testing.T) {
	results := make(chan finished) // a send completes only when gather takes it
	d := gatherDispatcher(results)
	d.writing.Store(1)
	out := runGather(d)
	// While another batch is written, a small batch keeps taking what
	// arrives: these sends complete only if gather is still gathering.
	for i := range 3 {
		select {
		case results <- finished{}:
		case b := <-out:
			t.Fatalf("gather returned a batch of %d while another was written (send %d)", len(b), i)
		case <-time.After(signalWait):
			t.Fatal("gather took nothing")
		}
	}
	d.writing.Store(0)
	d.wrote <- struct{}{}
	select {
	case b := <-out:
		if len(b) != 4 {
			t.Fatalf("batch of %d, want 4", len(b))
		}
	case <-time.After(signalWait):
		t.Fatal("gather did not return when the other write ended")
	}
}

func TestGatherFullBatchGoesBesideAnother(t *testing.T) {
	results := make(chan finished, 2*claimBatch)
	for range 2*claimBatch - 1 {
		results <- finished{}
	}
	d := gatherDispatcher(results)
	d.writing.Store(1)
	if got := len(<-runGather(d)); got != 2*claimBatch {
		t.Fatalf("batch of %d, want a full one (%d) written beside the other", got, 2*claimBatch)
	}
}

func TestGatherEndsWhenResultsClose(t *testing.T) {
	results := make(chan finished)
	d := gatherDispatcher(results)
	d.writing.Store(1)
	out := runGather(d)
	close(results)
	if got := len(<-out); got != 1 {
		t.Fatalf("batch of %d, want the 1 gathered", got)
	}
}
