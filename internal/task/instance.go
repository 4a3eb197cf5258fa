package task

// Instance defaults.
const (
	DefaultRetentionDays = 7
	DefaultMaxInFlight   = 50
	MaxRetentionDays     = 3650
	// MinRateLimit keeps Retry-After meaningful: at most 100 s.
	MinRateLimit   = 0.01
	MaxRateLimit   = 1e6
	MaxMaxInFlight = 100000
)

// Instance is a named namespace of queues, owned by an organization.
type Instance struct {
	ID        string
	Org       string
	Name      string
	CreatedAt int64
	Settings  Settings
	// WebhookKey is the whole `whsec_…` signing key.
	WebhookKey string
}

// Settings are an instance's settings.
type Settings struct {
	RetentionDays int
	// RateLimit is API calls per second for the instance; 0 = unlimited.
	RateLimit   float64
	MaxInFlight int
}

// DefaultSettings returns the settings of a new instance.
func DefaultSettings() Settings {
	return Settings{RetentionDays: DefaultRetentionDays, MaxInFlight: DefaultMaxInFlight}
}

// SettingsPatch holds the settings a PATCH sends; nil fields stay.
type SettingsPatch struct {
	RetentionDays *int
	RateLimit     **float64
	MaxInFlight   *int
}

// Apply validates p and applies it to s.
func (p *SettingsPatch) Apply(s *Settings) error {
	if p.RetentionDays != nil {
		if *p.RetentionDays < 1 || *p.RetentionDays > MaxRetentionDays {
			return FieldErrorf(CodeInvalidArgument, "retentionDays", "must be 1–%d", MaxRetentionDays)
		}
		s.RetentionDays = *p.RetentionDays
	}
	if p.RateLimit != nil {
		v := 0.0
		if *p.RateLimit != nil {
			v = **p.RateLimit
			if !(v >= MinRateLimit) || v > MaxRateLimit {
				return FieldErrorf(CodeInvalidArgument, "rateLimit", "must be 0.01–1000000 calls per second, or null for unlimited")
			}
		}
		s.RateLimit = v
	}
	if p.MaxInFlight != nil {
		if *p.MaxInFlight < 1 || *p.MaxInFlight > MaxMaxInFlight {
			return FieldErrorf(CodeInvalidArgument, "maxInFlight", "must be 1–%d", MaxMaxInFlight)
		}
		s.MaxInFlight = *p.MaxInFlight
	}
	return nil
}
