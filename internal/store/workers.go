package store

// AllInstances is the instance of an embedded program's in-process
// functions in the workers table: they serve every instance.
const AllInstances = "*"

// WorkersPutParams replaces one node's rows of the workers table.
type WorkersPutParams struct {
	Node string
	// Served maps an instance id (or AllInstances) to the functions the
	// node's workers serve there and their slots; empty removes the node.
	Served map[string]map[string]int
	Now    int64
	// Forget removes every node's rows not seen since Forget (dead nodes).
	Forget int64
}

// WorkersServedParams reads the functions some node serves for an instance.
type WorkersServedParams struct {
	InstanceID string
	// SeenAfter leaves out the rows of nodes not seen since (gone quiet).
	SeenAfter int64
}
