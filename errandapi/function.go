package errandapi

// Function is one function of an instance, as GET
// /v1/tasks/{instance}/functions lists it: a function some connected
// worker (or an embedded program) serves now, or one a queue targets.
type Function struct {
	// Function is the target's name, "group/function".
	Function string `json:"function"`
	// Slots is how many attempts the workers serving it now run at once,
	// summed over every node (an embedded program's in-process function,
	// which has no cap of its own, counts 1); 0 when none does: its tasks
	// wait, no attempt used, until a worker connects.
	Slots int `json:"slots"`
	// Queues are the instance's queues whose target is the function,
	// by name; empty when only tasks name it (or nothing does).
	Queues []string `json:"queues"`
}

// FunctionList is the answer of GET /v1/tasks/{instance}/functions,
// ordered by function.
type FunctionList struct {
	Functions []Function `json:"functions"`
}
