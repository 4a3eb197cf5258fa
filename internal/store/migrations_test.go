package store

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestMigrationsWithGap checks that a number handed out but not landed yet
// leaves a gap that loads, and that the number landing later is applied on
// a database that already has the higher one.
func TestMigrationsWithGap(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0001_init.sql":  {Data: []byte("1")},
		"m/0002_more.sql":  {Data: []byte("2")},
		"m/0004_later.sql": {Data: []byte("4")},
	}
	ms, err := LoadMigrations(fsys, "m")
	if err != nil || len(ms) != 3 || ms[2].Version != 4 {
		t.Fatalf("LoadMigrations = %+v, %v", ms, err)
	}
	m, err := Pending(ms, map[int]bool{1: true, 2: true})
	if err != nil || m == nil || m.Version != 4 {
		t.Fatalf("Pending after 2 = %+v, %v; want 4", m, err)
	}
	// 0003 lands after a database took 0004: it is applied, and nothing else.
	fsys["m/0003_landed.sql"] = &fstest.MapFile{Data: []byte("3")}
	ms, _ = LoadMigrations(fsys, "m")
	m, err = Pending(ms, map[int]bool{1: true, 2: true, 4: true})
	if err != nil || m == nil || m.Version != 3 {
		t.Fatalf("Pending with 4 applied = %+v, %v; want 3", m, err)
	}
	if m, err := Pending(ms, map[int]bool{1: true, 2: true, 3: true, 4: true}); m != nil || err != nil {
		t.Fatalf("Pending when up to date = %+v, %v", m, err)
	}
	if _, err := Pending(ms, map[int]bool{5: true}); err == nil || !strings.Contains(err.Error(), "newer than this errand") {
		t.Fatalf("Pending of a newer database = %v", err)
	}
	fsys["m/0003_twice.sql"] = &fstest.MapFile{Data: []byte("3")}
	if _, err := LoadMigrations(fsys, "m"); err == nil {
		t.Fatal("LoadMigrations took two migrations numbered 3")
	}
}
