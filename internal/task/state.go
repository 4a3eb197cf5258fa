package task

// State is a task's lifecycle state, in the operations API's spelling. These
// are also the values stored by every backend.
type State string

// The six states.
const (
	Pending   State = "PENDING"
	Running   State = "RUNNING"
	RetryWait State = "RETRY_WAIT"
	Succeeded State = "SUCCEEDED"
	Failed    State = "FAILED"
	Cancelled State = "CANCELLED"
)

// States lists every state in lifecycle order.
var States = []State{Pending, Running, RetryWait, Succeeded, Failed, Cancelled}

// transitions is THE transition table. Anything not listed is refused.
var transitions = map[State][]State{
	Pending:   {Running, Cancelled},
	Running:   {Succeeded, Failed, Cancelled, RetryWait},
	RetryWait: {Pending, Running, Cancelled},
	Failed:    {Pending},
	Succeeded: nil,
	Cancelled: nil,
}

// CanTransition reports whether from→to is in the transition table.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Terminal reports whether s has no automatic way out (SUCCEEDED, FAILED,
// CANCELLED).
func (s State) Terminal() bool { return s == Succeeded || s == Failed || s == Cancelled }

// Valid reports whether s is one of the six states.
func (s State) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// V1 returns the v1 API's name of s; a RUNNING task of a pull queue is
// "leased".
func (s State) V1(pull bool) string {
	switch s {
	case Pending:
		return "scheduled"
	case Running:
		if pull {
			return "leased"
		}
		return "running"
	case RetryWait:
		return "retrying"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case Cancelled:
		return "cancelled"
	}
	return string(s)
}

// V1StateNames are the v1 state names ParseV1State takes, as a refusal
// lists them.
const V1StateNames = "scheduled, running, leased, retrying, succeeded, failed, cancelled"

// ParseV1StateArg is ParseV1State of a caller's argument: a name it does
// not know is an INVALID_ARGUMENT naming field.
func ParseV1StateArg(name, field string) (State, *bool, error) {
	s, pull, ok := ParseV1State(name)
	if !ok {
		return "", nil, FieldErrorf(CodeInvalidArgument, field, "must be one of %s", V1StateNames)
	}
	return s, pull, nil
}

// ParseV1State maps a v1 state name to a State; leased and running both map
// to RUNNING, and pull tells which of them was asked for (nil: either).
func ParseV1State(name string) (s State, pull *bool, ok bool) {
	t, f := true, false
	switch name {
	case "scheduled":
		return Pending, nil, true
	case "running":
		return Running, &f, true
	case "leased":
		return Running, &t, true
	case "retrying":
		return RetryWait, nil, true
	case "succeeded":
		return Succeeded, nil, true
	case "failed":
		return Failed, nil, true
	case "cancelled":
		return Cancelled, nil, true
	}
	return "", nil, false
}
