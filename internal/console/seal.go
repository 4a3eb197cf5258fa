package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

// sessionIDBytes is the length of a session's id, the cookie's secret.
const sessionIDBytes = 32

// newSessionID is a fresh session id from the system's random source.
func newSessionID() []byte {
	b := make([]byte, sessionIDBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather)
	return b
}

// encodeSessionID and decodeSessionID are the cookie's value of a session
// id (unpadded base64url); decodeSessionID reports false for any other
// value (a cookie of an earlier version, which held the key itself).
func encodeSessionID(id []byte) string { return base64.RawURLEncoding.EncodeToString(id) }

func decodeSessionID(v string) ([]byte, bool) {
	id, err := base64.RawURLEncoding.DecodeString(v)
	return id, err == nil && len(id) == sessionIDBytes
}

// sessionHash is what the store keys a session by: the id's SHA-256, so
// that the store holds no id a cookie could be made of.
func sessionHash(id []byte) []byte {
	h := sha256.Sum256(id)
	return h[:]
}

// sessionAEAD is the AES-256-GCM cipher that seals a session's API key,
// keyed with a key derived from the session's id (HKDF-SHA256): the store
// holds the key only sealed, and only a cookie opens it.
func sessionAEAD(id []byte) (cipher.AEAD, error) {
	k, err := hkdf.Key(sha256.New, id, nil, "errand-console-session-key-v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealKey seals an API key for the session id: a random nonce, then the
// ciphertext, bound to the id's hash.
func sealKey(id []byte, key string) ([]byte, error) {
	aead, err := sessionAEAD(id)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, []byte(key), sessionHash(id)), nil
}

// openKey opens what sealKey sealed for the same id.
func openKey(id, sealed []byte) (string, error) {
	aead, err := sessionAEAD(id)
	if err != nil {
		return "", err
	}
	if len(sealed) < aead.NonceSize() {
		return "", errors.New("console: a sealed session key too short")
	}
	key, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], sessionHash(id))
	return string(key), err
}
