package errandapi

import "encoding/json"

// LeaseRequest is the body of a lease: Count 1–1,000 (default 1),
// LeaseSeconds 1–86,400 (default 60), WaitSeconds 0–30 (long polling).
// DeliveryTokens asks for each leased task's delivery token
// (LeasedTask.DeliveryToken).
type LeaseRequest struct {
	Count          *int `json:"count,omitempty"`
	LeaseSeconds   *int `json:"leaseSeconds,omitempty"`
	WaitSeconds    int  `json:"waitSeconds,omitempty"`
	DeliveryTokens bool `json:"deliveryTokens,omitempty"`
}

// LeasedTask is a task as a lease hands it to its worker: LeaseID fences
// every later call about it. Attempts is the count of attempts, this one
// included.
type LeasedTask struct {
	ID             string          `json:"id"`
	Queue          string          `json:"queue"`
	Name           *string         `json:"name"`
	Payload        json.RawMessage `json:"payload"`
	Params         json.RawMessage `json:"params"`
	Attempts       int             `json:"attempts"`
	LeaseID        string          `json:"leaseId"`
	LeaseExpiresAt int64           `json:"leaseExpiresAt"`
	RunAt          int64           `json:"runAt"`
	CreatedAt      int64           `json:"createdAt"`
	Source         string          `json:"source"`
	Depth          int             `json:"depth"`
	Priority       int             `json:"priority"`
	DeadLetterOf   *string         `json:"deadLetterOf"`
	// DeliveryToken, when the lease asked for it (deliveryTokens), is the
	// token to send as DeliveryHeader on the adds made while working on
	// this task: they get depth = this task's + 1 and source "lease", so a
	// worker that adds to its own queue stops at MaxDepth. It holds until a
	// day past the lease's expiry.
	DeliveryToken string `json:"deliveryToken,omitempty"`
}

// LeaseResponse is the answer of a lease (possibly no tasks).
type LeaseResponse struct {
	Tasks []LeasedTask `json:"tasks"`
}

// AckRequest is the body of an ack: the lease and the task's result.
type AckRequest struct {
	LeaseID string          `json:"leaseId"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// ExtendRequest is the body of an extend: the lease lasts LeaseSeconds
// from now (required).
type ExtendRequest struct {
	LeaseID      string `json:"leaseId"`
	LeaseSeconds *int   `json:"leaseSeconds,omitempty"`
}

// ReleaseRequest is the body of a release: with Error it is a failed
// attempt, retried after DelaySeconds when set, else after the queue's
// backoff; without, the task goes back unharmed after DelaySeconds.
type ReleaseRequest struct {
	LeaseID      string  `json:"leaseId"`
	Error        string  `json:"error,omitempty"`
	DelaySeconds float64 `json:"delaySeconds,omitempty"`
}

// BatchAckRequest is the body of a batch ack (errand's own): 1–1,000 acks
// of one queue's leased tasks.
type BatchAckRequest struct {
	Acks []BatchAck `json:"acks"`
}

// BatchAck is one ack of a batch.
type BatchAck struct {
	ID      string          `json:"id"`
	LeaseID string          `json:"leaseId"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// BatchAckResult is the result of one ack of a batch, in request order.
type BatchAckResult struct {
	OK      bool   `json:"ok"`
	ID      string `json:"id"`
	Code    Code   `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Err is the refusal of this ack as an *Error, or nil when it was stored.
func (r *BatchAckResult) Err() error {
	if r.OK {
		return nil
	}
	return &Error{Code: r.Code, Message: r.Message, Status: StatusOf(r.Code)}
}

// BatchAckResponse is the answer of a batch ack: 200 when at least one ack
// was stored, 409 with Error naming the first refusal when none was.
type BatchAckResponse struct {
	Error   *ErrorDetail     `json:"error,omitempty"`
	Results []BatchAckResult `json:"results"`
}
