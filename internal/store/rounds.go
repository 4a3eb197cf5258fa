package store

// FinishRounds splits the indexes of ps into rounds in which no task
// appears twice, keeping each task's writes in their order. Both backends
// write a TaskFinish batch as one multi-row statement per round, and one
// statement can update a row only once: a task that appears twice is
// written again in a later round, fenced by what the first write left.
func FinishRounds(ps []*FinishParams) [][]int {
	var rounds [][]int
	seen := make(map[[2]string]int, len(ps)) // task → rounds it is in
	for i, p := range ps {
		key := [2]string{p.Task.InstanceID, p.Task.ID}
		r := seen[key]
		seen[key] = r + 1
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], i)
	}
	return rounds
}
