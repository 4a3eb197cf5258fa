package engine

import (
	"bufio"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"

	"github.com/errandhq/errand/internal/task"
)

// Archive format 2 is streamed: the clear header, then the plaintext in
// sealed chunks, so neither the backup nor the restore holds more than a
// chunk of it:
//
//	"ERRANDBK" 2 keyID(8) noncePrefix(12)
//	{ length(4, big-endian) ciphertext(length) }…
//
// Chunk n (from 0) is sealed under the nonce noncePrefix XOR n (in its last
// 8 bytes), with the header, n and a final flag as additional data (the
// STREAM construction): chunks cannot be reordered, dropped or cut off
// without failing to open, and an archive whose last chunk is not marked
// final is truncated.
const (
	archiveStreamVersion = 2
	streamHeader         = len(archiveMagic) + 1 + 8 + 12
	streamChunk          = 1 << 20
)

// sealWriter encrypts what is written to it as format 2 chunks.
type sealWriter struct {
	w      io.Writer
	aead   cipher.AEAD
	hdr    []byte
	n      uint64
	buf    []byte
	closed bool
}

// newSealWriter writes the header to w and returns the writer of the
// plaintext; Close seals the final chunk.
func newSealWriter(w io.Writer, key []byte) (*sealWriter, error) {
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, 0, streamHeader)
	hdr = append(hdr, archiveMagic...)
	hdr = append(hdr, archiveStreamVersion)
	hdr = append(hdr, keyID(key)...)
	prefix := make([]byte, aead.NonceSize())
	if _, err := rand.Read(prefix); err != nil {
		return nil, err
	}
	hdr = append(hdr, prefix...)
	if _, err := w.Write(hdr); err != nil {
		return nil, err
	}
	return &sealWriter{w: w, aead: aead, hdr: hdr, buf: make([]byte, 0, streamChunk)}, nil
}

// chunkNonce and chunkAD are chunk n's nonce and additional data.
func chunkNonce(hdr []byte, n uint64) []byte {
	nonce := append([]byte{}, hdr[streamHeader-12:streamHeader]...)
	var ctr [8]byte
	binary.BigEndian.PutUint64(ctr[:], n)
	for i := range ctr {
		nonce[4+i] ^= ctr[i]
	}
	return nonce
}

func chunkAD(hdr []byte, n uint64, final bool) []byte {
	ad := binary.BigEndian.AppendUint64(append([]byte{}, hdr...), n)
	if final {
		return append(ad, 1)
	}
	return append(ad, 0)
}

func (s *sealWriter) Write(p []byte) (int, error) {
	done := 0
	for len(p) > 0 {
		k := min(len(p), streamChunk-len(s.buf))
		s.buf = append(s.buf, p[:k]...)
		p, done = p[k:], done+k
		// A full chunk is sealed only once more follows, so that the final
		// chunk is never empty unless the whole plaintext is.
		if len(s.buf) == streamChunk && len(p) > 0 {
			if err := s.seal(false); err != nil {
				return done, err
			}
		}
	}
	return done, nil
}

func (s *sealWriter) seal(final bool) error {
	ct := s.aead.Seal(nil, chunkNonce(s.hdr, s.n), s.buf, chunkAD(s.hdr, s.n, final))
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(ct)))
	if _, err := s.w.Write(l[:]); err != nil {
		return err
	}
	if _, err := s.w.Write(ct); err != nil {
		return err
	}
	s.n++
	s.buf = s.buf[:0]
	return nil
}

// Close seals the final chunk.
func (s *sealWriter) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.seal(true)
}

// openReader decrypts a format 2 archive as it is read, telling a
// truncated archive from a damaged one.
type openReader struct {
	r    *bufio.Reader
	aead cipher.AEAD
	hdr  []byte
	n    uint64
	buf  []byte
	done bool
}

// newOpenReader reads the header of an archive of format 2 from r (whose
// magic, version and key id readHeader has checked).
func newOpenReader(r *bufio.Reader, key, hdr []byte) (*openReader, error) {
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	return &openReader{r: r, aead: aead, hdr: hdr}, nil
}

func truncated() error {
	return task.FieldErrorf(task.CodeInvalidArgument, "archive", "is truncated: it ends before its final chunk")
}

func damaged() error {
	return task.FieldErrorf(task.CodeInvalidArgument, "archive", "is damaged: it does not authenticate under the key")
}

func (o *openReader) Read(p []byte) (int, error) {
	for len(o.buf) == 0 {
		if o.done {
			return 0, io.EOF
		}
		if err := o.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, o.buf)
	o.buf = o.buf[n:]
	return n, nil
}

// next opens the next chunk.
func (o *openReader) next() error {
	var l [4]byte
	if _, err := io.ReadFull(o.r, l[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return truncated()
		}
		return err
	}
	size := binary.BigEndian.Uint32(l[:])
	if size < uint32(o.aead.Overhead()) || size > uint32(streamChunk+o.aead.Overhead()) {
		return damaged()
	}
	ct := make([]byte, size)
	if _, err := io.ReadFull(o.r, ct); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return truncated()
		}
		return err
	}
	nonce := chunkNonce(o.hdr, o.n)
	plain, err := o.aead.Open(nil, nonce, ct, chunkAD(o.hdr, o.n, false))
	if err != nil {
		if plain, err = o.aead.Open(nil, nonce, ct, chunkAD(o.hdr, o.n, true)); err != nil {
			return damaged()
		}
		o.done = true
		if _, err := o.r.ReadByte(); err != io.EOF {
			return task.FieldErrorf(task.CodeInvalidArgument, "archive", "is damaged: bytes follow its final chunk")
		}
	}
	o.n++
	o.buf = plain
	return nil
}
