package main

import (
	"debug/elf"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestBinaryIsStatic: the binary every CLI test runs, built with
// CGO_ENABLED=0 as the README says, is a static executable (no program
// interpreter, no shared library needed) and runs.
func TestBinaryIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("checks an ELF binary")
	}
	bin := buildErrand(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary names a program interpreter: it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Fatalf("the binary needs shared libraries %v (%v)", libs, err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "errand ") {
		t.Fatalf("errand version: %v %q", err, out)
	}
}
