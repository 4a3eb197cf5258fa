package engine

import (
	"crypto/subtle"
	"encoding/json"

	"github.com/errandhq/errand/internal/task"
)

// maxGraphValidationToken bounds the validation token a hook echoes to
// Microsoft Graph: a sentence of a hundred characters or so.
const maxGraphValidationToken = 1024

// graphClientStates are the clientState values of a Microsoft Graph
// change notification's body — {"value": [{"subscriptionId", "clientState",
// "changeType" or "lifecycleEvent", …}, …]}, one per notification of the
// batch — or nil for any other body. Graph signs nothing: each
// notification carries the clientState given when the subscription was
// made, which a hook with a secret checks against it (verifyGraph).
func graphClientStates(body []byte) []string {
	var v struct {
		Value []struct {
			SubscriptionID string  `json:"subscriptionId"`
			ClientState    *string `json:"clientState"`
		} `json:"value"`
	}
	if json.Unmarshal(body, &v) != nil || len(v.Value) == 0 {
		return nil
	}
	states := make([]string, len(v.Value))
	for i, n := range v.Value {
		if n.SubscriptionID == "" || n.ClientState == nil {
			return nil
		}
		states[i] = *n.ClientState
	}
	return states
}

// verifyGraph checks that every notification of a Microsoft Graph batch
// carries the hook's secret as its clientState.
func verifyGraph(secret string, states []string) error {
	for _, s := range states {
		if subtle.ConstantTimeCompare([]byte(s), []byte(secret)) != 1 {
			return task.Errorf(task.CodeUnauthenticated, "a Microsoft Graph notification's clientState is not this hook's secret (give the subscription the secret as its clientState)")
		}
	}
	return nil
}

// graphValidation is Microsoft Graph's check of a notification URL, a POST
// with ?validationToken=…, answered 200 with the token as plain text
// within 10 seconds; nothing is added. The token is a sentence (spaces
// allowed) of printable ASCII.
func graphValidation(token string) (*HookCheckAnswer, error) {
	token, err := checkToken(token, "validationToken", maxGraphValidationToken, true)
	if err != nil {
		return nil, err
	}
	return &HookCheckAnswer{Text: token}, nil
}
