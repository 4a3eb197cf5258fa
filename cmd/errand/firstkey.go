package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/store"
)

// firstKey makes serve's first admin key on a store without any key. The
// secret never goes into the log stream (log pipelines keep lines
// forever): on a terminal it is printed alone on stderr; otherwise it is
// written to an owner-only file, and the log names the file and the key's
// id only.
type firstKey struct {
	org    string
	log    *slog.Logger
	stderr io.Writer
	file   string
}

// defaultKeyFile is where the first key goes without --first-key-file:
// beside the SQLite file, or in the working directory for PostgreSQL.
func defaultKeyFile(storeURL string) string {
	if p, ok := strings.CutPrefix(storeURL, "sqlite://"); ok && p != "" {
		return filepath.Join(filepath.Dir(p), "errand-admin-key")
	}
	return "errand-admin-key"
}

// make makes the key with the full grant on every instance of org when the
// store holds no key at all (revoked ones count). Two nodes starting at
// once on one empty shared store may each make one; both are valid.
func (f firstKey) make(ctx context.Context, st store.KeyStore) error {
	n, err := st.KeyCount(ctx)
	if err != nil {
		return fmt.Errorf("counting API keys: %w", err)
	}
	if n > 0 {
		return nil
	}
	secret, k, err := auth.NewKey(f.org, []store.Grant{{Instance: "*", Role: "full"}}, time.Now())
	if err != nil {
		return err
	}
	if !isTerminal(f.stderr) {
		// Written before the key is stored: a file that cannot be written
		// leaves no key nobody has.
		if err := writeOwnerOnly(f.file, secret+"\n"); errors.Is(err, fs.ErrExist) {
			// Another store's first key, perhaps (a second SQLite file in
			// the same directory): never overwritten.
			return fmt.Errorf("writing the first admin key: %s exists, maybe another store's first key (or one a crash left between writing and storing it): move it, or give --first-key-file another path", f.file)
		} else if err != nil {
			return fmt.Errorf("writing the first admin key: %w (give --first-key-file a writable path)", err)
		}
	}
	if err := st.KeyCreate(ctx, k); err != nil {
		if !isTerminal(f.stderr) {
			_ = os.Remove(f.file) // a key never stored: the next start writes its own
		}
		return fmt.Errorf("storing the first admin key: %w", err)
	}
	if !isTerminal(f.stderr) {
		abs, _ := filepath.Abs(f.file)
		f.log.Warn("the store had no API key: made a first admin key with the full grant on every instance and wrote it "+
			"to an owner-only file; keep it elsewhere and delete the file (errand keys create makes more, errand keys revoke ends one)",
			"org", f.org, "id", k.ID, "grant", "full:*", "file", abs)
		return nil
	}
	fmt.Fprintf(f.stderr, "\nThe store had no API key: this first admin key (org %s, id %s, grant full:*) is shown this once.\n"+
		"Keep it now; errand keys create makes more, errand keys revoke ends one.\n\n    %s\n\n", f.org, k.ID, secret)
	return nil
}

// writeOwnerOnly writes s to a new file at path, readable by its owner
// only (mode 0600); a file already there is left alone (fs.ErrExist).
func writeOwnerOnly(path, s string) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := fh.Chmod(0o600); err != nil {
		fh.Close()
		return err
	}
	if _, err := fh.WriteString(s); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
