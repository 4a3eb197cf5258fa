package store

import "context"

// ConsoleSession is a login of the web console, kept on the server so that
// the browser's cookie holds only the session's id, a random secret: the
// store keeps the id's SHA-256 and the session's API key sealed with a key
// derived from the id, so neither the cookie nor the store alone holds a
// usable API key, and a session ends everywhere when its row goes (a
// logout, its expiry).
type ConsoleSession struct {
	IDHash    []byte // SHA-256 of the session's id (the cookie's value), 32 bytes
	Sealed    []byte // the API key, sealed by the console with a key derived from the id
	CreatedAt int64  // epoch ms
	ExpiresAt int64  // epoch ms: the session is gone from then on
}

// ConsoleSessionStore keeps the console's sessions; every node sharing the
// store sees the same ones.
type ConsoleSessionStore interface {
	// ConsoleSessionCreate stores s (a new id: an id hash already stored
	// is refused) and removes the sessions expired at s.CreatedAt.
	ConsoleSessionCreate(ctx context.Context, s *ConsoleSession) error
	// ConsoleSessionGet finds the session whose id hashes to idHash;
	// NOT_FOUND when there is none or it has expired at now (epoch ms).
	ConsoleSessionGet(ctx context.Context, idHash []byte, now int64) (*ConsoleSession, error)
	// ConsoleSessionDelete removes the session whose id hashes to idHash;
	// none is no error.
	ConsoleSessionDelete(ctx context.Context, idHash []byte) error
}
