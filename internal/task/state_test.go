package task

import "testing"

func TestTransitionTable(t *testing.T) {
	allowed := map[[2]State]bool{
		{Pending, Running}: true, {Pending, Cancelled}: true,
		{Running, Succeeded}: true, {Running, Failed}: true, {Running, Cancelled}: true, {Running, RetryWait}: true,
		{RetryWait, Pending}: true, {RetryWait, Running}: true, {RetryWait, Cancelled}: true,
		{Failed, Pending}: true,
	}
	for _, from := range States {
		for _, to := range States {
			if got := CanTransition(from, to); got != allowed[[2]State{from, to}] {
				t.Errorf("CanTransition(%s, %s) = %v", from, to, got)
			}
		}
	}
}

func TestV1Names(t *testing.T) {
	for _, s := range States {
		for _, pull := range []bool{false, true} {
			name := s.V1(pull)
			back, p, ok := ParseV1State(name)
			if !ok || back != s {
				t.Fatalf("%s/%v → %q → %s", s, pull, name, back)
			}
			if s == Running && (p == nil || *p != pull) {
				t.Fatalf("running/leased lost the mode: %q", name)
			}
		}
	}
	if _, _, ok := ParseV1State("PENDING"); ok {
		t.Fatal("v1 names are lowercase")
	}
}

func TestMoveToRefuses(t *testing.T) {
	tk := &Task{ID: "x", State: Succeeded}
	if err := tk.moveTo(Pending); !IsCode(err, CodeInternal) || tk.State != Succeeded {
		t.Fatalf("refused transition wrote or passed: %v %s", err, tk.State)
	}
}
