package store

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered schema change of a backend.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads a backend's embedded migrations from dir of fsys in
// version order. Their file names are NNNN_what.sql, numbered from 1, each
// number once. A gap is allowed: numbers are handed to changes made side by
// side before any of them lands, and Pending applies a number that lands
// later than a higher one.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	files, err := fs.Glob(fsys, dir+"/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, f := range files {
		base := path.Base(f)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_what.sql", base)
		}
		body, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migration %s: version %d is also %s", ms[i].Name, ms[i].Version, ms[i-1].Name)
		}
	}
	return ms, nil
}

// Pending returns the first of ms (in version order) whose version is not
// in applied, or nil when every one is. A database that recorded a version
// newer than the newest of ms was written by a newer errand: NewerSchemaError.
func Pending(ms []Migration, applied map[int]bool) (*Migration, error) {
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].Version
	}
	for v := range applied {
		if v > latest {
			return nil, NewerSchemaError(v, latest)
		}
	}
	for i := range ms {
		if !applied[ms[i].Version] {
			return &ms[i], nil
		}
	}
	return nil, nil
}

// NewerSchemaError is the refusal of a store written by a newer errand.
func NewerSchemaError(current, latest int) error {
	return fmt.Errorf("store schema version %d is newer than this errand (%d); upgrade errand", current, latest)
}

// MigrationLog reports the migrations a store applies as it opens. A store
// made from nothing (its first migration applied now) says so in one line
// once it is done, each migration at debug: a new `errand dev` prints no
// list of every schema change the project ever made. A store upgraded
// logs each migration it gets, at info.
type MigrationLog struct {
	Log   *slog.Logger
	Attrs []any // added to each line (PostgreSQL: its schema)
	first *Migration
}

// Applied records m, just committed.
func (l *MigrationLog) Applied(m *Migration) {
	if l.first == nil {
		l.first = m
	}
	level := slog.LevelInfo
	if l.first.Version == 1 {
		level = slog.LevelDebug
	}
	l.Log.Log(context.Background(), level, "store migrated", append([]any{"version", m.Version, "migration", m.Name}, l.Attrs...)...)
}

// Done ends the migrations, every one of ms applied: a store made from
// nothing says so, with its schema's version. (Nodes starting together on
// one empty PostgreSQL database take turns at the migrations: the one that
// applied the first says the store was created.)
func (l *MigrationLog) Done(ms []Migration) {
	if l.first != nil && l.first.Version == 1 {
		l.Log.Info("store created", append([]any{"version", ms[len(ms)-1].Version}, l.Attrs...)...)
	}
}
