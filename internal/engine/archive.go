package engine

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/errandhq/errand/internal/task"
)

// Format 1 of an instance backup archive (still read; errand writes format
// 2, see archive_stream.go) is one AES-256-GCM sealed JSON document behind
// a clear header:
//
//	"ERRANDBK" version(1) keyID(8) nonce(12) length(8, big-endian) ciphertext
//
// The header is the GCM additional data, so a changed byte anywhere fails
// to open. keyID (a hash of the key, not the key) lets a wrong key be told
// apart from a damaged archive, and length a truncated one. AES-GCM from
// the standard library rather than age: no new dependency, and the key is
// a 32-byte secret the operator already keeps, not an identity file.
const (
	archiveMagic   = "ERRANDBK"
	archiveVersion = 1
	archiveHeader  = len(archiveMagic) + 1 + 8 + 12 + 8
	// BackupKeySize is the size of an instance backup key: AES-256.
	BackupKeySize = 32
)

// keyID names a key without revealing it.
func keyID(key []byte) []byte {
	sum := sha256.Sum256(append([]byte("errand-backup-key-id\x00"), key...))
	return sum[:8]
}

func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) != BackupKeySize {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "key", "must be %d bytes (AES-256), not %d", BackupKeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// openArchive decrypts an archive, telling a wrong key, a truncated file
// and a damaged one apart.
func openArchive(key, archive []byte) ([]byte, error) {
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(archive) < archiveHeader || !bytes.HasPrefix(archive, []byte(archiveMagic)) {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "archive", "is not an errand instance backup, or is truncated before its header ends (%d bytes)", len(archive))
	}
	h := archive[len(archiveMagic):]
	if h[0] != archiveVersion {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "archive", "has format version %d; this errand reads %d", h[0], archiveVersion)
	}
	if !bytes.Equal(h[1:9], keyID(key)) {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "key", "is not the key this archive was made with")
	}
	nonce := h[9:21]
	n := binary.BigEndian.Uint64(h[21:29])
	body := archive[archiveHeader:]
	if uint64(len(body)) != n {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "archive", "is truncated or padded: %d bytes of ciphertext, the header says %d", len(body), n)
	}
	plain, err := aead.Open(nil, nonce, body, archive[:archiveHeader])
	if err != nil {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "archive", "is damaged: it does not authenticate under the key")
	}
	return plain, nil
}

// readArchiveHeader reads and checks the clear start of an archive — its
// magic, format version and key id — and returns those bytes (with the
// nonce prefix for format 2) and the version.
func readArchiveHeader(r io.Reader, key []byte) ([]byte, byte, error) {
	hdr := make([]byte, streamHeader)
	if n, err := io.ReadFull(r, hdr); err != nil || !bytes.HasPrefix(hdr, []byte(archiveMagic)) {
		return nil, 0, task.FieldErrorf(task.CodeInvalidArgument, "archive", "is not an errand instance backup, or is truncated before its header ends (%d bytes)", n)
	}
	v := hdr[len(archiveMagic)]
	if v != archiveVersion && v != archiveStreamVersion {
		return nil, 0, task.FieldErrorf(task.CodeInvalidArgument, "archive", "has format version %d; this errand reads %d and %d", v, archiveVersion, archiveStreamVersion)
	}
	if !bytes.Equal(hdr[len(archiveMagic)+1:len(archiveMagic)+9], keyID(key)) {
		return nil, 0, task.FieldErrorf(task.CodeInvalidArgument, "key", "is not the key this archive was made with")
	}
	return hdr, v, nil
}

// writeFileAtomic writes what fill writes to path so that path holds
// either nothing new or all of it, never a part: a temp file beside it,
// fsync, rename, then fsync of the directory. A failed write removes its
// temp file; a temp file left by a crash is removed by the next write to
// the same path.
func writeFileAtomic(path string, fill func(w io.Writer) error) (err error) {
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err = fill(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("placing the archive: %w", err)
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
