package task

import (
	"testing"
	"time"
)

// contract is the transition table docs/engine.md lists, written out again here so that
// the code's table is checked against the contract, not against itself.
var contract = map[[2]State]bool{
	{Pending, Running}: true, {Pending, Cancelled}: true,
	{Running, Succeeded}: true, {Running, Failed}: true, {Running, Cancelled}: true, {Running, RetryWait}: true,
	{RetryWait, Pending}: true, {RetryWait, Running}: true, {RetryWait, Cancelled}: true,
	{Failed, Pending}: true,
}

// FuzzLifecycle drives one task through a random sequence of operations
// (claim, the ends of an attempt, cancel, retry, run now) and checks each
// against a model of the lifecycle: every change of state is in the
// contract's table, a refused operation changes nothing, the attempt
// counter rises by one on a claim and falls back on a deferral or release,
// never passes maxAttempts, and a counted failure fails the task exactly
// when the budget is spent.
func FuzzLifecycle(f *testing.F) {
	f.Add([]byte{0, 2, 0, 2, 0, 1}, uint8(3))
	f.Add([]byte{0, 3, 0, 4, 0, 5, 7, 0, 1}, uint8(1))
	f.Add([]byte{6, 7, 8, 0, 6, 1, 7}, uint8(2))
	f.Fuzz(func(t *testing.T, ops []byte, maxAttempts uint8) {
		q := NewQueue("i", "q", ModePush)
		q.Target = &Target{Webhook: "https://example.com/"}
		q.MaxAttempts = int(maxAttempts%5) + 1
		tk, err := NewTask(q, AddInput{}, 0, URLRules{})
		if err != nil {
			t.Fatal(err)
		}
		tk.ID = "t"
		now := int64(1)
		for i, op := range ops {
			now += 1000
			before := *tk
			var err error
			status := ""
			switch op % 9 {
			case 0:
				if !tk.Due(now) {
					tk.RunAt = now // the model's clock jumps to it
				}
				err = tk.Claim(q, now, "L", 1000)
			case 1:
				status = AttemptSucceeded
			case 2:
				status = AttemptFailed
			case 3:
				status = AttemptDeferred
			case 4:
				status = AttemptReleased
			case 5:
				status = AttemptExpired
			case 6:
				err = tk.Cancel(now)
			case 7:
				err = tk.Retry(now)
			case 8:
				err = tk.RunNow(now)
			}
			if status != "" {
				_, err = tk.Finish(q, now, Outcome{Status: status, Delay: time.Second})
			}
			if err != nil {
				if tk.State != before.State || tk.Attempt != before.Attempt {
					t.Fatalf("op %d (%d) refused with %v but moved %s/%d → %s/%d", i, op%9, err, before.State, before.Attempt, tk.State, tk.Attempt)
				}
				continue
			}
			if tk.State != before.State && !contract[[2]State{before.State, tk.State}] {
				t.Fatalf("op %d (%d): %s → %s is not in the contract", i, op%9, before.State, tk.State)
			}
			switch {
			case op%9 == 0 && tk.Attempt != before.Attempt+1,
				(status == AttemptDeferred || status == AttemptReleased) && tk.Attempt != before.Attempt-1,
				op%9 == 7 && tk.Attempt != 0:
				t.Fatalf("op %d (%d): attempt %d → %d", i, op%9, before.Attempt, tk.Attempt)
			}
			if tk.Attempt > q.MaxAttempts {
				t.Fatalf("attempt %d past maxAttempts %d", tk.Attempt, q.MaxAttempts)
			}
			if status == AttemptFailed || status == AttemptExpired {
				if (tk.State == Failed) != (tk.Attempt >= q.MaxAttempts) {
					t.Fatalf("a counted failure at attempt %d of %d left the task %s", tk.Attempt, q.MaxAttempts, tk.State)
				}
			}
		}
	})
}
