package errandapi

// Instance is a named namespace of queues.
type Instance struct {
	Name      string `json:"name"`
	CreatedAt int64  `json:"createdAt"`
}

// InstanceRequest is the body of an instance create.
type InstanceRequest struct {
	Name string `json:"name"`
}

// InstanceResponse is the answer of an instance create.
type InstanceResponse struct {
	Instance Instance `json:"instance"`
}

// InstanceList is the answer of listing instances (those the key has a
// grant on).
type InstanceList struct {
	Instances []Instance `json:"instances"`
}

// InstanceDeleteResponse is the answer of an instance delete.
type InstanceDeleteResponse struct {
	Pending bool `json:"pending"`
}

// Settings are an instance's settings; RateLimit (API calls per second) is
// nil when unlimited.
type Settings struct {
	RetentionDays int      `json:"retentionDays"`
	RateLimit     *float64 `json:"rateLimit"`
	MaxInFlight   int      `json:"maxInFlight"`
}

// SettingsRequest is the body of a settings PATCH: only the settings sent
// change; a Null RateLimit removes the limit.
type SettingsRequest struct {
	RetentionDays *int              `json:"retentionDays,omitempty"`
	RateLimit     Nullable[float64] `json:"rateLimit,omitzero"`
	MaxInFlight   *int              `json:"maxInFlight,omitempty"`
}

// SettingsResponse is the answer of a settings GET or PATCH.
type SettingsResponse struct {
	Settings Settings `json:"settings"`
}

// WebhookKeyResponse is the answer of revealing or rotating the instance's
// webhook signing key (whsec_…).
type WebhookKeyResponse struct {
	WebhookKey string `json:"webhookKey"`
}
