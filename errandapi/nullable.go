package errandapi

import "encoding/json"

// Nullable is a setting a PATCH can leave, set or clear: absent (the zero
// value, omitted from the JSON), null (Null), or a value (Value).
type Nullable[T any] struct {
	// Set is true when the field is present; Null when its value is null.
	Set   bool
	Null  bool
	Value T
}

// Value is a Nullable holding v.
func Value[T any](v T) Nullable[T] { return Nullable[T]{Set: true, Value: v} }

// Null is a Nullable that clears the setting.
func Null[T any]() Nullable[T] { return Nullable[T]{Set: true, Null: true} }

// IsZero reports an absent field, so `omitzero` leaves it out.
func (n Nullable[T]) IsZero() bool { return !n.Set }

// MarshalJSON writes null or the value.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.Set || n.Null {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// UnmarshalJSON records presence and nullness.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

// Ptr is the double pointer of a patch: nil when absent, a pointer to nil
// when null, a pointer to the value otherwise.
func (n Nullable[T]) Ptr() **T {
	if !n.Set {
		return nil
	}
	var p *T
	if !n.Null {
		v := n.Value
		p = &v
	}
	return &p
}
