package worker

import (
	"fmt"

	"github.com/errandhq/errand/errandapi"
)

// maxFunctions is how many functions one hello may name.
const maxFunctions = 1000

// checkName applies the rule the node applies to instance, group and
// function names (1–100 letters, digits, '-' and '_', starting with a
// letter or digit), so that a bad name is refused here with the whole
// message, not by the node after a connection (whose close reason must
// fit 123 bytes). It is a copy of internal/task's ValidateQueueName,
// which errandapi does not export; names_test.go holds the two equal.
// The error is INVALID_ARGUMENT and names the field and the name as
// given, unescaped.
func checkName(field, name string) error {
	why := ""
	switch {
	case name == "" || len(name) > 100:
		why = "must be 1–100 characters"
	default:
		for i := 0; i < len(name); i++ {
			c := name[i]
			letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
			if !letter && (i == 0 || c != '-' && c != '_') {
				why = "may hold only letters, digits, '-' and '_', and must start with a letter or digit"
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("worker: %w", errandapi.NewError(errandapi.CodeInvalidArgument, fmt.Sprintf("%s %q: %s", field, name, why)))
}
