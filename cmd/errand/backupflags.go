package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/errandhq/errand/internal/engine"
)

// opsFlags are the operations API's flags of `errand serve` and `errand dev`.
type opsFlags struct {
	backupDir     *string
	backupKeyFile *string
	retentionDays *int
}

func addOpsFlags(fs *pflag.FlagSet, dev bool) *opsFlags {
	dirHelp := "directory instance backups (POST /api/instances/{id}/backup) are written to, with --backup-key-file; without both they are off"
	keyHelp := "`FILE` holding the 32-byte AES-256 key of instance backups: 64 hex digits, base64, or 32 raw bytes"
	if dev {
		dirHelp = "directory instance backups (POST /api/instances/{id}/backup) are written to (default DATA/backups)"
		keyHelp += " (default DATA/backup.key, made on first use)"
	}
	return &opsFlags{
		backupDir:     fs.String("backup-dir", "", dirHelp),
		backupKeyFile: fs.String("backup-key-file", "", keyHelp),
		retentionDays: fs.Int("ops-retention-days", 30, "days finished operations jobs are kept"),
	}
}

// check refuses, as usage errors, a retention under a day and (serve) one
// half of the backup settings without the other: backups would be off,
// and the first backup refused.
func (f *opsFlags) check(dev bool) error {
	if *f.retentionDays < 1 {
		return usageErrorf("--ops-retention-days %d: must be at least 1", *f.retentionDays)
	}
	if !dev && (*f.backupDir == "") != (*f.backupKeyFile == "") {
		return usageErrorf("--backup-dir and --backup-key-file go together: give both to turn instance backups on, or neither")
	}
	return nil
}

// config reads the key file. In dev, missing values default to
// DATA/backups and DATA/backup.key, the key made on first use.
func (f *opsFlags) config(devData string) (engine.OpsConfig, error) {
	c := engine.OpsConfig{BackupDir: *f.backupDir, RetentionDays: *f.retentionDays}
	keyFile := *f.backupKeyFile
	if devData != "" {
		if c.BackupDir == "" {
			c.BackupDir = filepath.Join(devData, "backups")
		}
		if keyFile == "" {
			keyFile = filepath.Join(devData, "backup.key")
			if err := makeKeyFile(keyFile); err != nil {
				return c, err
			}
		}
	}
	if keyFile == "" {
		return c, nil
	}
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		return c, fmt.Errorf("--backup-key-file: %w", err)
	}
	if c.BackupKey, err = parseBackupKey(raw); err != nil {
		return c, fmt.Errorf("--backup-key-file %s: %w", keyFile, err)
	}
	if c.BackupDir != "" {
		if err := os.MkdirAll(c.BackupDir, 0o700); err != nil {
			return c, fmt.Errorf("--backup-dir: %w", err)
		}
	}
	return c, nil
}

// parseBackupKey reads 64 hex digits, base64 of 32 bytes, or 32 raw bytes.
func parseBackupKey(raw []byte) ([]byte, error) {
	s := strings.TrimSpace(string(raw))
	if k, err := hex.DecodeString(s); err == nil && len(k) == engine.BackupKeySize {
		return k, nil
	}
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == engine.BackupKeySize {
		return k, nil
	}
	if len(raw) == engine.BackupKeySize {
		return raw, nil
	}
	return nil, errors.New("must hold 32 bytes: 64 hex digits, base64, or the raw bytes")
}

// makeKeyFile writes a fresh hex key to path unless it exists.
func makeKeyFile(path string) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	k := make([]byte, engine.BackupKeySize)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(hex.EncodeToString(k)+"\n"), 0o600)
}
