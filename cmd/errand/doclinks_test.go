package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks: every relative link of the project's Markdown files names
// a file inside the repository, and every #fragment a heading of the file
// it points into (GitHub's anchors): the docs stand on their own.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files under %s; the test wants the repository's", len(files), root)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(p string) map[string]bool {
		if a, ok := anchors[p]; ok {
			return a
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]bool{}
		for _, m := range mdHeading.FindAllStringSubmatch(string(b), -1) {
			a[headingAnchor(m[1])] = true
		}
		anchors[p] = a
		return a
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
			}
			if in, err := filepath.Rel(root, target); err != nil || in == ".." || strings.HasPrefix(in, ".."+string(filepath.Separator)) {
				t.Errorf("%s: link %q points outside the repository", rel, link)
				continue
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %q: no such file", rel, link)
				continue
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[frag] {
				t.Errorf("%s: link %q: no heading with that anchor", rel, link)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the test reads nothing")
	}
}

var (
	// mdLink is a Markdown link's or image's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// mdHeading is an ATX heading's text.
	mdHeading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*$`)
)

// headingAnchor is the anchor GitHub gives a heading: lower case, letters,
// digits, '_' and '-' kept, spaces made '-', everything else dropped.
func headingAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
